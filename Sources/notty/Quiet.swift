import ArgumentParser
import Foundation
import NottyCommandLine
import NottyCore
import NottyStore

// Quiet hours and mutes (PROTOCOL.md §9): preferences of the user's, set on this device and synced to
// every other. Nothing is lost while quiet or muted; only popups and --exec hold back.

struct Quiet: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "quiet",
        abstract: "Quiet on every device: no popup and no --exec until it ends (High still comes through unless --strict).",
        discussion: """
            notty quiet --for 1h           quiet for an hour \
            notty quiet --until 07:00      quiet until the next 07:00 here \
            notty quiet off                end quiet now (in a scheduled window: until the next one) \
            notty quiet --schedule 22:00-07:00 [--days mon-fri] [--zone Europe/Berlin]
                                           quiet every night (the days a window starts on;
                                           the zone's clock, across daylight-saving changes)
            notty quiet --schedule off     no schedule \
            Notifications still arrive, are kept and counted; notty status shows the quiet state.
            """)

    @Argument(help: ArgumentHelp("off: end the quiet period now.", valueName: "off")) var off: String?
    @Option(name: .customLong("for"), help: ArgumentHelp("How long: 30m, 1h, 2d.", valueName: "duration")) var duration: DurationArgument?
    @Option(help: ArgumentHelp("Until this time of day here (the next one to come).", valueName: "HH:MM")) var until: String?
    @Option(help: ArgumentHelp("Quiet hours every day (or on --days), or off.", valueName: "HH:MM-HH:MM")) var schedule: String?
    @Option(help: ArgumentHelp("With --schedule: the days a window starts on (mon-fri, sat,sun).", valueName: "days")) var days: String?
    @Option(help: ArgumentHelp("With --schedule: the time zone of its times (default: this device's).", valueName: "zone")) var zone: String?
    @Flag(help: "High notifications are quiet too.") var strict = false

    func validate() throws {
        if let off, off != "off" { throw ArgumentParser.ValidationError("say off, or give --for, --until or --schedule") }
        let given = [off != nil, duration != nil, until != nil, schedule != nil].filter { $0 }.count
        guard given == 1 else { throw ArgumentParser.ValidationError("give one of --for DURATION, --until HH:MM, --schedule HH:MM-HH:MM or off") }
        if let until, QuietSchedule.timeOfDay(until) == nil { throw ArgumentParser.ValidationError("--until takes a time of day such as 07:00") }
        if off != nil && strict { throw ArgumentParser.ValidationError("--strict goes with --for, --until or --schedule") }
        if schedule == nil && (days != nil || zone != nil) { throw ArgumentParser.ValidationError("--days and --zone go with --schedule") }
        if let schedule, schedule != "off" {
            guard QuietSchedule.window(schedule) != nil else {
                throw ArgumentParser.ValidationError("--schedule takes two different times of day, such as 22:00-07:00 (or off)")
            }
            if let days, QuietSchedule.days(days) == nil { throw ArgumentParser.ValidationError("--days takes day names such as mon-fri or sat,sun") }
            if let zone, TimeZone(identifier: zone) == nil { throw ArgumentParser.ValidationError("--zone takes a time zone such as Europe/Berlin") }
        } else if schedule == "off" && (days != nil || zone != nil || strict) {
            throw ArgumentParser.ValidationError("--schedule off takes nothing else")
        }
    }

    func run() async throws {
        try await reportingErrors {
            let local = Device()
            let store = try await local.store()
            let now = Date()
            if let schedule {
                if schedule == "off" {
                    _ = try await store.perform { try $0.setPreference(key: Interruptions.scheduleKey, value: .null, now: now) }
                    say("no quiet schedule")
                } else if let window = QuietSchedule.window(schedule) {
                    let quiet = QuietSchedule(
                        from: window.from, to: window.to, days: days.flatMap(QuietSchedule.days) ?? [],
                        zone: zone.flatMap(TimeZone.init(identifier:)) ?? .current, strict: strict)
                    _ = try await store.perform { try $0.setPreference(key: Interruptions.scheduleKey, value: quiet.value, now: now) }
                    say("quiet \(quiet.description)")
                }
            } else if off != nil {
                let (before, value) = try await store.perform { try $0.setQuiet(until: nil, now: now) }
                // (A window skipped already stays skipped.)
                say(value != .null && before.isQuiet ? "quiet is off; the schedule's next window is quiet again" : "quiet is off")
            } else {
                let end: Date
                if let duration {
                    end = now.addingTimeInterval(TimeInterval(duration.seconds))
                } else {
                    guard let time = until.flatMap(QuietSchedule.timeOfDay),
                        let next = Calendar.current.nextDate(after: now, matching: time, matchingPolicy: .nextTime)
                    else { throw CLIError("--until takes a time of day such as 07:00") }
                    end = next
                }
                let strict = strict
                _ = try await store.perform { try $0.setQuiet(until: end, strict: strict, now: now) }
                say(
                    "quiet until \(TimeText.clock(end, in: .current, now: now)) (\(TimeText.relative(end, now: now)))"
                        + (strict ? ", High included" : ""))
            }
            await deliverQueued(local)
        }
    }
}

/// `--app HOST` or `--group NAME`, and `--team T` for a team's.
struct MuteTarget: ParsableArguments {
    @Option(help: ArgumentHelp("An app's host name (its notifications' targetHostName).", valueName: "host")) var app: String?
    @Option(help: ArgumentHelp("A group (groupName).", valueName: "name")) var group: String?
    @Option(
        help: ArgumentHelp(
            "A team's mute instead of yours (its owners set it): that team's notifications, for every member.", valueName: "team"))
    var team: String?

    /// Writes the mute (`value` a mute's, or null to lift it): the team's through the service
    /// at once (owners only), or the user's own through this device's outbox.
    func write(_ target: Interruptions.Target, value: JSONValue, local: Device, now: Date) async throws {
        if let team {
            let (client, _, _) = try await local.session()
            _ = try await client.setTeamMute(team: team, key: Interruptions.key(target), value: value)
            return
        }
        let store = try await local.store()
        _ = try await store.perform { try $0.setPreference(key: Interruptions.key(target), value: value, now: now) }
        await deliverQueued(local)
    }

    var target: Interruptions.Target? {
        if let app { return .app(app) }
        if let group { return .group(group) }
        return nil
    }

    func validate() throws {
        if app != nil && group != nil { throw ArgumentParser.ValidationError("give --app or --group, not both") }
    }
}

extension Interruptions.Target {
    var description: String {
        switch self {
        case .app(let host): "app \(host)"
        case .group(let name): "group \(name)"
        }
    }
}

extension Interruptions.Mute {
    /// What it mutes, as a person says it: `app ci.example.com`, `group builds (team ops)`.
    var description: String { target.description + (team.map { " (team \($0))" } ?? "") }

    /// `{"app":"ci.example.com","until":…}` or `{"group":"builds","until":…}`, with `"team"` for a
    /// team's (`mute --list --json`, `status --json`).
    var json: JSONValue {
        let (kind, name): (String, String) =
            switch target {
            case .app(let host): ("app", host)
            case .group(let group): ("group", group)
            }
        var object: [String: JSONValue] = [kind: .string(name), "until": until.map { .string(ISOTime.format($0)) } ?? .null]
        if let from { object["from"] = .string(ISOTime.format(from)) }
        if let team { object["team"] = .string(team) }
        return .object(object)
    }
}

struct Mute: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mute",
        abstract: "Mute an app or a group on every device: its notifications are kept and counted but never interrupt.",
        discussion: """
            notty mute --app ci.example.com            until notty unmute \
            notty mute --group HighCPU --for 2h        ends by itself \
            notty mute --app db.example.com --from "2026-12-24 18:00" --until "2026-12-27 09:00"
                                                       a maintenance window (times here, or ISO 8601)
            notty mute --app db.example.com --team ops --from "2026-12-24 18:00" --until "2026-12-27 09:00"
                                                       the team's window: its notifications, for every member
            notty mute --list                          what is muted now, and windows to come

            One mute an app or group: a new one (or a window) replaces the one there was. \
            A team's mutes are its owners' to set; every member's devices hold them.
            """)

    @OptionGroup var target: MuteTarget
    @Option(name: .customLong("for"), help: ArgumentHelp("How long: 30m, 1h, 2d (default: until unmuted).", valueName: "duration")) var duration:
        DurationArgument?
    @Option(help: ArgumentHelp("A maintenance window's start: \"YYYY-MM-DD HH:MM\" here, or ISO 8601 (with --until).", valueName: "time"))
    var from: String?
    @Option(help: ArgumentHelp("When the mute (or window) ends: \"YYYY-MM-DD HH:MM\" here, or ISO 8601.", valueName: "time")) var until: String?
    @Flag(help: "List what is muted now and the windows to come.") var list = false
    @Flag(help: "With --list: one JSON object a line.") var json = false

    func validate() throws {
        if list && (target.target != nil || target.team != nil || duration != nil || from != nil || until != nil) {
            throw ArgumentParser.ValidationError("--list takes no --app, --group, --team, --for, --from or --until")
        }
        if !list && target.target == nil { throw ArgumentParser.ValidationError("give --app HOST or --group NAME (or --list)") }
        if json && !list { throw ArgumentParser.ValidationError("--json goes with --list") }
        if duration != nil && (from != nil || until != nil) { throw ArgumentParser.ValidationError("give --for, or --from and --until, not both") }
        if from != nil && until == nil { throw ArgumentParser.ValidationError("a window needs its end: --from TIME --until TIME") }
        let (start, end) = try window(now: Date())
        if let end, end <= max(start ?? .distantPast, Date()) {
            throw ArgumentParser.ValidationError("--until must be after --from and in the future")
        }
    }

    /// `--from` and `--until` as instants (this device's zone).
    func window(now: Date) throws -> (from: Date?, until: Date?) {
        do throws(NottyCore.ValidationError) {
            let start = try from.map { text throws(NottyCore.ValidationError) in try LocalTime.parse(text, zone: .current, field: "--from") }
            let end = try until.map { text throws(NottyCore.ValidationError) in try LocalTime.parse(text, zone: .current, field: "--until") }
            // A window that has begun is a mute until its end.
            return (start.flatMap { $0 > now ? $0 : nil }, end)
        } catch {
            throw ArgumentParser.ValidationError(error.message)
        }
    }

    func run() async throws {
        try await reportingErrors {
            let local = Device()
            let store = try await local.store()
            let now = Date()
            if list {
                let interruptions = Interruptions(preferences: try await store.perform { try $0.preferences() }, now: now)
                for mute in interruptions.mutes + interruptions.scheduled {
                    if json {
                        print(mute.json.jsonText)
                    } else {
                        say(
                            mute.description + (mute.from.map { " from \(TimeText.clock($0, in: .current, now: now))" } ?? "")
                                + (mute.until.map { " until \(TimeText.clock($0, in: .current, now: now))" } ?? ""))
                    }
                }
                return
            }
            guard let muted = target.target else { return }
            let (start, end) = try window(now: now)
            let until = end ?? duration.map { now.addingTimeInterval(TimeInterval($0.seconds)) }
            try await target.write(muted, value: Interruptions.muteValue(until: until, from: start), local: local, now: now)
            say(
                "muted \(muted.description)" + (target.team.map { " for team \($0)" } ?? "")
                    + (start.map { " from \(TimeText.clock($0, in: .current, now: now))" } ?? "")
                    + (until.map { " until \(TimeText.clock($0, in: .current, now: now))" } ?? ""))
        }
    }
}

struct Unmute: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "unmute", abstract: "Lift a mute on every device.")

    @OptionGroup var target: MuteTarget

    func validate() throws {
        if target.target == nil { throw ArgumentParser.ValidationError("give --app HOST or --group NAME") }
    }

    func run() async throws {
        try await reportingErrors {
            guard let muted = target.target else { return }
            try await target.write(muted, value: .null, local: Device(), now: Date())
            say("unmuted \(muted.description)" + (target.team.map { " for team \($0)" } ?? ""))
        }
    }
}
