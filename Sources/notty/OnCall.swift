import ArgumentParser
import Foundation
import NottyCommandLine
import NottyCore
import NottySync

// On call (PROTOCOL.md §13.2): a team's rotation and overrides, where you are on call, and a
// calendar feed of your shifts.
struct OnCallCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "oncall",
        abstract: "Who is on call for a team, its rotation and overrides, and your shifts as a calendar.",
        discussion: """
            A team's escalation policy can page whoever is on call (notty escalate add --team \
            ops --after 0s --to oncall): the rotation says who, in turn; an override puts \
            someone else on call for a while (of two that overlap, the one made later wins).

              notty oncall                    (where you are on call, and until when)
              notty oncall ops                (now, the next handoffs, the overrides)
              notty oncall ops --rotation alice,bob,carol --shift 1w \\
                  --start "2026-12-07 09:00" --zone Europe/Berlin        (owners)
              notty oncall ops --override bob --from "2026-12-24 18:00" --until "2026-12-27 09:00"
              notty oncall ops --remove-override ovr-…
              notty oncall ops --ical         (a secret URL of your shifts for a calendar app)

            Shifts are hours, days or weeks (12h, 1d, 1w; at most 4w); a day or week shift hands \
            off at the same local time in --zone across daylight-saving changes. Times of an \
            override are in the rotation's zone (or ISO 8601 with an offset). A member \
            overrides for themselves, an owner for anyone. The calendar URL works until \
            notty devices revoke ends it, like a device.
            """)

    @Argument(help: "The team's name (none: where you are on call).") var name: String?
    @Option(help: ArgumentHelp("Owners: the members in turn, comma-separated.", valueName: "a,b,c")) var rotation: String?
    @Option(help: ArgumentHelp("With --rotation: each shift's length: 12h, 1d, 1w.", valueName: "length")) var shift: String?
    @Option(help: ArgumentHelp("With --rotation: the first handoff, \"YYYY-MM-DD HH:MM\" in --zone.", valueName: "time")) var start: String?
    @Option(help: ArgumentHelp("With --rotation: the zone handoffs are counted in (default UTC).", valueName: "zone")) var zone: String?
    @Option(help: ArgumentHelp("Put this member on call from --from until --until.", valueName: "user")) var override: String?
    @Option(help: ArgumentHelp("With --override: when it begins.", valueName: "time")) var from: String?
    @Option(help: ArgumentHelp("With --override: when it ends.", valueName: "time")) var until: String?
    @Option(name: .customLong("remove-override"), help: ArgumentHelp("Remove this override.", valueName: "id")) var removeOverride: String?
    @Flag(help: "Print a new secret URL of an iCalendar feed of your shifts in the team.") var ical = false
    @Flag(help: "Print JSON.") var json = false

    func validate() throws {
        let actions = [rotation != nil, override != nil, removeOverride != nil, ical].filter { $0 }.count
        if actions > 1 { throw ArgumentParser.ValidationError("give one of --rotation, --override, --remove-override and --ical at a time") }
        if actions > 0 && name == nil { throw ArgumentParser.ValidationError("name the team: notty oncall TEAM …") }
        if let name, let problem = Team.nameProblem(name) { throw ArgumentParser.ValidationError(problem) }
        if rotation == nil && (shift != nil || start != nil || zone != nil) {
            throw ArgumentParser.ValidationError("--shift, --start and --zone go with --rotation")
        }
        if let rotation {
            guard let shift else { throw ArgumentParser.ValidationError("--rotation needs --shift (such as 1w) and --start") }
            guard start != nil else { throw ArgumentParser.ValidationError("--rotation needs --start, the first handoff (\"YYYY-MM-DD HH:MM\")") }
            do throws(NottyCore.ValidationError) {
                _ = try ShiftLength(parsing: shift)
                let zone = try LocalTime.zone(zone ?? "UTC")
                _ = try LocalTime.parse(start ?? "", zone: zone, field: "--start")
            } catch {
                throw ArgumentParser.ValidationError(error.message.contains("shift") ? "--shift: " + error.message : error.message)
            }
            if rotation.split(separator: ",").isEmpty {
                throw ArgumentParser.ValidationError("--rotation names the members in turn, such as alice,bob")
            }
        }
        if override == nil && (from != nil || until != nil) { throw ArgumentParser.ValidationError("--from and --until go with --override USER") }
        if override != nil && (from == nil || until == nil) {
            throw ArgumentParser.ValidationError("--override needs --from and --until (\"YYYY-MM-DD HH:MM\", in the rotation's zone)")
        }
    }

    func run() async throws {
        try await reportingErrors {
            let (client, _, _) = try await Device().session()
            let now = Date()
            guard let name else {
                let mine = try await client.myOnCall()
                if json {
                    for item in mine { print(JSONValue.encoding(item).jsonText) }
                    return
                }
                if mine.isEmpty { say("none of your teams has an on-call rotation") }
                for item in mine {
                    if let line = item.line(now: now, zone: .current) {
                        say(line)
                    } else if let next = item.next {
                        say(
                            "\(item.team): your next shift \(LocalTime.short(next.from, now: now, zone: .current)) to \(LocalTime.short(next.until, now: now, zone: .current))"
                        )
                    } else {
                        say("\(item.team): no shift of yours in the next 90 days")
                    }
                }
                return
            }
            if let rotation {
                let names = rotation.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
                let view = try await client.setRotation(team: name, rotation: names, shift: shift ?? "", start: start ?? "", zone: zone ?? "UTC")
                say("\(name): \(names.joined(separator: ", ")) in turn, \(shift ?? "") each, from \(start ?? "") \(zone ?? "UTC")")
                show(view, now: now)
                return
            }
            if let user = override {
                let made = try await client.addOverride(team: name, user: user, from: from ?? "", until: until ?? "")
                say("\(made.id): \(made.user) on call for \(name) from \(Self.time(made.from)) until \(Self.time(made.until))")
                return
            }
            if let id = removeOverride {
                try await client.removeOverride(team: name, id: id)
                say("removed \(id)")
                return
            }
            if ical {
                let made = try await client.makeCalendar(team: name)
                if json { print(JSONValue.encoding(made).jsonText); return }
                say(made.calendarUrl ?? "")
                say("(add it to a calendar app as a subscription; notty devices revoke \(made.userNotificationSubscriptionId.prefix(8)) ends it)")
                return
            }
            let view = try await client.onCall(team: name)
            if json { print(JSONValue.encoding(view).jsonText); return }
            show(view, now: now)
        }
    }

    /// A time as this machine's clock shows it.
    static func time(_ date: Date) -> String { LocalTime.format(date, zone: .current) }

    func show(_ view: OnCallView, now: Date) {
        guard let rotation = view.rotation else {
            say("\(view.team) has no rotation (owners: notty oncall \(view.team) --rotation a,b --shift 1w --start \"YYYY-MM-DD HH:MM\")")
            return
        }
        if !rotation.isEmpty { say("rotation: \(rotation.joined(separator: ", ")), \(view.shift ?? "") each, \(view.zone ?? "UTC")") }
        if let current = view.now {
            say("now: \(current.user) until \(LocalTime.short(current.until, now: now, zone: .current))" + (current.override ? " (override)" : ""))
        } else {
            say("now: nobody")
        }
        for next in view.next.prefix(5) {
            say("next: \(next.user) from \(LocalTime.short(next.from, now: now, zone: .current))" + (next.override ? " (override)" : ""))
        }
        for item in view.overrides {
            say("override \(item.id): \(item.user) \(Self.time(item.from)) – \(Self.time(item.until)) (by \(item.by))")
        }
    }
}

// Contacts (PROTOCOL.md §13.2): how a team's escalation policy reaches you when you are paged.
struct ContactCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "contact",
        abstract: "How you are reached when a team pages you (ntfy, webhook, command).",
        discussion: """
            A team's escalation policy pages a member through their contacts: on call \
            (--to oncall), by name (user:NAME) or the whole team (team). Contacts are the \
            targets of notty escalate: ntfy:URL (an ntfy topic, such as your phone's), \
            webhook:URL, command:NAME (one the service's administrator named).

              notty contact add ntfy:https://ntfy.sh/alice-pager
              notty contact --list
              notty contact test ct-…          (a test message, now)
              notty contact remove ct-…
            """,
        subcommands: [ContactAdd.self, ContactRemove.self, ContactTest.self])

    @Flag(help: "List your contacts (also what notty contact alone does).") var list = false
    @Flag(help: "With --list: one JSON object per contact.") var json = false

    func run() async throws {
        try await reportingErrors {
            let (client, _, _) = try await Device().session()
            let contacts = try await client.contacts()
            if json {
                for contact in contacts { print(JSONValue.encoding(contact).jsonText) }
                return
            }
            if contacts.isEmpty { say("no contacts: a page cannot reach you (notty contact add ntfy:URL)") }
            for contact in contacts { say("\(contact.id)  \(contact.target)") }
        }
    }
}

struct ContactAdd: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "add", abstract: "Add a contact: ntfy:URL, webhook:URL or command:NAME.")
    @Argument(help: "The target.") var target: String

    func validate() throws {
        do throws(NottyCore.ValidationError) { _ = try EscalationTarget(parsing: target) } catch {
            throw ArgumentParser.ValidationError(error.message)
        }
    }

    func run() async throws {
        try await reportingErrors {
            let (client, _, _) = try await Device().session()
            let contact = try await client.addContact(target)
            say("added \(contact.id)  \((try? EscalationTarget(parsing: contact.target))?.shown ?? contact.target)")
        }
    }
}

struct ContactRemove: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "remove", abstract: "Remove a contact by its id (notty contact --list).")
    @Argument(help: "The contact's id.") var id: String

    func run() async throws {
        try await reportingErrors {
            let (client, _, _) = try await Device().session()
            try await client.removeContact(id: id)
            say("removed \(id)")
        }
    }
}

struct ContactTest: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "test", abstract: "Send a test message to a contact now; exits 1 when it failed.")
    @Argument(help: "The contact's id.") var id: String

    func run() async throws {
        try await reportingErrors {
            let (client, _, _) = try await Device().session()
            let outcome = try await client.testContact(id: id)
            say(outcome.ok ? "ok \(outcome.target)" : "failed \(outcome.target): \(outcome.error ?? "")")
            if !outcome.ok { throw ExitCode(1) }
        }
    }
}
