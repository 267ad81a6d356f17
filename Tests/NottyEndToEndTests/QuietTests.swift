import Foundation
import NottyCore
import NottyPOSIX
import NottyTestSupport
import Testing

@Suite("Quiet and mute on every device (PROTOCOL.md §9)", .timeLimit(.minutes(5)))
struct QuietTests {
    @Test(
        "a mute and a quiet period set on A hold back B's --exec (High comes through quiet unless --strict; its end runs --exec once for what it held back) while B keeps and prints everything; status and mute --list show them; unmute and quiet off end them"
    )
    func heldBackEverywhere() async throws {
        let world = try await TwoDevices()
        let (a, b) = (world.a, world.b)
        let marker = world.directory.appendingPathComponent("exec.txt")
        let log = world.directory.appendingPathComponent("poll.log")
        let poll = try b.start(["poll", "--live", "--exec", "echo \"${NOTTY_ID:-summary $NOTTY_COUNT $NOTTY_IDS}\" >> \(marker.path)"], log: log)
        defer { if poll.isRunning { poll.signal(SIGTERM) } }
        func ran() -> [String] { ((try? String(contentsOf: marker, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init) }
        func printed() -> String { (try? String(contentsOf: log, encoding: .utf8)) ?? "" }
        #expect(await eventually(timeout: .seconds(10)) { printed().contains("connection: live") })

        // Mute a group on A: B's poll prints the muted one but runs nothing for it; the one after
        // (not muted) runs, so the muted one was handled before it.
        let mute = try await a.run(["mute", "--group", "noisy"])
        #expect(mute.status == 0, "\(mute.err)")
        #expect(mute.out.contains("muted group noisy"))
        let muted = try await world.publish("CPU high", extra: ["--group", "noisy"])
        let plain = try await world.publish("Build failed")
        #expect(await eventually(timeout: .seconds(10)) { ran().contains(plain) }, "\(ran())\n\(printed())")
        #expect(!ran().contains(muted), "a muted notification ran --exec")
        #expect(printed().contains(muted), "a muted notification must still be reported")
        // B sees the mute in its status and list; the muted one is kept and counted.
        #expect(try await b.run(["sync"]).status == 0)
        let status = try #require(JSONValue(jsonText: try await b.run(["status", "--json"]).out))
        #expect(member(status, "mutes") == .array([.object(["group": .string("noisy"), "until": .null])]), "\(status)")
        #expect(try await b.run(["mute", "--list"]).out == "group noisy\n")
        #expect(try (await world.store(b).perform { try $0.notification(id: muted) }) != nil)

        // Quiet on A: a normal one is held back, a High one comes through.
        #expect(try await a.run(["unmute", "--group", "noisy"]).status == 0)
        #expect(try await a.run(["quiet", "--for", "1h"]).status == 0)
        let normal = try await world.publish("Disk 91% full", extra: ["--priority", "none"])
        let high = try await world.publish("Site down", extra: ["--priority", "high"])
        #expect(await eventually(timeout: .seconds(10)) { ran().contains(high) }, "\(ran())\n\(printed())")
        #expect(!ran().contains(normal), "a normal notification ran --exec while quiet")
        // Strict: not even High; the next after quiet ends runs.
        #expect(try await a.run(["quiet", "--for", "1h", "--strict"]).status == 0)
        let strict = try await world.publish("Site down again", extra: ["--priority", "high"])
        #expect(try await eventually(timeout: .seconds(10)) { try (await world.store(b).perform { try $0.notification(id: strict) }) != nil })
        #expect(try await a.run(["quiet", "off"]).status == 0)
        let after = try await world.publish("Deploy done")
        #expect(await eventually(timeout: .seconds(10)) { ran().contains(after) }, "\(ran())\n\(printed())")
        #expect(!ran().contains(strict), "a High notification ran --exec while strictly quiet")
        // The end of quiet ran --exec once for both it held back (newest first).
        #expect(await eventually(timeout: .seconds(10)) { ran().contains("summary 2 \(strict) \(normal)") }, "\(ran())\n\(printed())")
        #expect(ran().filter { $0.hasPrefix("summary") }.count == 1)
        // A quiet period that ends by the clock ends in a summary too.
        #expect(try await a.run(["quiet", "--for", "8s"]).status == 0)
        let during = try await world.publish("Nightly report ready", extra: ["--priority", "none"])
        #expect(await eventually(timeout: .seconds(60)) { ran().contains("summary 1 \(during)") }, "\(ran())\n\(printed())")
        #expect(!ran().contains(during))
        #expect(try await b.run(["sync"]).status == 0)
        let quiet = try #require(JSONValue(jsonText: try await b.run(["status", "--json"]).out))
        #expect(member(quiet, "quiet") == .null)
        #expect(member(quiet, "mutes") == .array([]))
        // A schedule set on A: B's status shows it.
        let scheduled = try await a.run(["quiet", "--schedule", "22:00-07:00", "--days", "mon-fri", "--zone", "Europe/Berlin"])
        #expect(scheduled.out == "quiet 22:00-07:00 mon,tue,wed,thu,fri Europe/Berlin\n", "\(scheduled.out)\(scheduled.err)")
        #expect(try await b.run(["sync"]).status == 0)
        let withSchedule = try #require(JSONValue(jsonText: try await b.run(["status", "--json"]).out))
        #expect(member(withSchedule, "schedule").flatMap { member($0, "zone") } == .string("Europe/Berlin"))
    }

    @Test("notty poll restarted while quiet still sums up, when quiet ends, what it held back before the restart")
    func summaryOutlivesARestart() async throws {
        let world = try await TwoDevices()
        let (a, b) = (world.a, world.b)
        let marker = world.directory.appendingPathComponent("exec.txt")
        func ran() -> [String] { ((try? String(contentsOf: marker, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init) }
        let exec = "echo \"${NOTTY_ID:-summary $NOTTY_COUNT $NOTTY_IDS}\" >> \(marker.path)"
        let firstLog = world.directory.appendingPathComponent("poll-1.log")
        let first = try b.start(["poll", "--live", "--exec", exec], log: firstLog)
        defer { if first.isRunning { first.signal(SIGTERM) } }
        func printed(_ log: URL) -> String { (try? String(contentsOf: log, encoding: .utf8)) ?? "" }
        #expect(await eventually(timeout: .seconds(10)) { printed(firstLog).contains("connection: live") })
        #expect(try await a.run(["quiet", "--for", "1h"]).status == 0)
        let held = try await world.publish("Disk 91% full", extra: ["--priority", "none"])
        // Announced (printed) and held back, then the poll stops.
        #expect(await eventually(timeout: .seconds(10)) { printed(firstLog).contains(held) }, "\(printed(firstLog))")
        #expect(terminate(first), "notty poll did not end within 10 s of SIGTERM")
        #expect(!ran().contains(held))

        let secondLog = world.directory.appendingPathComponent("poll-2.log")
        let second = try b.start(["poll", "--live", "--exec", exec], log: secondLog)
        defer { if second.isRunning { second.signal(SIGTERM) } }
        #expect(await eventually(timeout: .seconds(10)) { printed(secondLog).contains("connection: live") })
        #expect(try await a.run(["quiet", "off"]).status == 0)
        #expect(await eventually(timeout: .seconds(10)) { ran().contains("summary 1 \(held)") }, "\(ran())\n\(printed(secondLog))")
        #expect(ran().filter { $0.hasPrefix("summary") }.count == 1)
    }

    @Test("quiet off inside a scheduled window ends it now, on every device, and keeps the schedule")
    func offInsideAWindow() async throws {
        let world = try await TwoDevices()
        let (a, b) = (world.a, world.b)
        var utc = Calendar(identifier: .gregorian)
        utc.timeZone = TimeZone(identifier: "UTC")!
        func clock(_ date: Date) -> String {
            let parts = utc.dateComponents([.hour, .minute], from: date)
            return String(format: "%02d:%02d", parts.hour!, parts.minute!)
        }
        let now = Date()
        let window = "\(clock(now.addingTimeInterval(-3600)))-\(clock(now.addingTimeInterval(3600)))"
        #expect(try await a.run(["quiet", "--schedule", window, "--zone", "UTC"]).status == 0)
        #expect(try await b.run(["sync"]).status == 0)
        let during = try #require(JSONValue(jsonText: try await b.run(["status", "--json"]).out))
        #expect(member(during, "quiet") != .null, "\(during)")
        let off = try await a.run(["quiet", "off"])
        #expect(off.out == "quiet is off; the schedule's next window is quiet again\n", "\(off.out)\(off.err)")
        #expect(try await b.run(["sync"]).status == 0)
        let after = try #require(JSONValue(jsonText: try await b.run(["status", "--json"]).out))
        #expect(member(after, "quiet") == .null, "\(after)")
        #expect(member(after, "schedule") != .null, "\(after)")
        #expect(try await a.run(["quiet", "off"]).out == "quiet is off\n", "the window was skipped already")
        #expect(try await b.run(["sync"]).status == 0)
        #expect(member(try #require(JSONValue(jsonText: try await b.run(["status", "--json"]).out)), "quiet") == .null)
    }

    @Test("what is asked wrongly gets one line that says what to give")
    func refusals() async throws {
        let world = try await TwoDevices()
        for (arguments, message) in [
            (["quiet"], "give one of --for DURATION, --until HH:MM, --schedule HH:MM-HH:MM or off"),
            (["quiet", "--schedule", "22:00"], "two different times of day"),
            (["quiet", "--schedule", "22:00-07:00", "--days", "funday"], "--days takes day names"),
            (["quiet", "--schedule", "22:00-07:00", "--zone", "Mars/Olympus"], "--zone takes a time zone"),
            (["quiet", "--for", "1h", "--days", "mon"], "--days and --zone go with --schedule"),
            (["quiet", "--until", "25:00"], "--until takes a time of day"),
            (["quiet", "soon"], "say off"),
            (["mute"], "give --app HOST or --group NAME"),
            (["mute", "--app", "a", "--group", "b"], "not both"),
            (["unmute"], "give --app HOST or --group NAME"),
        ] {
            let result = try await world.a.run(arguments)
            #expect(result.status != 0, "\(arguments)")
            #expect(result.err.contains(message), "\(arguments): \(result.err)")
        }
    }

    @Test(
        "notty mute --from --until schedules a maintenance window on every device: B's mute --list shows it to come (--json with from and until); a window without an end, or one that ends before it starts, is one line"
    )
    func maintenanceWindow() async throws {
        let world = try await TwoDevices()
        let start = Date().addingTimeInterval(3600), end = Date().addingTimeInterval(7200)
        func local(_ date: Date) -> String { TimeText.dateTime(date, in: .current) }
        func shown(_ date: Date) -> String { TimeText.clock(date, in: .current, now: Date()) }
        let made = try await world.a.run(["mute", "--app", "db.example.com", "--from", local(start), "--until", local(end)])
        #expect(made.status == 0 && made.out.contains("muted app db.example.com from \(shown(start)) until \(shown(end))"), "\(made.out)\(made.err)")
        #expect(try await world.b.run(["sync"]).status == 0)
        let listed = try await world.b.run(["mute", "--list", "--json"])
        let window = try #require(JSONValue(jsonText: listed.out.trimmingCharacters(in: .whitespacesAndNewlines)), "\(listed.out)")
        #expect(
            member(window, "app") == .string("db.example.com") && member(window, "from") != nil && member(window, "until") != nil, "\(listed.out)")
        #expect(try await world.b.run(["mute", "--list"]).out == "app db.example.com from \(shown(start)) until \(shown(end))\n")
        #expect(try await world.b.run(["status"]).out.contains("muted:      nothing"), "a window to come mutes nothing yet")

        for (arguments, says) in [
            (["--from", local(start)], "a window needs its end"),
            (["--from", local(end), "--until", local(start)], "--until must be after --from"),
            (["--from", "next tuesday", "--until", local(end)], "--from \"next tuesday\" is not a time"),
        ] {
            let refused = try await world.a.run(["mute", "--app", "db.example.com"] + arguments)
            #expect(
                refused.status != 0 && refused.err.contains(says) && refused.err.split(separator: "\n").count == 1, "\(arguments): \(refused.err)")
        }
    }
}

private func member(_ value: JSONValue, _ key: String) -> JSONValue? {
    if case .object(let object) = value { return object[key] }
    return nil
}
