import Foundation

// On call on the wire (PROTOCOL.md §13.2): a team's schedule as `GET /v1/teams/{name}/oncall`
// answers it, where the user is on call (`GET /v1/me/oncall`), and the user's contacts.

/// `GET /v1/teams/{name}/oncall`: who is on call now, the next handoffs, the rotation and the
/// overrides still to come or in force.
public struct OnCallView: Codable, Sendable, Equatable {
    public var team: String
    /// Nil until an owner sets one.
    public var rotation: [String]?
    public var shift: String?
    public var start: Date?
    public var zone: String?
    /// Who is on call now, until when (nil: nobody).
    public var now: OnCallShift?
    /// The next stretches after the current one (up to ten, within 90 days).
    public var next: [OnCallShift]
    public var overrides: [OnCallOverride]

    public init(
        team: String, rotation: [String]? = nil, shift: String? = nil, start: Date? = nil, zone: String? = nil, now: OnCallShift? = nil,
        next: [OnCallShift] = [], overrides: [OnCallOverride] = []
    ) {
        self.team = team
        self.rotation = rotation
        self.shift = shift
        self.start = start
        self.zone = zone
        self.now = now
        self.next = next
        self.overrides = overrides
    }

    /// The view of `schedule` at `now`.
    public init(team: String, schedule: OnCallSchedule?, now: Date) {
        guard let schedule else {
            self.init(team: team)
            return
        }
        // From 90 days back: the stretch on now is shown from when it began (its user's, without
        // a break), not from the moment of asking.
        let window = schedule.shifts(from: now - 90 * 86_400, until: now + 90 * 86_400)
        var current: OnCallShift? = nil
        if let index = window.lastIndex(where: { $0.from <= now && now < $0.until }) {
            var found = window[index]
            for earlier in window[..<index].reversed() {
                guard earlier.user == found.user, earlier.until == found.from else { break }
                found.from = earlier.from
            }
            found.until = schedule.onCallUntil(user: found.user, now: now) ?? found.until
            current = found
        }
        let upcoming = window.filter { $0.from > now && $0.from >= (current?.until ?? now) }
        self.init(
            team: team, rotation: schedule.rotation, shift: schedule.shift.description, start: schedule.start, zone: schedule.zone,
            now: current, next: Array(upcoming.prefix(10)), overrides: schedule.overrides.filter { $0.until > now }.sorted { $0.from < $1.from })
    }
}

/// One team of `GET /v1/me/oncall`: whether the user is on call for it now and until when,
/// else their next shift.
public struct MyOnCall: Codable, Sendable, Equatable {
    public var team: String
    public var onCall: Bool
    public var until: Date?
    public var next: OnCallShift?

    public init(team: String, onCall: Bool, until: Date? = nil, next: OnCallShift? = nil) {
        self.team = team
        self.onCall = onCall
        self.until = until
        self.next = next
    }

    /// "on call for ops until Mon 09:00", when on call.
    public func line(now: Date, zone: TimeZone) -> String? {
        guard onCall else { return nil }
        return "on call for \(team)" + (until.map { " until " + LocalTime.short($0, now: now, zone: zone) } ?? "")
    }
}

/// `GET /v1/me/oncall`: the user's teams with a rotation or an override.
public struct MyOnCallList: Codable, Sendable, Equatable {
    public var value: [MyOnCall]
    public init(value: [MyOnCall]) { self.value = value }
}

/// How to reach a user when they are paged (PROTOCOL.md §13.2): one of §11's targets.
public struct Contact: Codable, Sendable, Equatable {
    public var id: String
    /// `ntfy:URL`, `webhook:URL` or `command:NAME` (credentials shown to the user alone).
    public var target: String
    public var created: Date

    public init(id: String, target: String, created: Date) {
        self.id = id
        self.target = target
        self.created = created
    }

    /// The most contacts one user keeps.
    public static let maxPerUser = 10
}

/// The body of `POST /v1/me/contacts`: `{"target": "ntfy:URL"}`, one of §11's targets.
public struct ContactRequest: Sendable, Equatable {
    public var target: EscalationTarget

    public init(target: EscalationTarget) { self.target = target }

    public init(body: Data) throws(ValidationError) {
        let fields = try JSONFields(body: body)
        guard let text = try fields.string("target", max: 2048) else {
            throw ValidationError("target is required: ntfy:URL, webhook:URL or command:NAME")
        }
        target = try EscalationTarget(parsing: text)
    }
}

/// `GET /v1/me/contacts`.
public struct ContactList: Codable, Sendable, Equatable {
    public var value: [Contact]
    public init(value: [Contact]) { self.value = value }
}

/// The `oncall`, `team` and `user:NAME` targets of a team's escalation policy (PROTOCOL.md
/// §13.2): resolved to contacts when the step fires.
public enum PagingTarget: Sendable, Equatable {
    case onCall
    case team
    case user(String)

    /// The word as a rule keeps it, or nil when `text` is one of §11's own targets.
    public init?(_ text: String) {
        if text == "oncall" {
            self = .onCall
        } else if text == "team" {
            self = .team
        } else if text.hasPrefix("user:") {
            self = .user(String(text.dropFirst(5)))
        } else {
            return nil
        }
    }

    public var text: String {
        switch self {
        case .onCall: "oncall"
        case .team: "team"
        case .user(let name): "user:" + name
        }
    }
}
