import Foundation

// Escalation (PROTOCOL.md §11): the user's rules, kept on the service; what a rule says and where it
// sends. The wire form of a rule is the object `GET /v1/me/escalations` lists.

/// Where an escalation goes: an ntfy topic, a webhook, or a command the service's
/// administrator named (`[escalation.commands]` in `server.toml`).
public enum EscalationTarget: Sendable, Equatable, Hashable, CustomStringConvertible {
    case ntfy(String)
    case webhook(String)
    case command(String)

    /// `ntfy:URL`, `webhook:URL` or `command:NAME`; a message a person can act on otherwise.
    public init(parsing text: String) throws(ValidationError) {
        guard let colon = text.firstIndex(of: ":") else {
            throw ValidationError("\(Self.quoted(text)) is not a target: write ntfy:URL, webhook:URL or command:NAME")
        }
        let kind = text[..<colon].lowercased(), rest = String(text[text.index(after: colon)...])
        switch kind {
        case "ntfy", "webhook":
            guard Self.isHTTPURL(rest) else {
                throw ValidationError("\(Self.quoted(text)): \(kind): takes an absolute http(s) URL, such as \(kind):https://ntfy.sh/my-alerts")
            }
            self = kind == "ntfy" ? .ntfy(rest) : .webhook(rest)
        case "command":
            guard !rest.isEmpty, rest.count <= 64, rest.allSatisfy({ $0.isLetter || $0.isNumber || "-_.".contains($0) }) else {
                throw ValidationError(
                    "\(Self.quoted(text)): command: takes the name of a command the service's administrator set up (letters, digits, - _ .)")
            }
            self = .command(rest)
        default:
            throw ValidationError("\(Self.quoted(text)): unknown kind \(Self.quoted(String(kind))): write ntfy:URL, webhook:URL or command:NAME")
        }
    }

    public var description: String {
        switch self {
        case .ntfy(let url): "ntfy:\(url)"
        case .webhook(let url): "webhook:\(url)"
        case .command(let name): "command:\(name)"
        }
    }

    /// The target as a person reads it: credentials in a URL are never shown.
    public var shown: String {
        switch self {
        case .ntfy(let url): "ntfy:\(Self.withoutCredentials(url))"
        case .webhook(let url): "webhook:\(Self.withoutCredentials(url))"
        case .command(let name): "command:\(name)"
        }
    }

    /// The target as anyone but the user who gave it reads it (PROTOCOL.md §15): its kind, scheme, host
    /// and port, never its path, query or user info (an ntfy topic, a token in a query are
    /// credentials too): `ntfy:https://ntfy.example:443`.
    public var shownToOthers: String {
        switch self {
        case .ntfy(let url): "ntfy:\(Self.origin(url))"
        case .webhook(let url): "webhook:\(Self.origin(url))"
        case .command(let name): "command:\(name)"
        }
    }

    /// `scheme://host:port` of an http(s) URL (brackets kept around an IPv6 address).
    static func origin(_ url: String) -> String {
        guard let parsed = HTTPURL(url) else { return "(a URL)" }
        let host = parsed.host.contains(":") ? "[\(parsed.host)]" : parsed.host
        return "\(parsed.scheme)://\(host):\(parsed.port)"
    }

    static func isHTTPURL(_ text: String) -> Bool { HTTPURL.isPlain(text) }

    /// Refuses a `command:` target the service's administrator did not name, naming those there
    /// are (a rule's and a contact's alike).
    public func requireKnown(commands: [String: String]) throws(ValidationError) {
        guard case .command(let name) = self, commands[name] == nil else { return }
        let known = commands.keys.sorted()
        throw ValidationError(
            "no command named \(name) on this service: "
                + (known.isEmpty
                    ? "its administrator has named none ([escalation.commands] in server.toml)"
                    : "there are \(known.joined(separator: ", "))"))
    }

    /// `url` with any `user:password@` of its authority shown as `…@`.
    public static func withoutCredentials(_ url: String) -> String {
        guard let scheme = url.range(of: "://") else { return url }
        let authority = url[scheme.upperBound...].prefix { !"/?#".contains($0) }
        guard let at = authority.lastIndex(of: "@") else { return url }
        return String(url[..<scheme.upperBound]) + "…" + String(url[at...])
    }

    static func quoted(_ text: String) -> String { "\"\(text.prefix(80))\"" }
}

/// One of the user's escalation rules (PROTOCOL.md §11): a notification of `priority` (and of `app`
/// and `group`, when given) that is still unhandled `afterSeconds` after it arrived is sent to
/// every target, and again every `repeatSeconds` while it stays unhandled.
public struct EscalationRule: Codable, Sendable, Equatable {
    public var id: String
    public var name: String
    public var afterSeconds: Int
    public var repeatSeconds: Int?
    /// `ntfy:URL`, `webhook:URL`, `command:NAME`, as written.
    public var targets: [String]
    /// `high` (the default) or `all`.
    public var priority: String
    public var app: String?
    public var group: String?
    public var createdDateTime: Date

    public init(
        id: String, name: String, afterSeconds: Int, repeatSeconds: Int? = nil, targets: [String], priority: String = "high",
        app: String? = nil, group: String? = nil, createdDateTime: Date
    ) {
        self.id = id
        self.name = name
        self.afterSeconds = afterSeconds
        self.repeatSeconds = repeatSeconds
        self.targets = targets
        self.priority = priority
        self.app = app
        self.group = group
        self.createdDateTime = createdDateTime
    }

    /// The rules' limits.
    public static let minimumSeconds = 5
    public static let maximumSeconds = 30 * 86_400
    public static let maxTargets = 10
    public static let maxRulesPerUser = 20

    /// Whether the rule is about `notification` (its priority, app and group), whatever its state.
    public func covers(_ notification: UserNotification) -> Bool {
        if priority == "high" && notification.priority != .high { return false }
        if let app, app.caseInsensitiveCompare(notification.targetHostName) != .orderedSame { return false }
        if let group, group != notification.groupName { return false }
        return true
    }

    /// What `notty escalate --list` shows of it, a line.
    public var summary: String {
        var parts = ["after \(DurationText.words(afterSeconds))"]
        if let repeatSeconds { parts.append("every \(DurationText.words(repeatSeconds)) again") }
        parts.append(priority == "all" ? "any priority" : "High only")
        if let app { parts.append("app \(app)") }
        if let group { parts.append("group \(group)") }
        let shown = targets.map { (try? EscalationTarget(parsing: $0))?.shown ?? $0 }
        return "\(name): " + parts.joined(separator: ", ") + " → " + shown.joined(separator: ", ")
    }
}

extension EscalationRule {
    /// The `POST /v1/me/escalations` body of a rule (what `notty escalate add` sends).
    public static func body(after: Int, targets: [String], priority: String, repeatSeconds: Int?, app: String?, group: String?, name: String?)
        -> JSONValue
    {
        var body: [String: JSONValue] = [
            "after": .number(Double(after)), "targets": .array(targets.map(JSONValue.string)), "priority": .string(priority.lowercased()),
        ]
        body["repeat"] = repeatSeconds.map { .number(Double($0)) }
        body["app"] = app.map(JSONValue.string)
        body["group"] = group.map(JSONValue.string)
        body["name"] = name.map(JSONValue.string)
        return .object(body)
    }

    /// A rule from a `POST /v1/me/escalations` body, checked against the limits; `commands`
    /// are the names the service's administrator gave (`command:NAME` must be one of them;
    /// nil: not known here, as on a device, and left to the service).
    ///
    /// `team`: the team whose policy the rule is, with its members' user names (PROTOCOL.md
    /// §13.2): its targets may also be `oncall`, `team` and `user:NAME` of a member.
    public init(body: Data, commands: [String: String]?, id: String, now: Date, team: (name: String, members: Set<String>)? = nil)
        throws(ValidationError)
    {
        try self.init(request: EscalationRuleRequest(body: body), commands: commands, id: id, now: now, team: team)
    }

    /// A rule from its request's fields, checked as ``init(body:commands:id:now:team:)`` says.
    public init(
        request: EscalationRuleRequest, commands: [String: String]?, id: String, now: Date, team: (name: String, members: Set<String>)? = nil
    ) throws(ValidationError) {
        // A team's first step may page at once (`--after 0s`); a user's own rule waits 5 s at least.
        let after = try Self.within(request.afterSeconds, "after", minimum: team == nil ? EscalationRule.minimumSeconds : 0)
        let repeatSeconds = try request.repeatSeconds.map { (seconds) throws(ValidationError) in try Self.within(seconds, "repeat") }
        let items = request.targets
        guard !items.isEmpty else {
            throw ValidationError(
                "targets is empty: give at least one target (ntfy:URL, webhook:URL or command:NAME\(team == nil ? "" : "; oncall, team or user:NAME"))"
            )
        }
        guard items.count <= EscalationRule.maxTargets else {
            throw ValidationError("targets has \(items.count) entries: a rule sends to at most \(EscalationRule.maxTargets)")
        }
        var targets: [String] = []
        for text in items {
            if let paging = PagingTarget(text) {
                guard let team else {
                    throw ValidationError(
                        "\(text) is for a team's policy (notty escalate add --team TEAM): a rule of your own names ntfy:URL, webhook:URL or command:NAME"
                    )
                }
                if case .user(let name) = paging, !team.members.contains(name) {
                    throw ValidationError("\"\(text)\": \(name) is not a member of \(team.name)")
                }
                targets.append(paging.text)
                continue
            }
            let target = try EscalationTarget(parsing: text)
            if let commands { try target.requireKnown(commands: commands) }
            targets.append(target.description)
        }
        let priority = request.priority
        guard priority == "high" || priority == "all" else { throw ValidationError("priority must be high or all") }
        let name = request.name ?? "rule-" + id.suffix(6)
        guard !name.contains(where: { $0.isWhitespace || $0.isNewline || $0.asciiValue.map { $0 < 0x20 } == true }) else {
            throw ValidationError("name must be one word (no spaces or control characters)")
        }
        self.init(
            id: id, name: name, afterSeconds: after, repeatSeconds: repeatSeconds, targets: targets, priority: priority,
            app: request.app, group: request.group, createdDateTime: now)
    }

    /// `seconds` of the member `key` when within the rules' limits.
    private static func within(_ seconds: Int, _ key: String, minimum: Int = EscalationRule.minimumSeconds) throws(ValidationError) -> Int {
        guard seconds >= minimum, seconds <= EscalationRule.maximumSeconds else {
            throw ValidationError("\(key) must be from \(minimum)s to \(DurationText.words(EscalationRule.maximumSeconds))")
        }
        return seconds
    }
}

/// The body of `POST /v1/me/escalations` (and of a team's step): each field of the right type,
/// as given; ``EscalationRule/init(request:commands:id:now:team:)`` checks them against the rules.
public struct EscalationRuleRequest: Sendable, Equatable {
    public var name: String?
    public var afterSeconds: Int
    public var repeatSeconds: Int?
    /// As written: `ntfy:URL`, `webhook:URL`, `command:NAME`; for a team, `oncall`, `team`, `user:NAME`.
    public var targets: [String]
    /// Lowercased; `high` when not given.
    public var priority: String
    public var app: String?
    public var group: String?

    public init(body: Data) throws(ValidationError) {
        let fields = try JSONFields(body: body)
        afterSeconds = try Self.duration(fields, "after", required: true)!
        repeatSeconds = try Self.duration(fields, "repeat", required: false)
        let items = try fields.array("targets", required: true)!
        var targets: [String] = []
        for (index, item) in items.enumerated() {
            guard case .string(let text) = item else {
                throw ValidationError("targets[\(index)] must be a string such as ntfy:https://ntfy.sh/my-alerts")
            }
            targets.append(text)
        }
        self.targets = targets
        priority = try fields.string("priority", max: 8)?.lowercased() ?? "high"
        app = try fields.string("app", max: 256)
        group = try fields.string("group", max: 256)
        name = try fields.string("name", max: 64)
    }

    /// A duration member: whole seconds, or text such as `10m` (the rule checks its limits).
    private static func duration(_ fields: JSONFields, _ key: String, required: Bool) throws(ValidationError) -> Int? {
        let seconds: Int
        switch fields.any(key) {
        case nil, .null?:
            if required { throw ValidationError("\(key) is required: a duration such as 10m") }
            return nil
        case .number(let value)?:
            guard value == value.rounded(), let whole = Int(exactly: value) else {
                throw ValidationError("\(key) must be whole seconds or a duration such as 10m")
            }
            seconds = whole
        case .string(let text)?:
            guard let parsed = DurationText.seconds(text) ?? (["0", "0s", "0m", "0h"].contains(text.lowercased()) ? 0 : nil) else {
                throw ValidationError("\(key) must be a duration such as 30s, 10m or 2h")
            }
            seconds = parsed
        default:
            throw ValidationError("\(key) must be whole seconds or a duration such as 10m")
        }
        return seconds
    }
}

/// `GET /v1/me/escalations`: the rules, and how each target of each went lately.
public struct EscalationRuleList: Codable, Sendable, Equatable {
    public var value: [EscalationRule]
    /// By rule id: each target's last delivery and last error (PROTOCOL.md §11, `escalate --list`).
    public var deliveries: [String: [EscalationTargetState]]?
    /// A team's policy: the members a page cannot reach (they have no contacts).
    public var unreachable: [String]?
    public init(value: [EscalationRule], deliveries: [String: [EscalationTargetState]]? = nil, unreachable: [String]? = nil) {
        self.value = value
        self.deliveries = deliveries
        self.unreachable = unreachable
    }
}

/// One target of a rule as `notty escalate --list` shows it: its last delivery, its last
/// error, and how many deliveries wait for it (retries included). The target is shown
/// without credentials.
public struct EscalationTargetState: Codable, Sendable, Equatable {
    public var target: String
    public var lastDelivery: Date?
    public var lastError: String?
    public var lastErrorAt: Date?
    public var pending: Int

    public init(target: String, lastDelivery: Date? = nil, lastError: String? = nil, lastErrorAt: Date? = nil, pending: Int = 0) {
        self.target = target
        self.lastDelivery = lastDelivery
        self.lastError = lastError
        self.lastErrorAt = lastErrorAt
        self.pending = pending
    }
}

/// `POST /v1/me/escalations/{id}/test`: how the test message went at each target.
public struct EscalationTestOutcome: Codable, Sendable, Equatable {
    /// The target, shown without credentials.
    public var target: String
    public var ok: Bool
    public var error: String?

    public init(target: String, ok: Bool, error: String? = nil) {
        self.target = target
        self.ok = ok
        self.error = error
    }
}

/// The answer of `POST /v1/me/escalations/{id}/test`.
public struct EscalationTestReport: Codable, Sendable, Equatable {
    public var value: [EscalationTestOutcome]
    public init(value: [EscalationTestOutcome]) { self.value = value }
}
