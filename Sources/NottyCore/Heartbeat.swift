import Foundation

/// Heartbeats (PROTOCOL.md §16.3), a dead man's switch: a job pings a secret URL at least every
/// so often; when no ping comes within `every` + `grace`, a notification says so, and the next
/// ping dismisses it on every device.
public enum Heartbeat {
    /// `every`'s bounds, in seconds: 10 s to 30 days.
    public static let everyRange = 10...(30 * 86_400)
    /// At most this many heartbeats a user (or a team).
    public static let maxPerFeed = 100
    public static let maxNameLength = 64
    public static let maxMessageLength = 1024
    /// The app host name heartbeat notifications are published as (no app may take it).
    public static let hostName = "heartbeat.notty"

    /// `grace` when none is given: a tenth of `every`, at least 5 s.
    public static func defaultGrace(every: Int) -> Int { max(5, every / 10) }

    /// Whether `name` may name a heartbeat: 1 to 64 characters, no slash, control character or
    /// space at either end (it is a path segment of the API, and a title).
    public static func nameProblem(_ name: String) -> String? {
        guard !name.isEmpty, name.count <= maxNameLength, !name.contains("/"),
            !name.unicodeScalars.contains(where: { CharacterSet.controlCharacters.contains($0) }),
            name.trimmingCharacters(in: .whitespaces) == name
        else { return "a heartbeat's name is 1 to \(maxNameLength) characters, without slashes, control characters or spaces at either end" }
        return nil
    }
}

/// `POST /v1/me/heartbeats`'s body, read: `{"name", "every": seconds, "grace": seconds,
/// "team", "priority": "high|normal|low", "message"}`. Whether the caller may make one for the
/// team is the service's to check.
public struct HeartbeatRequest: Sendable, Equatable {
    public var name: String
    public var every: Int
    public var grace: Int
    public var team: String?
    public var priority: Priority
    public var message: String?

    public init(name: String, every: Int, grace: Int? = nil, team: String? = nil, priority: Priority = .high, message: String? = nil) {
        self.name = name
        self.every = every
        self.grace = grace ?? Heartbeat.defaultGrace(every: every)
        self.team = team
        self.priority = priority
        self.message = message
    }

    public init(body: Data) throws(ValidationError) {
        let fields = try JSONFields(body: body)
        guard let name = try fields.string("name", max: Heartbeat.maxNameLength + 1) else {
            throw ValidationError("name is required: what the heartbeat watches, such as backup")
        }
        if let problem = Heartbeat.nameProblem(name) { throw ValidationError(problem) }
        guard let every = try fields.integer("every"), Heartbeat.everyRange.contains(every) else {
            throw ValidationError("every is required: the seconds between two pings, from 10 (10 s) to 2592000 (30 days)")
        }
        let grace = try fields.integer("grace") ?? Heartbeat.defaultGrace(every: every)
        guard (0...Heartbeat.everyRange.upperBound).contains(grace) else { throw ValidationError("grace is 0 to 2592000 seconds (30 days)") }
        let priority: Priority
        switch try fields.string("priority", max: 16)?.lowercased() {
        case nil, "high": priority = .high
        case "normal", "none": priority = .none
        case "low": priority = .low
        case let other?: throw ValidationError("priority is high, normal or low, not \(other)")
        }
        let message = try fields.string("message", max: Heartbeat.maxMessageLength)
        if let message, message.containsNUL { throw ValidationError("message contains the character U+0000 (NUL): remove it") }
        self.init(
            name: name, every: every, grace: grace, team: try fields.string("team", max: 64), priority: priority,
            message: message.flatMap { $0.isEmpty ? nil : $0 })
    }

    /// The body that ``init(body:)`` reads.
    public var json: JSONValue {
        var object: [String: JSONValue] = [
            "name": .string(name), "every": .number(Double(every)), "grace": .number(Double(grace)), "priority": .string(Self.word(priority)),
        ]
        if let team { object["team"] = .string(team) }
        if let message { object["message"] = .string(message) }
        return .object(object)
    }

    /// How a priority is written for heartbeats: high, normal or low.
    public static func word(_ priority: Priority) -> String {
        switch priority {
        case .high: "high"
        case .none: "normal"
        case .low: "low"
        }
    }
}

/// A heartbeat as the API shows it.
public struct HeartbeatInfo: Codable, Sendable, Equatable {
    public enum State: String, Codable, Sendable {
        /// Pinged in time (or not yet due).
        case up
        /// Overdue, or reported a failure (`failed`): its notification is out.
        case late
        case paused
    }

    public var id: String
    public var name: String
    /// The team whose feed it publishes to (nil: the user's own).
    public var team: String?
    public var every: Int
    public var grace: Int
    public var priority: String
    public var message: String?
    public var state: State
    /// The last ping reported a failure (`…/fail`).
    public var failed: Bool
    public var lastPingDateTime: Date?
    /// When it is late without a ping (nil while paused).
    public var dueDateTime: Date?
    public var createdDateTime: Date
    /// The secret ping URL: only in the answer that made it (the service keeps a hash).
    public var pingUrl: String?

    public init(
        id: String, name: String, team: String?, every: Int, grace: Int, priority: String, message: String?, state: State, failed: Bool,
        lastPingDateTime: Date?, dueDateTime: Date?, createdDateTime: Date, pingUrl: String? = nil
    ) {
        self.id = id
        self.name = name
        self.team = team
        self.every = every
        self.grace = grace
        self.priority = priority
        self.message = message
        self.state = state
        self.failed = failed
        self.lastPingDateTime = lastPingDateTime
        self.dueDateTime = dueDateTime
        self.createdDateTime = createdDateTime
        self.pingUrl = pingUrl
    }
}

public struct HeartbeatList: Codable, Sendable, Equatable {
    public var value: [HeartbeatInfo]
    public init(value: [HeartbeatInfo]) { self.value = value }
}
