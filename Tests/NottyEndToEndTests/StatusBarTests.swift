import Foundation
import NottyCore
import NottyTestSupport
import Testing

@Suite(
    "The count where people look: notty count in a tmux status line, notty watch for status bars", .timeLimit(.minutes(5)), .serialized,
    .enabled(
        if: TmuxSession.available || TmuxSession.required, "SKIPPED LOUDLY: tmux is not installed (apt-get install -y tmux); .ci/run installs it"))
struct StatusBarTests {
    @Test("a real tmux status line runs notty count --format tmux: ✉ 2! in red while a High one is unread; after a dismiss on A and a sync on B, ✉ 1")
    func tmuxStatusLine() async throws {
        let world = try await TwoDevices()
        let high = try await world.publish("Disk full on db-1", extra: ["--priority", "high"])
        _ = try await world.publish("Backup done", extra: ["--priority", "none"])
        #expect(try await world.b.run(["sync"]).status == 0)

        // tmux inside tmux: the inner one's status line, drawn by its client, is on the outer
        // pane (tmux draws a status line only for an attached client).
        let config = world.directory.appendingPathComponent("inner-tmux.conf")
        try """
        set -g status-interval 1
        set -g status-right-length 60
        set -g status-right '[#(\(Repository.nottyBinary.path) count --format tmux)]'
        """.write(to: config, atomically: true, encoding: .utf8)
        let inner = world.directory.appendingPathComponent("inner.sock").path
        // swift test sets NO_COLOR for the tests it runs; a status line has colour.
        let outer = try TmuxSession(
            command: "env -u TMUX -u NO_COLOR tmux -S '\(inner)' -f '\(config.path)' new-session 'sleep 600'", columns: 80, rows: 10,
            environment: ["NOTTY_HOME": world.b.home.path])
        defer {
            _ = try? Tmux.run(socket: inner, ["kill-server"])
            outer.close()
        }
        #expect(await outer.waitFor("[✉ 2!]", timeout: .seconds(30)), "no count on the status line:\n\(outer.shown)")
        let styled = try await outer.lines(escapes: true).joined(separator: "\n")
        #expect(styled.contains("\u{1B}[1m") && styled.contains("31m"), "the High count is not bold red:\n\(styled)")

        #expect(try await world.a.run(["sync"]).status == 0)
        #expect(try await world.a.run(["dismiss", high]).status == 0)
        #expect(try await world.b.run(["sync"]).status == 0)
        #expect(await outer.waitFor("[✉ 1]", timeout: .seconds(30)), "the status line did not follow the dismiss:\n\(outer.shown)")

        #expect(try await world.b.run(["read", "--all", "--view", "unread"]).status == 0)
        #expect(await outer.waitFor("[]", timeout: .seconds(30)), "nothing unread still shows a count:\n\(outer.shown)")
    }

    @Test(
        "notty watch --format waybar: a JSON line at start and one per change (text, tooltip, class, alt), none while nothing changes; SIGTERM ends it with 0; so does a closed output"
    )
    func watchWaybar() async throws {
        let world = try await TwoDevices()
        _ = try await world.publish("Backup done", extra: ["--priority", "none"])
        #expect(try await world.b.run(["sync"]).status == 0)
        let log = world.directory.appendingPathComponent("watch.log")
        let exited = Locked<Int32?>(nil)
        let watch = try world.b.start(["watch", "--format", "waybar"], log: log) { process in exited.update { $0 = process.code } }
        defer { terminate(watch) }
        func lines() -> [JSONValue] {
            ((try? String(contentsOf: log, encoding: .utf8)) ?? "").split(separator: "\n").compactMap { JSONValue(jsonText: String($0)) }
        }
        func field(_ line: JSONValue?, _ key: String) -> String? {
            if case .object(let object)? = line, case .string(let text)? = object[key] { return text }
            return nil
        }
        #expect(
            await eventually(timeout: .seconds(30)) { lines().count == 1 },
            "no first line: \(String(describing: try? String(contentsOf: log, encoding: .utf8)))")
        #expect(field(lines().first, "text") == "1" && field(lines().first, "class") == "some" && field(lines().first, "alt") == "some")
        #expect(field(lines().first, "tooltip") == "notty: 1 unread")

        let high = try await world.publish("Disk full on db-1", extra: ["--priority", "high"])
        #expect(try await world.b.run(["sync"]).status == 0)
        #expect(await eventually(timeout: .seconds(30)) { lines().count == 2 }, "no line after the sync: \(lines())")
        #expect(
            field(lines().last, "text") == "2" && field(lines().last, "class") == "high"
                && field(lines().last, "tooltip") == "notty: 2 unread, 1 High")

        // A write that changes nothing of the count (the same state again) prints nothing.
        #expect(try await world.b.run(["sync"]).status == 0)
        #expect(try await world.a.run(["sync"]).status == 0)
        #expect(try await world.a.run(["dismiss", high]).status == 0)
        #expect(try await world.b.run(["sync"]).status == 0)
        #expect(await eventually(timeout: .seconds(30)) { lines().count == 3 }, "no line after the dismiss: \(lines())")
        #expect(lines().count == 3 && field(lines().last, "text") == "1" && field(lines().last, "class") == "some")

        #expect(terminate(watch), "SIGTERM did not end notty watch")
        #expect(await eventually(timeout: .seconds(10)) { exited.update { $0 } != nil })
        #expect(exited.update { $0 } == 0, "notty watch ended with \(String(describing: exited.update { $0 })) on SIGTERM")

        // Its reader gone (a status bar restarted), it ends with 0 too: head takes one line.
        let home = world.b.home.path
        let piped = try await offThePool {
            try runToEnd(
                "/bin/bash", ["-c", "set -o pipefail; timeout 120 '\(Repository.nottyBinary.path)' watch --format json | head -n 1"],
                environment: ProcessInfo.processInfo.environment.merging(["NOTTY_HOME": home]) { $1 }, name: "notty watch | head")
        }
        let first = String(decoding: piped.out, as: UTF8.self)
        #expect(piped.status == 0, "notty watch | head -n 1 ended with \(piped.status): \(first) \(String(decoding: piped.err, as: UTF8.self))")
        #expect(first.contains(#""count":1"#), "\(first)")
    }
}
