import Foundation

// Teams (PROTOCOL.md §13.1): a name, and members who are each an owner or a member.

/// What a member may do in a team: an owner also adds and removes members.
public enum TeamRole: String, Codable, Sendable, CaseIterable {
    case owner, member
}

/// One member of a team, as `GET /v1/teams/{name}` shows them.
public struct TeamMember: Codable, Sendable, Equatable {
    public var user: String
    public var displayName: String
    public var role: TeamRole
    /// When they joined (or their role last changed).
    public var since: Date

    public init(user: String, displayName: String, role: TeamRole, since: Date) {
        self.user = user
        self.displayName = displayName
        self.role = role
        self.since = since
    }
}

/// A team with its members, owners first, then by user name.
public struct Team: Codable, Sendable, Equatable {
    /// The service's id of the team (the owner of its notifications); not on the wire.
    public var id: String = ""
    public var name: String
    public var created: Date
    public var members: [TeamMember]
    /// Who is on call now and until when (PROTOCOL.md §13.2); absent when nobody is (no
    /// rotation yet, or none in force).
    public var onCall: OnCallShift?

    private enum CodingKeys: String, CodingKey { case name, created, members, onCall }

    /// The name of the account row that owns a team's feed: a slash, which no user's name has.
    public static func feedOwnerName(_ name: String) -> String { "team/" + name }

    /// Team ids begin with this, so that a feed's owner is told from a user's by its id alone.
    public static let idPrefix = "team-"

    public init(id: String = "", name: String, created: Date, members: [TeamMember]) {
        self.id = id
        self.name = name
        self.created = created
        self.members = members.sorted { ($0.role == .owner ? 0 : 1, $0.user) < ($1.role == .owner ? 0 : 1, $1.user) }
    }

    /// The role of `user` (a user name), nil when they are not a member.
    public func role(of user: String) -> TeamRole? {
        members.first { $0.user == user }?.role
    }

    /// One line: `ops  alice (owner), bob`.
    public var summary: String {
        let names = members.map { $0.user + ($0.role == .owner ? " (owner)" : "") }
        return "\(name)  " + (names.isEmpty ? "no members" : names.joined(separator: ", "))
    }

    /// The team's names and limits: a name is `[a-z0-9][a-z0-9-]{0,39}`.
    public static let maxNameLength = 40
    /// The most teams one user may be a member of.
    public static let maxTeamsPerUser = 100
    /// The most members one team may have.
    public static let maxMembers = 200

    /// Why `name` is not a team's name, or nil when it is one.
    public static func nameProblem(_ name: String) -> String? {
        let bytes = Array(name.utf8)
        func allowed(_ byte: UInt8, first: Bool) -> Bool {
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
                || (!first && byte == UInt8(ascii: "-"))
        }
        guard !bytes.isEmpty, bytes.count <= maxNameLength, allowed(bytes[0], first: true),
            bytes.dropFirst().allSatisfy({ allowed($0, first: false) })
        else {
            return
                "a team's name is 1–\(maxNameLength) lowercase letters, digits and hyphens, starting with a letter or digit (such as ops or web-oncall)"
        }
        return nil
    }
}

/// Who made a team notification's latest change (PROTOCOL.md §13.1): `changedBy` on the wire.
public struct ChangedBy: Codable, Sendable, Equatable {
    /// The member's user name.
    public var user: String
    /// The device's name, when the change came from a device.
    public var device: String?
    public var at: Date

    public init(user: String, device: String?, at: Date) {
        self.user = user
        self.device = device
        self.at = at
    }

    /// Read from its JSON object; nil when `value` is not one.
    public init?(_ value: JSONValue?) {
        guard case .object(let o)? = value, case .string(let user)? = o["user"], case .string(let atText)? = o["at"],
            let at = ISOTime.parse(atText)
        else { return nil }
        let device: String? = if case .string(let d)? = o["device"] { d } else { nil }
        self.init(user: user, device: device, at: at)
    }

    /// Its JSON object.
    public var value: JSONValue {
        var o: [String: JSONValue] = ["user": .string(user), "at": .string(ISOTime.format(at))]
        if let device { o["device"] = .string(device) }
        return .object(o)
    }

    /// "alice on laptop" (or "alice").
    public var who: String { device.map { "\(user) on \($0)" } ?? user }
}

/// `GET /v1/me/teams`: the signed-in user's teams.
public struct TeamList: Codable, Sendable, Equatable {
    public var value: [Team]
    public init(value: [Team]) { self.value = value }
}

/// `POST /v1/teams/{name}/members`: `{"user", "role"}` (role: `member` when absent).
public struct TeamMemberRequest: Sendable, Equatable {
    public var user: String
    public var role: TeamRole

    public init(user: String, role: TeamRole = .member) {
        self.user = user
        self.role = role
    }

    /// Reads the request's JSON body; a problem is a message that says what to send.
    public init(body: Data) throws(ValidationError) {
        guard case .object(let fields)? = JSONParser.parse(body) else {
            throw ValidationError(#"send a JSON object: {"user": "bob", "role": "member"} (role: member or owner)"#)
        }
        for key in fields.keys where key != "user" && key != "role" {
            throw ValidationError("unknown field \(key): a member is {\"user\", \"role\"}")
        }
        guard case .string(let user)? = fields["user"], !user.isEmpty else {
            throw ValidationError("user must be a user's name (a string)")
        }
        // Neither store keeps it whole: SQLite would read the name up to it, another user's.
        if user.containsNUL { throw ValidationError("user must not contain the character U+0000 (NUL)") }
        var role = TeamRole.member
        switch fields["role"] {
        case nil, .null?: break
        case .string(let text)?:
            guard let parsed = TeamRole(rawValue: text.lowercased()) else { throw ValidationError("role must be member or owner, not \(text)") }
            role = parsed
        default: throw ValidationError("role must be member or owner (a string)")
        }
        self.init(user: user, role: role)
    }
}

extension UserNotification {
    /// Its state in a person's words: `Unread`, `Read · dismissed`, `Unread · snoozed`,
    /// `Read · opened` (the wire's `Read · Activated`).
    public var stateWords: String {
        let read = readState == .unread ? "Unread" : "Read"
        switch userActionState {
        case .noInteraction: return read
        case .activated: return read + " · opened"
        case .dismissed: return read + " · dismissed"
        case .snoozed: return read + " · snoozed"
        }
    }

    /// Who made a team notification what it is: `dismissed by alice on laptop, 2m ago`; nil
    /// when no member changed it.
    public func changedByLine(now: Date) -> String? {
        guard let changedBy else { return nil }
        let what: String
        if status == .deleted {
            what = "deleted"
        } else {
            what =
                switch userActionState {
                case .dismissed: "dismissed"
                case .activated: "opened"
                case .snoozed: "snoozed"
                case .noInteraction: readState == .read ? "read" : "marked unread"
                }
        }
        return "\(what) by \(changedBy.who), \(TimeText.relative(changedBy.at, now: now))"
    }
}

/// Whose feed an id is (PROTOCOL.md §15): a person's or a team's, told by the id alone. What owns a
/// subscription, a rule or a notification; a team is never taken for a user.
public enum FeedOwner: Sendable, Hashable {
    case user(id: String)
    case team(id: String)

    public init(id: String) {
        self = id.hasPrefix(Team.idPrefix) ? .team(id: id) : .user(id: id)
    }

    public var id: String {
        switch self {
        case .user(let id), .team(let id): id
        }
    }

    public var isTeam: Bool {
        if case .team = self { return true }
        return false
    }
}
