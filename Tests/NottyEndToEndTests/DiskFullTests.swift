import Foundation
import NottyCore
import NottyPOSIX
import NottyStore
import NottyTestSupport
import Testing

/// A small file system of the test's own (tmpfs), mounted on `path`; needs root.
struct SmallDisk {
    let path: URL
    let fill: URL

    static let required = ProcessInfo.processInfo.environment["CI"] == "true"

    init(at path: URL, megabytes: Int = 16) async throws {
        self.path = path
        fill = path.appendingPathComponent("fill")
        try FileManager.default.createDirectory(at: path, withIntermediateDirectories: true)
        let mount = try await Repository.run(["mount", "-t", "tmpfs", "-o", "size=\(megabytes)m", "tmpfs", path.path])
        guard mount.status == 0 else { throw SupportError("cannot mount a tmpfs (run as root): \(mount.output)") }
    }

    /// Fills the file system to its last byte.
    func fillUp() async throws {
        _ = try await Repository.run(["sh", "-c", "cat /dev/zero > '\(fill.path)' 2>/dev/null; true"])
        let left = try await Repository.run(["sh", "-c", "df --output=avail -B1 '\(path.path)' | tail -1"])
        #expect(left.output.trimmingCharacters(in: .whitespacesAndNewlines) == "0", "the disk is not full: \(left.output)")
    }

    func makeRoom() throws { try FileManager.default.removeItem(at: fill) }

    func unmount() { _ = try? Repository.runWaiting(["umount", "-l", path.path]) }

    /// A small disk at `path`, or nil (after saying so loudly) where it cannot be mounted
    /// outside CI; in CI (as root) it must be.
    static func mountedOrSkipped(at path: URL) async -> SmallDisk? {
        do {
            return try await SmallDisk(at: path)
        } catch {
            #expect(!required, "CI runs as root and must mount a tmpfs: \(error)")
            report("SKIPPED LOUDLY: \(error)")
            return nil
        }
    }
}

@Suite("A device on a full disk", .timeLimit(.minutes(5)), .serialized)
struct DiskFullTests {
    @Test(
        "the store can be read on a full disk; a change says one line and exits non-zero; poll keeps running and catches up when space returns, nothing lost, nothing corrupted"
    )
    func fullDisk() async throws {
        let directory = Repository.temporaryDirectory("notty-full")
        defer { try? FileManager.default.removeItem(at: directory) }
        guard let disk = await SmallDisk.mountedOrSkipped(at: directory.appendingPathComponent("b")) else { return }
        defer { disk.unmount() }
        let serve = try await ServeProcess(directory: directory)
        let world = try await TwoDevices(directory: directory, a: serve, b: serve)
        let b = world.b
        var ids: [String] = []
        for n in 1...3 { ids.append(try await world.publish("Before the disk filled \(n)")) }
        #expect(try await b.run(["sync"]).status == 0)

        try await disk.fillUp()
        // Reading works.
        let list = try await b.run(["list", "--view", "all"])
        #expect(list.status == 0 && ids.allSatisfy { list.out.contains(String($0.prefix(8))) }, "list on a full disk: \(list.err)\(list.out)")
        let show = try await b.run(["show", ids[0]])
        #expect(show.status == 0 && show.out.contains("Before the disk filled 1"), "show: \(show.err)")
        let status = try await b.run(["status"])
        #expect(status.status == 0, "status: \(status.err)")
        // A change: one line, non-zero, nothing saved.
        let dismiss = try await b.run(["dismiss", ids[0]])
        #expect(dismiss.status != 0 && dismiss.out.isEmpty, "\(dismiss)")
        #expect(
            dismiss.err.hasPrefix("notty: no space left on device: ") && dismiss.err.hasSuffix("(the change was not saved)\n")
                && dismiss.err.split(separator: "\n").count == 1, "\(dismiss.err)")

        // poll runs on, and catches up once there is room again.
        let log = directory.appendingPathComponent("poll-b.log")
        let poll = try b.start(["poll", "--live"], log: log)
        defer { if poll.isRunning { poll.signal(SIGTERM) } }
        func text() -> String { (try? String(contentsOf: log, encoding: .utf8)) ?? "" }
        let during = try await world.publish("While the disk was full")
        #expect(
            await eventually(timeout: .seconds(20)) { text().contains("no space left on device") }, "poll did not say the disk is full:\n\(text())")
        report("poll on a full disk said:\n" + text())
        #expect(poll.isRunning, "poll ended on a full disk:\n\(text())")
        try disk.makeRoom()
        #expect(
            try await eventually(timeout: .seconds(30)) { try (await world.store(b).perform { try $0.notification(id: during) }) != nil },
            "poll did not catch up when space returned:\n\(text())")
        let after = try await world.publish("After space returned")
        #expect(try await eventually(timeout: .seconds(20)) { try (await world.store(b).perform { try $0.notification(id: after) }) != nil })
        poll.signal(SIGTERM)

        // The change refused before can be made now, and it reaches the other device.
        #expect(try await b.run(["dismiss", ids[0]]).status == 0)
        #expect(try await world.a.run(["sync"]).status == 0)
        let first = ids[0]
        let dismissed = try await world.store(world.a).perform { try $0.notification(id: first) }
        #expect(dismissed?.userActionState == .dismissed)
        let integrity = try await Repository.run(["sqlite3", b.home.appendingPathComponent("store.sqlite").path, "PRAGMA integrity_check"])
        #expect(integrity.output.trimmingCharacters(in: .whitespacesAndNewlines) == "ok", "\(integrity.output)")
        let count = try (await world.store(b).perform { try $0.window(view: .all, limit: 100) }).count
        #expect(count == 5, "B holds \(count) notifications, not 5")
    }

    @Test(
        "the center on a full disk: d says no space left in its status line and changes nothing; the center stays up; with room again d works",
        .enabled(if: TmuxSession.available || TmuxSession.required, "SKIPPED LOUDLY: tmux is not installed (apt-get install -y tmux)"))
    func centerOnAFullDisk() async throws {
        let directory = Repository.temporaryDirectory("notty-full-center")
        defer { try? FileManager.default.removeItem(at: directory) }
        guard let disk = await SmallDisk.mountedOrSkipped(at: directory.appendingPathComponent("b")) else { return }
        defer { disk.unmount() }
        let serve = try await ServeProcess(directory: directory)
        let world = try await TwoDevices(directory: directory, a: serve, b: serve)
        _ = try await world.publish("Disk alert on the device")
        _ = try await world.publish("Second one")
        #expect(try await world.b.run(["sync"]).status == 0)
        let center = try TmuxSession(command: Repository.nottyBinary.path, environment: ["NOTTY_HOME": world.b.home.path])
        defer { center.close() }
        #expect(await center.waitFor("Unread 2"), "the center did not open:\n\(center.shown)")
        try await disk.fillUp()
        try await center.keys("d")
        #expect(await center.waitFor("no space left on device"), "no message in the status line:\n\(center.shown)")
        #expect(await center.waitFor("Unread 2"), "the view does not show the store as it is:\n\(center.shown)")
        #expect(await !center.screen().contains("Dismissed 1"))
        try disk.makeRoom()
        try await center.keys("d")
        #expect(await center.waitFor("Dismissed 1"), "with room again, d did not work:\n\(center.shown)")
        try await center.keys("q")
    }

    @Test(
        "the service on a full disk: publishes are refused with 503 (never another 5xx), what was acknowledged before is kept, and it publishes again once there is room"
    )
    func serviceOnAFullDisk() async throws {
        let directory = Repository.temporaryDirectory("notty-full-serve")
        defer { try? FileManager.default.removeItem(at: directory) }
        guard let disk = await SmallDisk.mountedOrSkipped(at: directory.appendingPathComponent("server")) else { return }
        defer { disk.unmount() }
        // ServeProcess keeps the service's store in directory/server: on the small disk.
        let serve = try await ServeProcess(directory: directory)
        defer { serve.stop() }
        let world = try await TwoDevices(directory: directory, a: serve, b: serve)
        var acknowledged: [String] = []
        for n in 1...5 { acknowledged.append(try await world.publish("Before \(n)")) }
        let token = try await Repository.run([
            "curl", "-s", "--max-time", "10", "-d", "grant_type=client_credentials&client_id=\(serve.clientId)&client_secret=\(serve.clientSecret)",
            "\(serve.url)/oauth2/v2.0/token",
        ])
        let access = (try JSONSerialization.jsonObject(with: Data(token.output.utf8)) as? [String: Any])?["access_token"] as? String
        try #require(access != nil, "no app token: \(token.output)")
        try await disk.fillUp()
        // (A token is a write too: on the full disk it is 503 as well.)
        var statuses: [String] = []
        for n in 0..<20 {
            let body =
                #"{"appNotificationId":"full-\#(n)","payload":{"visualContent":{"title":"While full \#(n) \#(String(repeating: "x", count: 900))"}}}"#
            let answer = try await Repository.run([
                "curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "20", "-H", "Authorization: Bearer \(access!)",
                "-H", "X-UNS-ID: \(world.uns)", "-H", "Content-Type: application/json", "-d", body, "\(serve.url)/beta/me/notifications",
            ])
            statuses.append(answer.output)
        }
        report("publishes on a full disk answered: \(statuses.joined(separator: " "))")
        #expect(statuses.allSatisfy { $0 == "503" || $0 == "201" }, "\(statuses)")
        #expect(statuses.contains("503"), "nothing was refused: is the disk full? \(statuses)")
        try disk.makeRoom()
        let after = try await world.publish("After the disk had room again")
        #expect(try await world.b.run(["sync"]).status == 0)
        let store = try world.store(world.b)
        for id in acknowledged + [after] {
            #expect(try (await store.perform { try $0.notification(id: id) }) != nil, "\(id) was acknowledged and is gone")
        }
        let integrity = try await Repository.run(["sqlite3", directory.appendingPathComponent("server/server.sqlite").path, "PRAGMA integrity_check"])
        #expect(integrity.output.trimmingCharacters(in: .whitespacesAndNewlines) == "ok", "\(integrity.output)")
    }
}
