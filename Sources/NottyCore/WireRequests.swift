import Foundation

// The bodies the service reads from clients (PROTOCOL.md §2), validated with messages a person can
// act on. Read with ``JSONFields`` (`JSONFields.swift`).

/// A request body that failed validation; `message` says what to fix.
public struct ValidationError: Error, Equatable, Sendable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// Limits of PROTOCOL.md §5 that validation needs.
public struct FieldLimits: Sendable {
    public var appNotificationId = 256
    public var groupName = 256
    public var title = 1024
    public init() {}
}

/// The body of `POST /beta/me/notifications`: the app-settable fields of §1, validated.
public struct PublishRequest: Sendable, Equatable {
    public var targetHostName: String?
    public var appNotificationId: String
    public var groupName: String?
    public var priority: Priority?
    public var payload: NotificationPayload
    public var displayTimeToLive: Int?
    public var expirationDateTime: Date?
    public var targetPolicy: JSONValue?
    public var fallbackPolicy: JSONValue?
    public var launchUrl: String?
    /// What the publisher offers to do (PROTOCOL.md §12): an extension field, ntfy's objects.
    public var actions: [NotificationAction]?

    public init(
        targetHostName: String? = nil, appNotificationId: String, groupName: String? = nil, priority: Priority? = nil,
        payload: NotificationPayload, displayTimeToLive: Int? = nil, expirationDateTime: Date? = nil,
        targetPolicy: JSONValue? = nil, fallbackPolicy: JSONValue? = nil, launchUrl: String? = nil, actions: [NotificationAction]? = nil
    ) {
        self.targetHostName = targetHostName
        self.appNotificationId = appNotificationId
        self.groupName = groupName
        self.priority = priority
        self.payload = payload
        self.displayTimeToLive = displayTimeToLive
        self.expirationDateTime = expirationDateTime
        self.targetPolicy = targetPolicy
        self.fallbackPolicy = fallbackPolicy
        self.launchUrl = launchUrl
        self.actions = actions
    }

    /// Validates a publish body. Unknown fields are ignored, as Graph did.
    public init(body: Data, limits: FieldLimits = FieldLimits()) throws(ValidationError) {
        let fields = try JSONFields(body: body)
        appNotificationId = try fields.string("appNotificationId", max: limits.appNotificationId, required: true)!
        targetHostName = try fields.string("targetHostName", max: 253)
        groupName = try fields.string("groupName", max: limits.groupName, allowEmpty: true)
        priority = try fields.enumeration("priority", Priority.self)
        displayTimeToLive = try fields.integer("displayTimeToLive")
        if let ttl = displayTimeToLive, ttl < 0 { throw ValidationError("displayTimeToLive must not be negative") }
        expirationDateTime = try fields.time("expirationDateTime")
        let payloadFields = try fields.nested("payload", required: true)!
        let raw = try payloadFields.string("rawContent", allowEmpty: true)
        var visual: VisualContent?
        if let visualFields = try payloadFields.nested("visualContent") {
            let title = try visualFields.string("title", max: limits.title, required: true)!
            visual = VisualContent(title: title, body: try visualFields.string("body", allowEmpty: true))
        }
        if raw == nil && visual == nil {
            throw ValidationError("payload needs rawContent or visualContent")
        }
        payload = NotificationPayload(rawContent: raw, visualContent: visual)
        if let policy = fields.any("targetPolicy") {
            guard case .object = policy else { throw ValidationError("targetPolicy must be a JSON object") }
            targetPolicy = policy
        }
        if let policy = fields.any("fallbackPolicy") {
            guard case .object = policy else { throw ValidationError("fallbackPolicy must be a JSON object") }
            fallbackPolicy = policy
        }
        if let url = try fields.string("launchUrl", max: 2048) {
            guard LaunchURL.isValid(url) else { throw ValidationError("launchUrl must be an absolute http or https URL") }
            launchUrl = url
        }
        if let value = fields.any("actions"), value != .null {
            let parsed = try NotificationAction.parse(json: value)
            actions = parsed.isEmpty ? nil : parsed
        }
    }

    /// The priority to store: as given, else High with a visual toast, else None.
    public var effectivePriority: Priority {
        priority ?? (payload.visualContent != nil ? .high : .none)
    }

    /// The JSON body an app server sends.
    public func jsonBody() -> Data {
        var object: [String: JSONValue] = ["appNotificationId": .string(appNotificationId)]
        if let targetHostName { object["targetHostName"] = .string(targetHostName) }
        if let groupName { object["groupName"] = .string(groupName) }
        if let priority { object["priority"] = .string(priority.rawValue) }
        if let displayTimeToLive { object["displayTimeToLive"] = .number(Double(displayTimeToLive)) }
        if let expirationDateTime { object["expirationDateTime"] = .string(ISOTime.format(expirationDateTime)) }
        var payloadObject: [String: JSONValue] = [:]
        if let raw = payload.rawContent { payloadObject["rawContent"] = .string(raw) }
        if let visual = payload.visualContent {
            var v: [String: JSONValue] = ["title": .string(visual.title)]
            if let body = visual.body { v["body"] = .string(body) }
            payloadObject["visualContent"] = .object(v)
        }
        object["payload"] = .object(payloadObject)
        if let launchUrl { object["launchUrl"] = .string(launchUrl) }
        if let actions, !actions.isEmpty { object["actions"] = .array(actions.map(\.storedValue)) }
        if let targetPolicy { object["targetPolicy"] = targetPolicy }
        if let fallbackPolicy { object["fallbackPolicy"] = fallbackPolicy }
        return Data(JSONValue.object(object).jsonText.utf8)
    }
}

/// One state change a device sends (`PATCH` body, or one item of a batch).
public struct Mutation: Sendable, Equatable {
    public enum Operation: String, Sendable, CaseInsensitiveEnum {
        case patch, delete
    }

    public var id: String
    public var operation: Operation
    public var change: StateChange
    /// Hybrid logical clock of the change, milliseconds since 1970; `nil`: the service's clock.
    public var changedAt: Int64?
    public var mutationId: String?
    /// Who makes the change, as a team notification shows it, or the tool that handled a
    /// user's own through an incident door (set by the service, never read from the wire).
    public var by: ChangedBy?

    public init(id: String, operation: Operation = .patch, change: StateChange = StateChange(), changedAt: Int64? = nil, mutationId: String? = nil) {
        self.id = id
        self.operation = operation
        self.change = change
        self.changedAt = changedAt
        self.mutationId = mutationId
    }

    /// Reads a PATCH body (`id` from the path) or a batch item (`id` in the object).
    public init(fields: JSONFields, id pathId: String?) throws(ValidationError) {
        if let pathId {
            id = pathId
        } else {
            id = try fields.string("id", max: 64, required: true)!
        }
        operation = try fields.enumeration("op", Operation.self) ?? .patch
        changedAt = try fields.clock("changedAt")
        mutationId = try fields.string("mutationId", max: 128)
        let read = try fields.enumeration("readState", ReadState.self)
        var action = try fields.enumeration("userActionState", UserActionState.self)
        let until = try fields.time("snoozedUntil")
        if until != nil && action == nil { action = .snoozed }
        if action == .snoozed && until == nil {
            throw ValidationError("snoozedUntil is required when userActionState is Snoozed")
        }
        if action != nil && action != .snoozed && until != nil {
            throw ValidationError("snoozedUntil goes only with userActionState Snoozed")
        }
        change = StateChange(readState: read, userActionState: action, snoozedUntil: until)
        if operation == .patch && read == nil && action == nil {
            throw ValidationError("nothing to change: give readState, userActionState or snoozedUntil")
        }
    }

    /// The JSON object for a batch item.
    public func jsonObject() -> JSONValue {
        var object: [String: JSONValue] = ["id": .string(id)]
        if operation == .delete { object["op"] = .string("delete") }
        if let read = change.readState { object["readState"] = .string(read.rawValue) }
        if let action = change.userActionState { object["userActionState"] = .string(action.rawValue) }
        if let until = change.snoozedUntil { object["snoozedUntil"] = .string(ISOTime.format(until)) }
        if let changedAt { object["changedAt"] = .string(ISOTime.format(ISOTime.date(millis: changedAt))) }
        if let mutationId { object["mutationId"] = .string(mutationId) }
        return .object(object)
    }
}

extension Character {
    /// 0–9 only (not other scripts' digits).
    public var isASCIIDigit: Bool { isASCII && isWholeNumber }
}

/// An absolute `http` or `https` URL with a host: the one rule every URL given to notty is held
/// to (a link, an escalation target, an action, `notty login`'s, an outbound request), each use
/// adding its own where it needs more (``LaunchURL``).
public struct HTTPURL: Sendable, Equatable {
    /// `http` or `https`.
    public let scheme: String
    /// As written (an IPv6 address without its brackets), lower case.
    public let host: String
    /// As written, its case kept (an IPv6 address without its brackets).
    public let writtenHost: String
    /// The port given, else the scheme's (80, 443).
    public let port: Int
    /// The port as written (nil: none was).
    public let writtenPort: Int?
    /// The path (percent-decoded; empty when none).
    public let path: String
    /// Whether it names a user or a password (`https://user:pass@host/`).
    public let hasCredentials: Bool

    public init?(_ text: String) {
        guard let components = URLComponents(string: text), let scheme = components.scheme?.lowercased(), scheme == "http" || scheme == "https",
            let written = components.host, !written.isEmpty
        else { return nil }
        self.scheme = scheme
        writtenHost = written.hasPrefix("[") && written.hasSuffix("]") ? String(written.dropFirst().dropLast()) : written
        host = writtenHost.lowercased()
        writtenPort = components.port
        port = components.port ?? (scheme == "https" ? 443 : 80)
        path = components.path
        hasCredentials = components.user != nil || components.password != nil
    }

    /// The host and the port as written, as a `Host` header or an origin has them (an IPv6
    /// address in brackets).
    public var authority: String { bracketedHost + (writtenPort.map { ":\($0)" } ?? "") }

    /// Its origin (RFC 6454): the scheme and the authority, the scheme's own port left out.
    public var origin: String { "\(scheme)://\(bracketedHost)" + (port == (scheme == "https" ? 443 : 80) ? "" : ":\(port)") }

    /// The host as a URL writes it (an IPv6 address in brackets).
    private var bracketedHost: String { host.contains(":") ? "[\(host)]" : host }

    /// Whether `text` is one, at most 2,048 characters, with nothing a shell or a terminal
    /// would read specially (no spaces or controls): what a person or a publisher may give.
    public static func isPlain(_ text: String) -> Bool {
        text.count <= 2048 && !text.unicodeScalars.contains(where: { $0.value <= 0x20 || (0x7F..<0xA0).contains($0.value) }) && HTTPURL(text) != nil
    }
}

/// The rule for `launchUrl` (PROTOCOL.md §7.1): ``HTTPURL/isPlain(_:)``.
public enum LaunchURL {
    public static func isValid(_ text: String) -> Bool { HTTPURL.isPlain(text) }
}

extension String {
    /// Whether the text holds U+0000, which neither store keeps whole (PostgreSQL's text
    /// refuses it, SQLite's cuts the text there): publishing and ids refuse it.
    public var containsNUL: Bool { unicodeScalars.contains("\0") }
}
