import Foundation
import NottyCore
import NottyStore
import NottyTestSupport
import Testing

@Suite(
    "The notification center in a real terminal (tmux)", .timeLimit(.minutes(5)), .serialized,
    .enabled(
        if: TmuxSession.available || TmuxSession.required, "SKIPPED LOUDLY: tmux is not installed (apt-get install -y tmux); .ci/run installs it"))
struct TerminalCenterTests {
    @Test("B's open notty shows A's dismiss and read with no key press (within 1 s: notty-bench tui); B's keys reach A; resize; q exits 0")
    func liveAcrossDevices() async throws {
        let world = try await TwoDevices()
        let first = try await world.publish("Build #4812 failed on main", body: "3 tests failed")
        let second = try await world.publish("Disk usage 91% on db-primary")
        let third = try await world.publish("デプロイ完了 ✅ web v2.31.0")
        let fourth = try await world.publish("Standup in 15 minutes")
        #expect(try await world.a.run(["sync"]).status == 0)
        let b = try TmuxSession(command: Repository.nottyBinary.path, environment: ["NOTTY_HOME": world.b.home.path])
        #expect(await b.waitFor("Unread 4"), "B's notty did not open:\n\(b.shown)")
        #expect(await b.waitFor("· live"), "B never went live:\n\(b.shown)")
        #expect(await b.screen().contains("デプロイ完了 ✅ web v2.31.0"))

        // A acts from the command line; B's screen follows by itself.
        let dismissed = try await world.a.run(["dismiss", first])
        #expect(dismissed.status == 0)
        let start = ContinuousClock.now
        // A's stderr says "queued: …" when the change did not reach the service at once.
        #expect(await b.waitFor("Dismissed 1", timeout: .seconds(10)), "B's screen did not show the dismiss (A said: \(dismissed.err)):\n\(b.shown)")
        report("A dismiss → B's screen: \(ContinuousClock.now - start)")
        #expect(await !b.screen().contains("Build #4812"))
        #expect(try await world.a.run(["read", second]).status == 0)
        #expect(await b.waitFor("Read 1", timeout: .seconds(10)), "B's screen did not show the read:\n\(b.shown)")

        // Keys on B: the selection is on the newest unread (fourth): d dismisses it; then r
        // marks the next (third) read; u undoes that; a activates third; x y deletes the last.
        try await b.keys("g")
        try await b.keys("d")
        #expect(await b.waitFor("Dismissed 2"))
        try await b.keys("r")
        #expect(await b.waitFor("Read 2"))
        try await b.keys("u")
        #expect(await b.waitFor("Read 1"))
        try await b.keys("a")
        #expect(await b.waitFor("Activated 1"))
        try await b.keys("6")
        #expect(await b.waitFor("All 4"))
        try await b.keys("G", "x")
        #expect(await b.waitFor("y/n"), "no delete confirmation:\n\(b.shown)")
        try await b.keys("y")
        #expect(await b.waitFor("All 3"))
        #expect(
            await eventually(timeout: .seconds(5)) { (try? (await world.store(world.b).perform { try $0.outboxCount() })) == 0 },
            "B's changes were not sent")

        #expect(try await world.a.run(["sync"]).status == 0)
        #expect(try await world.a.run(["show", fourth, "--json"]).out.contains(#""userActionState":"Dismissed""#))
        let thirdState = try await world.a.run(["show", third, "--json"]).out
        #expect(thirdState.contains(#""userActionState":"Activated""#) && thirdState.contains(#""readState":"Read""#))
        #expect(try await world.a.run(["list", "--view", "all", "--json"]).out.split(separator: "\n").count == 3, "the delete reached A")

        // Resize down to 40×10, below it, and back.
        try await b.resize(columns: 40, rows: 10)
        #expect(await b.waitFor("All 3"), "40×10 screen (short tab names, \"Unr 1│…│All 3\", still fit):\n\(b.shown)")
        try await b.resize(columns: 30, rows: 8)
        #expect(await b.waitFor("too small"), "no 'too small' at 30×8:\n\(b.shown)")
        try await b.resize(columns: 100, rows: 30)
        #expect(await b.waitFor("Activated 1"))

        try await b.keys("q")
        #expect(await b.waitFor("[exited 0]"), "q did not exit 0:\n\(b.shown)")
        #expect(await !b.screen().contains("Unread"), "the terminal was not restored (alternate screen left on):\n\(b.shown)")
    }

    @Test(
        "= folds B's list into group rows (a group of one stays its notification); d on a group row dismisses exactly that group, on A too; u brings it back; Enter opens a group, Esc goes back"
    )
    func groupRows() async throws {
        let world = try await TwoDevices()
        var cpu: [String] = []
        for n in 1...3 { cpu.append(try await world.publish("CPU at 9\(n)% on web-0\(n)", extra: ["--group", "HighCPU"])) }
        let disk = try await world.publish("Disk usage 91% on db-primary", extra: ["--group", "DiskFull"])
        let b = try TmuxSession(command: Repository.nottyBinary.path, environment: ["NOTTY_HOME": world.b.home.path])
        #expect(await b.waitFor("Unread 4"), "B's notty did not open:\n\(b.shown)")
        #expect(await b.waitFor("· live"), "B never went live:\n\(b.shown)")
        try await b.keys("=")
        #expect(await b.waitFor("3 notifications, 3 unread"), "no group rows:\n\(b.shown)")
        let folded = await b.screen()
        // HighCPU is a group row with its newest title; DiskFull, a group of one, is its notification.
        #expect(folded.contains("HighCPU") && folded.contains("3 notifications, 3 unread · CPU at 93% on web-03"), "\(folded)")
        #expect(folded.contains("Disk usage 91% on db-primary") && !folded.contains("1 notification"), "\(folded)")
        #expect(!folded.contains("CPU at 91%"), "the rows are folded")

        // The newest group (DiskFull) is first: j moves to HighCPU; d dismisses all three.
        try await b.keys("j", "d")
        #expect(await b.waitFor("Dismissed 3 notifications"), "d on the group row:\n\(b.shown)")
        #expect(await b.waitFor("Unread 1"))
        #expect(
            await eventually(timeout: .seconds(10)) { (try? (await world.store(world.b).perform { try $0.outboxCount() })) == 0 },
            "B's changes were not sent")
        #expect(try await world.a.run(["sync"]).status == 0)
        for id in cpu { #expect(try await world.a.run(["show", id, "--json"]).out.contains(#""userActionState":"Dismissed""#)) }
        #expect(try await world.a.run(["show", disk, "--json"]).out.contains(#""userActionState":"NoInteraction""#), "only that group")

        try await b.keys("u")
        #expect(await b.waitFor("Undid dismiss of 3 notifications"), "u:\n\(b.shown)")
        #expect(await b.waitFor("Unread 4"))
        #expect(
            await eventually(timeout: .seconds(10)) { (try? (await world.store(world.b).perform { try $0.outboxCount() })) == 0 },
            "B's undo was not sent")
        #expect(try await world.a.run(["sync"]).status == 0)
        for id in cpu { #expect(try await world.a.run(["show", id, "--json"]).out.contains(#""userActionState":"NoInteraction""#)) }

        // Enter opens the selected group; Esc goes back to the group rows.
        try await b.keys("g", "j", "Enter")
        #expect(await b.waitFor("Group HighCPU · 3 notifications"), "Enter on a group row:\n\(b.shown)")
        #expect(await b.screen().contains("CPU at 91% on web-01"))
        try await b.keys("Escape")
        #expect(await b.waitFor("3 notifications, 3 unread"), "Esc back to the groups:\n\(b.shown)")
        try await b.keys("q")
        #expect(await b.waitFor("[exited 0]"), "q did not exit 0:\n\(b.shown)")
    }

    @Test(
        "searching a store of 1,500: the index is built in the background; many matches show at once and are counted after, few are counted at once")
    func search() async throws {
        let world = try await TwoDevices()
        _ = try await world.publish("Standup in 15 minutes")
        #expect(try await world.b.run(["sync"]).status == 0)
        // Rows the service does not have, straight into B's store (the TUI reads the store).
        let store = try world.store(world.b)
        let cursor = try #require(try (await store.perform { try $0.cursor() }))
        let now = Date()
        let rows = (0..<1500).map { n in
            UserNotification.fixture(
                id: UUID().uuidString.lowercased(), appNotificationId: "bulk-\(n)", title: n % 500 == 7 ? "needle \(n) deploy" : "deploy \(n) of web",
                created: now.addingTimeInterval(-Double(n)), modified: now, expires: now.addingTimeInterval(86_400))
        }
        #expect(
            try (await store.perform { try $0.apply(page: ChangesPage(changes: rows, cursor: cursor, hasMore: false), since: cursor) })
                == .applied(changed: 1500))
        // The first sync's one row was indexed with it; a page of many new rows is left to the center.
        #expect(try (await store.perform { try $0.rowsToIndexForSearch() }) == 1500)

        let b = try TmuxSession(command: Repository.nottyBinary.path, environment: ["NOTTY_HOME": world.b.home.path])
        #expect(await b.waitFor("Unread 1501"), "B's notty did not open:\n\(b.shown)")
        #expect(
            await eventually(timeout: .seconds(10)) { (try? (await store.perform { try $0.rowsToIndexForSearch() })) == 0 },
            "the open notty did not index the store")
        try await b.keys("/", "deploy")
        try await b.keys("Enter")
        #expect(await b.waitFor("1500 matches"), "the many matches were never counted:\n\(b.shown)")
        #expect(await b.screen().contains("deploy 0 of web"))
        try await b.keys("G")
        #expect(await b.waitFor("deploy 1499 of web"), "G did not reach the last match:\n\(b.shown)")
        try await b.keys("Escape")
        try await b.keys("/", "NEEDLE")
        try await b.keys("Enter")
        #expect(await b.waitFor("3 matches"), "the few matches:\n\(b.shown)")
        let found = await b.screen()
        #expect(found.contains("needle 1007 deploy") && !found.contains("Standup"))
        try await b.keys("q")
        #expect(await b.waitFor("[exited 0]"), "q did not exit 0:\n\(b.shown)")
    }

    @Test("notty demo starts on a fresh NOTTY_HOME and shows live notifications; SIGTERM restores the terminal")
    func demo() async throws {
        let home = Repository.temporaryDirectory("notty-demo-home")
        defer { try? FileManager.default.removeItem(at: home) }
        let session = try TmuxSession(
            command: "\(Repository.nottyBinary.path) demo --data \(home.path)/demo --every 2",
            environment: ["NOTTY_HOME": home.path, "XDG_RUNTIME_DIR": home.path])
        #expect(
            await session.waitFor("Build #4812 failed on main", timeout: .seconds(20)), "the demo did not show its notifications:\n\(session.shown)")
        #expect(await session.waitFor("· live"))
        #expect(await session.screen().contains("服务器告警 🔥"))
        // The tour: the team's notifications say so.
        #expect(await session.screen().contains("[ops] monitoring"), "no team notification in the demo:\n\(session.shown)")
        // The history leaves 7 unread; one arrives every 2 s (a loaded machine may show several at once).
        func unread() async -> Int { await session.screen().firstMatch(of: /Unread (\d+)/).flatMap { Int($0.1) } ?? 0 }
        #expect(await eventually(timeout: .seconds(10)) { await unread() >= 8 }, "no new notification arrived:\n\(session.shown)")
        let join = try TmuxSession(command: "\(Repository.nottyBinary.path) demo --join", environment: ["XDG_RUNTIME_DIR": home.path])
        #expect(await join.waitFor("Build #4812 failed on main", timeout: .seconds(20)), "demo --join did not show the notifications:\n\(join.shown)")
        try await join.keys("d")
        #expect(
            await session.waitFor("Dismissed 3", timeout: .seconds(10)), "a dismiss on the joined device did not reach the first:\n\(session.shown)")
        try await join.keys("q")
        // SIGTERM to the notty process itself (anchored: not the shell or tmux around it).
        _ = try await Repository.run(["pkill", "-TERM", "-f", "^\(Repository.nottyBinary.path) demo --data \(home.path)/demo"])
        #expect(await session.waitFor("[exited 0]"), "the demo did not exit 0 on SIGTERM:\n\(session.shown)")
    }

    @Test(
        "notty demo copied out of the build tree (notty and notty-server) runs with the source tree hidden (no path into it); its script equals Resources/"
    )
    func demoCopiedElsewhere() async throws {
        let resources = Repository.root.appendingPathComponent("Resources")
        let embedded = try String(contentsOf: Repository.root.appendingPathComponent("Sources/notty-server/DemoScriptText.swift"), encoding: .utf8)
        let json = try String(contentsOf: resources.appendingPathComponent("demo-notifications.json"), encoding: .utf8)
        #expect(
            embedded.contains("#\"\"\"\n" + json.trimmingCharacters(in: .newlines) + "\n\"\"\"#"),
            "Sources/notty-server/DemoScriptText.swift is not a copy of Resources/demo-notifications.json")
        let canHide = getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/unshare")
        try #require(canHide || !TmuxSession.required, "hiding the source tree needs root and unshare (CI runs as root)")
        guard canHide else { report("SKIPPED LOUDLY: hiding the source tree needs root and unshare"); return }
        let home = Repository.temporaryDirectory("notty-demo-copy")
        defer { try? FileManager.default.removeItem(at: home) }
        let bin = home.appendingPathComponent("bin"), empty = home.appendingPathComponent("empty")
        for folder in [bin, empty] { try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true) }
        // Copied by cp (not by this process, whose open files a process spawned meanwhile would
        // inherit: running the copy would then fail with ETXTBSY).
        #expect(try await Repository.run(["cp", Repository.nottyBinary.path, Repository.nottyServerBinary.path, bin.path]).status == 0)
        // In a mount namespace of its own, the checkout's Resources/ and Sources/ are empty folders.
        let hidden =
            "mount --bind \(empty.path) \(resources.path) && mount --bind \(empty.path) \(Repository.root.path)/Sources"
            + " && exec \(bin.path)/notty demo --data \(home.path)/demo --every 0"
        let session = try TmuxSession(
            command: "unshare --mount --propagation private sh -c '\(hidden)'",
            environment: ["NOTTY_HOME": home.path, "XDG_RUNTIME_DIR": home.path])
        #expect(await session.waitFor("Build #4812 failed on main", timeout: .seconds(20)), "the copied demo did not start:\n\(session.shown)")
        try await session.keys("q")
        #expect(await session.waitFor("[exited 0]"), "\(session.shown)")
    }
}
