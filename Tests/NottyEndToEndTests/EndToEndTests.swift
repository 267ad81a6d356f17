import Foundation
import GRDB
import NottyCore
import NottyPOSIX
import NottyStore
import NottySync
import NottyTestSupport
import Testing

/// A real `notty serve` and two devices (two `NOTTY_HOME`s) driven through the real `notty`;
/// A publishes and subscribes through `service`, B may be signed in to another instance.
final class TwoDevices: @unchecked Sendable {
    let directory: URL
    let service: ServeProcess
    let serviceB: ServeProcess
    let a: NottyCLI
    let b: NottyCLI
    let uns: String

    convenience init(serveArguments: [String] = []) async throws {
        let directory = Repository.temporaryDirectory("notty-e2e")
        let service = try await ServeProcess(directory: directory, extraArguments: serveArguments)
        try await self.init(directory: directory, a: service, b: service)
    }

    /// Device A signed in to `serviceA`, device B to `serviceB`; both are stopped with this.
    init(directory: URL, a serviceA: ServeProcess, b serviceB: ServeProcess) async throws {
        self.directory = directory
        service = serviceA
        self.serviceB = serviceB
        a = NottyCLI(home: directory.appendingPathComponent("a"))
        b = NottyCLI(home: directory.appendingPathComponent("b"))
        for (device, server, name) in [(a, serviceA, "A"), (b, serviceB, "B")] {
            try await device.login(server.url, device: name)
        }
        let subscribe = try await a.run(["subscribe", "--app", "ci.example.com"])
        guard subscribe.status == 0 else { throw SupportError("subscribe failed: \(subscribe.err)") }
        uns = subscribe.out.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Publishes through the real `notty publish`; returns the new id.
    func publish(_ title: String, body: String = "", extra: [String] = []) async throws -> String {
        let result = try await a.run(
            [
                "publish", "--server", service.url, "--client-id", service.clientId, "--client-secret=\(service.clientSecret)",
                "--uns-id", uns, "--title", title, "--body", body,
            ] + extra)
        guard result.status == 0 else { throw SupportError("publish failed: \(result.err)") }
        return result.out.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    func store(_ device: NottyCLI) throws -> LocalStore { try LocalStore(path: device.home.appendingPathComponent("store.sqlite").path) }

    deinit {
        service.stop()
        serviceB.stop()
        try? FileManager.default.removeItem(at: directory)
    }
}

@Suite("End to end: notty serve and two devices", .timeLimit(.minutes(5)), .serialized)
struct EndToEndTests {
    @Test(
        "links: notty publish --url reaches B's list --json and show; notty open runs $BROWSER with the link as one argument and activates it everywhere; no link: one line, nothing changed"
    )
    func links() async throws {
        let world = try await TwoDevices()
        // A shell would split this at & and ; and expand $HOME: the browser must get it whole.
        let url = "https://ci.example.com/acme/web/actions/runs/42?a=1&b=2;c=$HOME"
        let published = try await world.a.run([
            "publish", "--server", world.service.url, "--client-id", world.service.clientId, "--client-secret=\(world.service.clientSecret)",
            "--uns-id", world.uns, "--title", "Build failed", "--url", url,
        ])
        #expect(published.status == 0, "\(published.err)")
        let id = published.out.trimmingCharacters(in: .whitespacesAndNewlines)
        let plain = try await world.publish("No link here")
        #expect(try await world.b.run(["sync"]).status == 0)
        let listed = try await world.b.run(["list", "--json"]).out
        #expect(listed.contains(#""launchUrl":"https:\/\/ci.example.com"#) || listed.contains(#""launchUrl":"https://ci.example.com"#))
        #expect(try await world.b.run(["show", String(id.prefix(8))]).out.contains("link:        \(url)"))
        // $BROWSER: a script that writes each argument on its own line.
        let browser = world.directory.appendingPathComponent("browser.sh"), seen = world.directory.appendingPathComponent("seen.txt")
        try writeProgram("#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\" >> \(seen.path); done\n", to: browser)
        let opened = try await world.b.run(["open", String(id.prefix(8))], environment: ["BROWSER": browser.path])
        #expect(opened.status == 0, "\(opened.err)")
        #expect(
            await eventually(timeout: .seconds(10)) { (try? String(contentsOf: seen, encoding: .utf8)) == url + "\n" },
            "the browser did not get the link as one argument: \((try? String(contentsOf: seen, encoding: .utf8)) ?? "nothing"); notty open said: \(opened.err)"
        )
        #expect(try await world.a.run(["sync"]).status == 0)
        #expect(try (await world.store(world.a).perform { try $0.notification(id: id) })?.userActionState == .activated)
        let none = try await world.b.run(["open", plain], environment: ["BROWSER": browser.path])
        #expect(none.status == 1 && none.err.contains("has no link") && none.err.split(separator: "\n").count == 1)
        #expect(try (await world.store(world.b).perform { try $0.notification(id: plain) })?.userActionState == .noInteraction)
        let noBrowser = try await world.b.run(["open", String(id.prefix(8))], environment: ["BROWSER": "", "PATH": "/nonexistent"])
        #expect(noBrowser.status == 0 && noBrowser.err.contains("cannot open the link"), "\(noBrowser.err)")
    }

    @Test(
        "a slow --exec (sleep 30) does not hold up syncing: notifications published while it runs are in the store within seconds, and each gets its command"
    )
    func slowExecRunsBesideSyncing() async throws {
        let world = try await TwoDevices()
        let marker = world.directory.appendingPathComponent("exec.txt")
        let poll = try world.b.start(
            ["poll", "--live", "--exec", "echo \"$NOTTY_ID\" >> \(marker.path); sleep 30", "--exec-timeout", "40s"],
            log: world.directory.appendingPathComponent("poll.log"))
        defer { if poll.isRunning { poll.signal(SIGTERM) } }
        let storeB = try world.store(world.b)
        #expect(
            await eventually(timeout: .seconds(10)) {
                (try? String(contentsOf: world.directory.appendingPathComponent("poll.log"), encoding: .utf8))?.contains("connection: live") == true
            })
        let first = try await world.publish("First")
        #expect(try await eventually(timeout: .seconds(10)) { try (await storeB.perform { try $0.notification(id: first) }) != nil })
        #expect(
            await eventually(timeout: .seconds(10)) { ((try? String(contentsOf: marker, encoding: .utf8)) ?? "").contains(first) },
            "--exec did not start")
        // The first command sleeps 30 s; three more arrive meanwhile.
        var more: [String] = []
        for title in ["Second", "Third", "Fourth"] { more.append(try await world.publish(title)) }
        let start = ContinuousClock.now
        #expect(
            try await eventually(timeout: .seconds(10)) { try more.allSatisfy { try storeB.notification(id: $0) != nil } },
            "a sleeping --exec held up syncing")
        report("three notifications reached the store during a 30 s --exec in \(start.duration(to: .now))")
        // At most 4 commands at once: all four started (none waits for the first).
        #expect(
            await eventually(timeout: .seconds(10)) {
                let text = (try? String(contentsOf: marker, encoding: .utf8)) ?? ""; return more.allSatisfy { text.contains($0) }
            })
    }

    @Test("--on-change runs once per change of a known notification's state, on any device, with NOTTY_STATE; a new one is not a change")
    func onChange() async throws {
        let world = try await TwoDevices()
        let first = try await world.publish("Build failed")
        let second = try await world.publish("Disk 91% full")
        let third = try await world.publish("Deploy done")
        #expect(try await world.b.run(["sync"]).status == 0)
        let marker = world.directory.appendingPathComponent("changes.txt")
        let log = world.directory.appendingPathComponent("poll.log")
        let poll = try world.b.start(["poll", "--live", "--on-change", "echo \"$NOTTY_ID $NOTTY_STATE $NOTTY_TITLE\" >> \(marker.path)"], log: log)
        defer { if poll.isRunning { poll.signal(SIGTERM) } }
        #expect(await eventually(timeout: .seconds(10)) { ((try? String(contentsOf: log, encoding: .utf8)) ?? "").contains("connection: live") })
        func lines() -> [String] { ((try? String(contentsOf: marker, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init).sorted() }
        // Another device dismisses one and deletes one; this device reads one; one arrives.
        #expect(try await world.a.run(["sync"]).status == 0)
        #expect(try await world.a.run(["dismiss", first]).status == 0)
        #expect(try await world.a.run(["delete", second]).status == 0)
        #expect(try await world.b.run(["read", third]).status == 0)
        let fourth = try await world.publish("New one")
        let expected = ["\(first) dismissed Build failed", "\(second) deleted Disk 91% full", "\(third) read Deploy done"].sorted()
        #expect(
            await eventually(timeout: .seconds(5)) { lines() == expected }, "\(lines())\n\((try? String(contentsOf: log, encoding: .utf8)) ?? "")")
        #expect(try await eventually(timeout: .seconds(5)) { try (await world.store(world.b).perform { try $0.notification(id: fourth) }) != nil })
        // A barrier: one more change, whose command is started after any the new one ran.
        #expect(try await world.a.run(["sync"]).status == 0)
        #expect(try await world.a.run(["dismiss", fourth]).status == 0)
        let barrier = "\(fourth) dismissed New one"
        #expect(await eventually(timeout: .seconds(10)) { lines().contains(barrier) }, "\(lines())")
        #expect(lines() == (expected + [barrier]).sorted(), "a new notification or a repeat ran --on-change: \(lines())")
    }

    @Test("dismiss and read on A reach B after notty sync, and within 1 s with notty poll --live on B")
    func universalDismiss() async throws {
        let world = try await TwoDevices()
        let first = try await world.publish("Build failed", body: "main: 3 tests failed")
        let second = try await world.publish("Deploy finished")
        let third = try await world.publish("Disk 91% full")
        #expect(try await world.a.run(["sync"]).status == 0)
        #expect(try await world.b.run(["sync"]).status == 0)
        let dismiss = try await world.a.run(["dismiss", String(first.prefix(8))])
        #expect(dismiss.status == 0 && dismiss.out == "dismissed 1 notification(s)\n", "\(dismiss.err)")
        #expect(try await world.a.run(["read", second]).status == 0)
        #expect(try await world.b.run(["sync"]).status == 0)
        let dismissed = try await world.b.run(["list", "--view", "dismissed", "--json"])
        #expect(dismissed.out.contains(first) && !dismissed.out.contains(second))
        let read = try await world.b.run(["list", "--view", "read", "--json"]).out
        #expect(read.contains(second) && read.contains(#""readState":"Read""#))

        // B runs notty poll --live; A dismisses: B's store has it within 1 s, no sync asked for.
        let marker = world.directory.appendingPathComponent("exec.txt")
        let poll = try world.b.start(
            ["poll", "--live", "--exec", "echo \"$NOTTY_TITLE|$NOTTY_APP|$NOTTY_PRIORITY\" >> \(marker.path)"],
            log: world.directory.appendingPathComponent("poll.log"))
        defer { if poll.isRunning { poll.signal(SIGTERM) } }
        let bStore = try world.store(world.b)
        #expect(
            await eventually(timeout: .seconds(10)) {
                ((try? String(contentsOf: world.directory.appendingPathComponent("poll.log"), encoding: .utf8)) ?? "").contains("connection: live")
            })
        #expect(try await world.a.run(["dismiss", third]).status == 0)
        let start = ContinuousClock.now
        #expect(
            try await eventually(timeout: .seconds(10)) {
                try (await bStore.perform { try $0.notification(id: third) })?.userActionState == .dismissed
            },
            "B's store did not show A's dismiss within 1 s")
        report("dismiss on A → B's store (poll --live): \(ContinuousClock.now - start)")

        // A new notification: poll prints it as a JSON line and runs --exec with NOTTY_* set.
        let fourth = try await world.publish("服务器告警 🔥")
        #expect(
            await eventually(timeout: .seconds(5)) {
                ((try? String(contentsOf: marker, encoding: .utf8)) ?? "").contains("服务器告警 🔥|ci.example.com|High")
            })
        let log = try String(contentsOf: world.directory.appendingPathComponent("poll.log"), encoding: .utf8)
        let line = try #require(log.split(separator: "\n").first { $0.contains(fourth) })
        let object = try #require(JSONValue(jsonText: String(line)))
        guard case .object(let fields) = object else { Issue.record("not an object: \(line)"); return }
        #expect(fields["id"] == .string(fourth) && fields["readState"] == .string("Unread"))
        #expect(!log.contains(first), "what B already had when poll started is not announced")
        poll.signal(SIGTERM)
        #expect(await eventually(timeout: .seconds(5)) { !poll.isRunning })
        #expect(poll.termination?.code == 0, "SIGTERM stops notty poll cleanly")
    }

    @Test("config.toml: notty list's default view and notty poll's live and exec come from it; flags win; a broken file is one clear error")
    func settingsFile() async throws {
        let world = try await TwoDevices()
        let first = try await world.publish("Build failed")
        let second = try await world.publish("Deploy finished")
        #expect(try await world.a.run(["sync"]).status == 0)
        #expect(try await world.a.run(["dismiss", first]).status == 0)
        #expect(try await world.b.run(["sync"]).status == 0)
        let config = world.b.home.appendingPathComponent("config.toml")
        let marker = world.directory.appendingPathComponent("settings-exec.txt")
        try """
        view = "dismissed"
        [poll]
        live = true
        exec = 'echo "$NOTTY_TITLE" >> \(marker.path)'
        """.write(to: config, atomically: true, encoding: .utf8)
        let listed = try await world.b.run(["list", "--json"])
        #expect(listed.status == 0 && listed.out.contains(first) && !listed.out.contains(second), "\(listed.err)")
        #expect(try await world.b.run(["list", "--view", "unread", "--json"]).out.contains(second), "the flag wins over the file")

        // notty poll with no flags: live and --exec come from the file.
        let log = world.directory.appendingPathComponent("settings-poll.log")
        let poll = try world.b.start(["poll"], log: log)
        defer { if poll.isRunning { poll.signal(SIGTERM) } }
        #expect(await eventually(timeout: .seconds(10)) { ((try? String(contentsOf: log, encoding: .utf8)) ?? "").contains("connection: live") })
        _ = try await world.publish("Disk 91% full")
        #expect(await eventually(timeout: .seconds(5)) { ((try? String(contentsOf: marker, encoding: .utf8)) ?? "").contains("Disk 91% full") })
        poll.signal(SIGTERM)
        #expect(await eventually(timeout: .seconds(5)) { !poll.isRunning })
        // --once is a sync, whatever poll.live says; --no-live polls although the file says live.
        let once = try await world.b.run(["poll", "--once"])
        #expect(once.status == 0, "\(once.err)")
        let pollingLog = world.directory.appendingPathComponent("settings-polling.log")
        let polling = try world.b.start(["poll", "--no-live"], log: pollingLog)
        defer { if polling.isRunning { polling.signal(SIGTERM) } }
        #expect(
            await eventually(timeout: .seconds(10)) {
                ((try? String(contentsOf: pollingLog, encoding: .utf8)) ?? "").contains("connection: polling every")
            })
        #expect(!((try? String(contentsOf: pollingLog, encoding: .utf8)) ?? "").contains("connection: live"))
        polling.signal(SIGTERM)
        #expect(await eventually(timeout: .seconds(5)) { !polling.isRunning })

        // A file notty cannot use stops the command with one line that says where and what.
        try "view = \"inbox\"\n".write(to: config, atomically: true, encoding: .utf8)
        let wrong = try await world.b.run(["list"])
        #expect(wrong.status == 1 && wrong.err.contains("config.toml: view = \"inbox\" is not a view: use unread"), "\(wrong.err)")
        try "[poll\n".write(to: config, atomically: true, encoding: .utf8)
        let broken = try await world.b.run(["poll", "--once"])
        #expect(broken.status == 1 && broken.err.contains("config.toml: line 1"), "\(broken.err)")
        #expect(broken.err.split(separator: "\n").count == 1)
    }

    @Test("with the service stopped, A's commands succeed and queue; once it is back, B sees them")
    func offline() async throws {
        let world = try await TwoDevices()
        let first = try await world.publish("Backup finished")
        let second = try await world.publish("Certificate expires in 7 days")
        #expect(try await world.a.run(["sync"]).status == 0)
        await world.service.stop()
        let read = try await world.a.run(["read", first])
        #expect(read.status == 0 && read.err.contains("queued"), "\(read.err)")
        #expect(try await world.a.run(["dismiss", second]).status == 0)
        #expect(try await world.a.run(["list", "--view", "dismissed"]).out.contains(String(second.prefix(8))), "the store shows it at once, offline")
        let status = try await world.a.run(["status"])
        #expect(status.out.contains("outbox:     2") && status.out.contains("unreachable"), "\(status.out)")
        let failedSync = try await world.a.run(["sync"])
        #expect(failedSync.status == 1 && failedSync.err.contains("cannot reach"), "\(failedSync.err)")
        try await world.service.start()
        let sync = try await world.a.run(["sync"])
        #expect(sync.out.contains("sent 2"), "\(sync.out)\(sync.err)")
        #expect(try await world.b.run(["sync"]).status == 0)
        #expect(try await world.b.run(["list", "--view", "dismissed", "--json"]).out.contains(second))
        #expect(try await world.b.run(["show", first, "--json"]).out.contains(#""readState":"Read""#))
    }

    @Test("notty killed with SIGKILL while flushing a large outbox: after a restart every change reached the service exactly once")
    func killedMidFlush() async throws {
        let world = try await TwoDevices(serveArguments: ["--publish-rate", "100000", "--publish-burst", "100000"])
        let count = 1200
        try await publishMany(world, count: count, prefix: "bulk")
        #expect(try await world.a.run(["sync"]).status == 0)
        await world.service.stop()
        #expect(try await world.a.run(["dismiss", "--all", "--view", "unread"]).out == "dismissed \(count) notification(s)\n")
        #expect(try await world.a.run(["read", "--all", "--view", "dismissed"]).out == "read \(count) notification(s)\n")
        let aStore = try world.store(world.a)
        #expect(try (await aStore.perform { try $0.outboxCount() }) == 2 * count)
        try await world.service.start()

        // Kill `notty sync` part way through its flush: once the service has acknowledged a
        // batch (the outbox shrank), before its last. Should a run send everything before that
        // is seen (a loaded machine), as many changes are queued again (offline) and it is tried again.
        var queued = 2 * count
        var partial = false
        for round in 0..<5 where !partial {
            if round > 0, try (await aStore.perform { try $0.outboxCount() }) == 0 {
                await world.service.stop()
                for verb in ["unread", "read"] {  // the state as it was, in 2 × count changes
                    #expect(try await world.a.run([verb, "--all", "--view", "dismissed"]).out == "\(verb) \(count) notification(s)\n")
                }
                queued += 2 * count
                try await world.service.start()
            }
            let before = try (await aStore.perform { try $0.outboxCount() })
            let sync = try world.a.start(["sync"], log: world.directory.appendingPathComponent("sync.log"))
            _ = try await eventually(timeout: .seconds(60), every: .milliseconds(2)) {
                try (await aStore.perform { try $0.outboxCount() }) < before || !sync.isRunning
            }
            kill(sync.pid, SIGKILL)
            sync.wait()
            let left = try (await aStore.perform { try $0.outboxCount() })
            partial = left > 0 && left < before
        }
        #expect(partial, "notty sync was never killed part way through its flush")
        let finish = try await world.a.run(["sync"])
        #expect(
            finish.status == 0,
            "\(finish.err) \((try? String(contentsOf: world.directory.appendingPathComponent("sync.log"), encoding: .utf8)) ?? "")")
        #expect(try (await aStore.perform { try $0.outboxCount() }) == 0)

        // Exactly once: the service recorded each queued mutationId once and no more.
        let server = try DatabaseQueue(path: world.service.admin.home.appendingPathComponent("server.sqlite").path)
        let recorded = try await server.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM mutations") ?? 0 }
        #expect(recorded == queued, "the service applied \(recorded) changes, expected \(queued)")
        #expect(try await world.b.run(["sync"]).status == 0)
        let bStore = try world.store(world.b)
        #expect(try (await bStore.perform { try $0.count(view: .dismissed) }) == count)
        #expect(try (await bStore.perform { try $0.window(view: .dismissed, limit: count) }).allSatisfy { $0.readState == .read })
    }

    /// Publishes `count` notifications (`<prefix>-<n>`, titled "alert <n>") from 8 concurrent clients.
    func publishMany(_ world: TwoDevices, count: Int, prefix: String) async throws {
        let token = try await appToken(world)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in 0..<8 {
                group.addTask {
                    for n in stride(from: worker, to: count, by: 8) {
                        let answer = try await ServiceClient.send(
                            .POST, world.service.url + "/beta/me/notifications",
                            headers: [("Authorization", "Bearer \(token)"), ("X-UNS-ID", world.uns), ("Content-Type", "application/json")],
                            body: Data(#"{"appNotificationId":"\#(prefix)-\#(n)","payload":{"visualContent":{"title":"alert \#(n)"}}}"#.utf8))
                        guard answer.status == 201 else { throw SupportError("publish \(n): \(answer.status)") }
                    }
                }
            }
            try await group.waitForAll()
        }
    }

    @Test(
        "notty killed with SIGKILL during a first sync (its store's indexes put off until the end): the next sync completes the store and makes them")
    func killedMidFirstSync() async throws {
        let world = try await TwoDevices(serveArguments: ["--publish-rate", "100000", "--publish-burst", "100000"])
        let count = 7_000  // two pages of a first sync (5,000 and 2,000)
        try await publishMany(world, count: count, prefix: "first")
        let path = world.b.home.appendingPathComponent("store.sqlite").path
        let indexes = "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'notifications' ORDER BY name"
        let expected = try await DatabaseQueue(path: path).read { db in try String.fetchAll(db, sql: indexes) }
        #expect(expected.count >= 7)

        // Kill `notty sync` into an empty store as soon as its first page is in (at most 4 tries).
        func state() -> (rows: Int, deferred: Int) {
            (try? DatabaseQueue(path: path).read { db in
                (
                    try Int.fetchOne(db, sql: "SELECT count(*) FROM notifications") ?? 0,
                    try Int.fetchOne(db, sql: "SELECT count(*) FROM meta WHERE key LIKE 'deferred_index %'") ?? 0
                )
            }) ?? (0, 0)
        }
        var partial = false
        for _ in 0..<4 where !partial {
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
            let sync = try world.b.start(["sync"], log: world.directory.appendingPathComponent("first-sync.log"))
            _ = await eventually(timeout: .seconds(30), every: .milliseconds(5)) {
                !sync.isRunning || (FileManager.default.fileExists(atPath: path) && state().rows > 0)
            }
            kill(sync.pid, SIGKILL)
            sync.wait()
            let (rows, deferred) = state()
            report("first sync killed: \(rows) rows, \(deferred) indexes put off")
            partial = rows > 0 && rows < count && deferred > 0
        }
        #expect(partial, "notty sync was never caught between its first page and its indexes")
        let finish = try await world.b.run(["sync"])
        #expect(finish.status == 0, "\(finish.err)")
        let store = try world.store(world.b)
        #expect(try (await store.perform { try $0.count(view: .unread) }) == count)
        let (made, left) = try await DatabaseQueue(path: path).read { db in
            (try String.fetchAll(db, sql: indexes), try Int.fetchOne(db, sql: "SELECT count(*) FROM meta WHERE key LIKE 'deferred_index %'") ?? 0)
        }
        #expect(made == expected)
        #expect(left == 0)
        #expect(try Set((await store.perform { try $0.ids(view: .unread) })).count == count)
    }

    @Test("notty push: each form, and foreign or broken payloads leave the store byte-for-byte unchanged")
    func push() async throws {
        let world = try await TwoDevices()
        let id = try await world.publish("Payment received")
        let storePath = world.b.home.appendingPathComponent("store.sqlite").path
        func bytes() throws -> Data { try Data(contentsOf: URL(fileURLWithPath: storePath)) }
        let before = try bytes()
        let refused: [(String, Int32)] = [
            ("garbage", 3), ("", 3), ("[]", 3), (#"{"aps":{"alert":"x"}}"#, 3), (String(repeating: "{\"a\":", count: 500), 3),
            (#"{"notty":{"v":1,"server":"http://elsewhere.example.com","type":"changed","cursor":"1"}}"#, 4),
            (#"{"notty":{"v":1,"server":"\#(world.service.url)","user":"bob","type":"changed","cursor":"1"}}"#, 4),
        ]
        for (payload, status) in refused {
            let result = try await world.b.run(["push"], input: payload)
            #expect(result.status == status, "\(payload.prefix(60)) → \(result.status) \(result.err)")
            #expect(!result.err.isEmpty && !result.err.contains("Fatal"))
        }
        let huge = world.directory.appendingPathComponent("huge.json")
        try Data(repeating: UInt8(ascii: " "), count: 9 << 20).write(to: huge)
        #expect(try await world.b.run(["push", huge.path]).status == 3)
        #expect(try bytes() == before, "refused payloads changed the store")

        let own = #"{"notty":{"v":1,"server":"\#(world.service.url)","user":"alice","type":"changed","cursor":"1"}}"#
        let fcm = String(decoding: try JSONSerialization.data(withJSONObject: ["message": ["data": ["notty": own]]]), as: UTF8.self)
        #expect(try await world.b.run(["push"], input: fcm).status == 0)
        #expect(try await world.b.run(["show", id]).status == 0, "a push makes the device pull")
        for form in [
            own, #"{"type":"changed","cursor":"1"}"#, #"{"aps":{},"notty":{"v":1,"type":"changed","cursor":"1"}}"#,
            String(decoding: try JSONSerialization.data(withJSONObject: ["event": "message", "message": own]), as: UTF8.self),
        ] {
            #expect(try await world.b.run(["push"], input: form).status == 0, "\(form)")
        }
        await world.service.stop()
        let offline = try await world.b.run(["push"], input: #"{"type":"changed","cursor":"99"}"#)
        #expect(offline.status == 1 && offline.err.contains("next sync"), "\(offline.err)")
    }

    func appToken(_ world: TwoDevices) async throws -> String {
        try await token(
            world.service.url, ["grant_type": "client_credentials", "client_id": world.service.clientId, "client_secret": world.service.clientSecret])
    }
}

/// An access token from `server`'s token route for `form`. A `503` (its storage did not answer
/// in time, as a fresh PostgreSQL under a full run's load may not) is asked again for up to a
/// minute, as a client told to retry later would; any other refusal throws with what it said.
func token(_ server: String, _ form: [String: String]) async throws -> String {
    let deadline = ContinuousClock.now + .seconds(60)
    while true {
        let answer = try await ServiceClient.send(
            .POST, server + "/oauth2/v2.0/token", headers: [("Content-Type", "application/x-www-form-urlencoded")],
            body: Data(FormEncoding.encode(form).utf8))
        if answer.status == 503 && ContinuousClock.now < deadline {
            try await Task.sleep(for: .seconds(1))
            continue
        }
        guard answer.status == 200 else {
            throw SupportError("the token route answered \(answer.status): \(String(decoding: answer.body, as: UTF8.self))")
        }
        return try NottyJSON.decoder.decode(TokenResponse.self, from: answer.body).access_token
    }
}

extension NottyCLI {
    /// Every notification this device lists after a sync (none when the sync fails).
    func syncedNotifications() async throws -> [UserNotification] {
        guard try await run(["sync"]).status == 0 else { return [] }
        return try await run(["list", "--view", "all", "--json"]).out.split(separator: "\n")
            .map { try NottyJSON.decoder.decode(UserNotification.self, from: Data($0.utf8)) }
    }
}
