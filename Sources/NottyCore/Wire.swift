import Foundation

// MARK: - Requests the service reads

/// A request body that failed validation; `message` says what to fix.
public struct ValidationError: Error, Equatable, Sendable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// Limits of SPEC §5 that validation needs.
public struct FieldLimits: Sendable {
    public var appNotificationId = 256
    public var groupName = 256
    public var title = 1024
    public init() {}
}

/// Reads fields out of a parsed JSON object with messages a person can act on.
public struct JSONFields {
    public let object: [String: JSONValue]

    /// Parses a request body into an object. Arrays get "batches are not supported".
    public init(body: Data) throws(ValidationError) {
        guard let value = JSONParser.parse(body) else {
            throw ValidationError("the body is not valid JSON")
        }
        try self.init(value: value, what: "the body")
    }

    public init(value: JSONValue, what: String) throws(ValidationError) {
        switch value {
        case .object(let object): self.object = object
        case .array: throw ValidationError("\(what) is a JSON array: batches are not supported, send one object")
        default: throw ValidationError("\(what) must be a JSON object")
        }
    }

    private func present(_ key: String) -> JSONValue? {
        guard let value = object[key], value != .null else { return nil }
        return value
    }

    public func string(_ key: String, max: Int? = nil, required: Bool = false, allowEmpty: Bool = false) throws(ValidationError) -> String? {
        guard let value = present(key) else {
            if required { throw ValidationError("\(key) is required") }
            return nil
        }
        guard case .string(let text) = value else { throw ValidationError("\(key) must be a string") }
        if !allowEmpty && text.isEmpty { throw ValidationError("\(key) must not be empty") }
        if let max, text.unicodeScalars.count > max { throw ValidationError("\(key) is longer than \(max) characters") }
        // Neither store keeps it whole: PostgreSQL's text refuses it, SQLite's cuts the text there.
        if text.containsNUL { throw ValidationError("\(key) must not contain the character U+0000 (NUL)") }
        return text
    }

    /// An integer given as a JSON number or a numeric string (Graph's `displayTimeToLive: "60"`).
    public func integer(_ key: String) throws(ValidationError) -> Int? {
        guard let value = present(key) else { return nil }
        switch value {
        case .number(let number) where number == number.rounded() && abs(number) <= 2_147_483_647:
            return Int(number)
        case .string(let text):
            let digits = text.trimmingCharacters(in: .whitespaces)
            if !digits.isEmpty, digits.count <= 10, digits.allSatisfy(\.isASCIIDigit), let number = Int(digits), number <= 2_147_483_647 {
                return number
            }
        default: break
        }
        throw ValidationError("\(key) must be a whole number from 0 to 2147483647 (or a string of digits)")
    }

    public func time(_ key: String) throws(ValidationError) -> Date? {
        guard let value = present(key) else { return nil }
        guard case .string(let text) = value, let date = ISOTime.parse(text) else {
            throw ValidationError("\(key) must be an ISO 8601 time such as 2026-11-21T09:40:18.000Z")
        }
        return date
    }

    /// A time given as an ISO 8601 string or as milliseconds since 1970.
    public func clock(_ key: String) throws(ValidationError) -> Int64? {
        guard let value = present(key) else { return nil }
        switch value {
        case .number(let number) where number >= 0 && number < 1e15: return Int64(number)
        case .string(let text):
            if let date = ISOTime.parse(text) { return ISOTime.millis(date) }
        default: break
        }
        throw ValidationError("\(key) must be an ISO 8601 time or milliseconds since 1970")
    }

    public func enumeration<E: CaseInsensitiveEnum>(_ key: String, _ type: E.Type) throws(ValidationError) -> E? {
        guard let value = present(key) else { return nil }
        guard case .string(let text) = value, let result = E(spelling: text) else {
            throw ValidationError("\(key) must be one of \(E.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        return result
    }

    public func nested(_ key: String, required: Bool = false) throws(ValidationError) -> JSONFields? {
        guard let value = present(key) else {
            if required { throw ValidationError("\(key) is required") }
            return nil
        }
        guard case .object = value else { throw ValidationError("\(key) must be a JSON object") }
        return try JSONFields(value: value, what: key)
    }

    public func any(_ key: String) -> JSONValue? { present(key) }

    public func array(_ key: String, required: Bool = false) throws(ValidationError) -> [JSONValue]? {
        guard let value = present(key) else {
            if required { throw ValidationError("\(key) is required") }
            return nil
        }
        guard case .array(let items) = value else { throw ValidationError("\(key) must be a JSON array") }
        return items
    }
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

    public init(
        targetHostName: String? = nil, appNotificationId: String, groupName: String? = nil, priority: Priority? = nil,
        payload: NotificationPayload, displayTimeToLive: Int? = nil, expirationDateTime: Date? = nil,
        targetPolicy: JSONValue? = nil, fallbackPolicy: JSONValue? = nil, launchUrl: String? = nil
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

// MARK: - Responses the service writes

/// `GET /v1/me/notifications/changes`.
public struct ChangesPage: Codable, Sendable, Equatable {
    public var changes: [UserNotification]
    public var cursor: String
    public var hasMore: Bool
    public init(changes: [UserNotification], cursor: String, hasMore: Bool) {
        self.changes = changes
        self.cursor = cursor
        self.hasMore = hasMore
    }
}

/// `GET /v1/me/notifications?view=`.
public struct NotificationList: Codable, Sendable, Equatable {
    public var value: [UserNotification]
    public init(value: [UserNotification]) { self.value = value }
}

/// One result of `POST /v1/me/notifications/batch`.
public struct MutationResult: Codable, Sendable, Equatable {
    public var id: String
    public var mutationId: String?
    public var status: Int
    public var notification: UserNotification?
    public var error: ErrorBody?

    public init(id: String, mutationId: String?, status: Int, notification: UserNotification? = nil, error: ErrorBody? = nil) {
        self.id = id
        self.mutationId = mutationId
        self.status = status
        self.notification = notification
        self.error = error
    }
}

public struct BatchResponse: Codable, Sendable, Equatable {
    public var results: [MutationResult]
    public init(results: [MutationResult]) { self.results = results }
}

/// Graph's error envelope: `{"error":{"code","message","innerError":{"request-id","date"}}}`.
public struct ErrorEnvelope: Codable, Sendable, Equatable {
    public var error: ErrorBody
    public init(error: ErrorBody) { self.error = error }
}

public struct ErrorBody: Codable, Sendable, Equatable {
    public struct Inner: Codable, Sendable, Equatable {
        public var requestId: String
        public var date: String
        enum CodingKeys: String, CodingKey {
            case requestId = "request-id"
            case date
        }
        public init(requestId: String, date: String) {
            self.requestId = requestId
            self.date = date
        }
    }

    public var code: String
    public var message: String
    public var innerError: Inner?
    public init(code: String, message: String, innerError: Inner? = nil) {
        self.code = code
        self.message = message
        self.innerError = innerError
    }
}

/// `POST /v1/me/subscriptions` answer.
public struct SubscriptionInfo: Codable, Sendable, Equatable {
    public var userNotificationSubscriptionId: String
    public var expirationDateTime: Date
    public var deviceId: String
    public var targetHostName: String?
    public var deviceName: String?
    public var platform: String?
    /// When it was made (absent from services before devices were listed).
    public var createdDateTime: Date?
    /// The last request made with the device's tokens, to the minute; `null` before its first.
    public var lastSeenDateTime: Date?
    /// A webhook's URL (SPEC §7.2): only in the answer that made it (the service keeps a hash).
    public var webhookUrl: String?
    /// Whether a webhook checks a secret (webhooks only).
    public var hasSecret: Bool?
    /// An ntfy topic's URL (SPEC §8.2, platform `ntfy`): only in the answer that made it.
    public var topicUrl: String?
    public init(userNotificationSubscriptionId: String, expirationDateTime: Date, deviceId: String, targetHostName: String?, deviceName: String?,
                platform: String?, createdDateTime: Date? = nil, lastSeenDateTime: Date? = nil, webhookUrl: String? = nil, hasSecret: Bool? = nil,
                topicUrl: String? = nil) {
        self.userNotificationSubscriptionId = userNotificationSubscriptionId
        self.expirationDateTime = expirationDateTime
        self.deviceId = deviceId
        self.targetHostName = targetHostName
        self.deviceName = deviceName
        self.platform = platform
        self.createdDateTime = createdDateTime
        self.lastSeenDateTime = lastSeenDateTime
        self.webhookUrl = webhookUrl
        self.hasSecret = hasSecret
        self.topicUrl = topicUrl
    }

    /// A device's own registration (no app): what `notty devices` lists as a device.
    public var isDevice: Bool { targetHostName == nil }
    /// A webhook (SPEC §7.2).
    public var isWebhook: Bool { platform == "webhook" }
}

/// `POST /v1/hooks/{token}`'s answer: the notifications created or updated, in order.
public struct WebhookAnswer: Codable, Sendable, Equatable {
    public var ids: [String]
    public init(ids: [String]) { self.ids = ids }
}

public struct SubscriptionList: Codable, Sendable, Equatable {
    public var value: [SubscriptionInfo]
    public init(value: [SubscriptionInfo]) { self.value = value }
}

/// `GET /v1/me`.
public struct Me: Codable, Sendable, Equatable {
    public var id: String
    public var userName: String
    public var displayName: String
    public init(id: String, userName: String, displayName: String) {
        self.id = id
        self.userName = userName
        self.displayName = displayName
    }
}

/// The OAuth 2.0 token answer (RFC 6749 §5.1).
public struct TokenResponse: Codable, Sendable, Equatable {
    public var token_type: String
    public var expires_in: Int
    public var access_token: String
    public var refresh_token: String?
    public init(expiresIn: Int, accessToken: String, refreshToken: String?) {
        token_type = "Bearer"
        expires_in = expiresIn
        access_token = accessToken
        refresh_token = refreshToken
    }
}

/// A doorbell frame (SPEC §3).
public struct DoorbellFrame: Codable, Sendable, Equatable {
    public var type: String
    public var cursor: String
    public var previousCursor: String?
    public var changes: [UserNotification]?

    public static func changed(cursor: String) -> DoorbellFrame {
        DoorbellFrame(type: "changed", cursor: cursor, previousCursor: nil, changes: nil)
    }

    public init(type: String, cursor: String, previousCursor: String?, changes: [UserNotification]?) {
        self.type = type
        self.cursor = cursor
        self.previousCursor = previousCursor
        self.changes = changes
    }
}

extension Character {
    /// 0–9 only (not other scripts' digits).
    public var isASCIIDigit: Bool { isASCII && isWholeNumber }
}

/// The rule for `launchUrl` (SPEC §7.1): an absolute `http` or `https` URL with a host, at most
/// 2,048 characters, nothing a shell or a terminal would read specially (no spaces or controls).
public enum LaunchURL {
    public static func isValid(_ text: String) -> Bool {
        guard text.count <= 2048, !text.unicodeScalars.contains(where: { $0.value <= 0x20 || (0x7F..<0xA0).contains($0.value) }),
              let components = URLComponents(string: text), let scheme = components.scheme?.lowercased(),
              scheme == "http" || scheme == "https", let host = components.host, !host.isEmpty
        else { return false }
        return true
    }
}

extension String {
    /// Whether the text holds U+0000, which neither store keeps whole (PostgreSQL's text
    /// refuses it, SQLite's cuts the text there): publishing and ids refuse it.
    public var containsNUL: Bool { unicodeScalars.contains("\0") }
}

// MARK: - Reading what the service writes, without JSONDecoder

/// The notification fields of SPEC §1 as the service writes them, read from parsed JSON.
/// Change pages are read this way: `JSONDecoder` spent about 10 µs on each notification, as
/// much as a first sync's writing it to the store. It reads what the `Decodable` conformance
/// reads (both are tested against each other), and keeps every string as it is: this checks
/// types, not the service's publishing rules.
private struct WireObject {
    /// The members in the order given: a notification has about 17, found by comparing keys,
    /// which costs less than hashing them into a dictionary and looking them up.
    let members: [(key: String, value: JSONValue)]
    let what: String

    init(members: [(key: String, value: JSONValue)], _ what: String) {
        self.members = members
        self.what = what
    }

    init(_ value: JSONValue?, _ what: String) throws(ValidationError) {
        guard case .object(let object)? = value else { throw ValidationError("\(what) must be a JSON object") }
        self.init(members: object.map { (key: $0.key, value: $0.value) }, what)
    }

    /// Reads the object at the parser's position member by member.
    init(reading parser: inout JSONParser, _ what: String) throws(ValidationError) {
        var members: [(key: String, value: JSONValue)] = []
        members.reserveCapacity(20)
        guard parser.readObject({ key, parser in
            guard let value = parser.readValue() else { return false }
            members.append((key, value))
            return true
        }) else { throw ValidationError("\(what) must be a JSON object") }
        self.init(members: members, what)
    }

    private func present(_ key: String) -> JSONValue? {
        // The last one wins, as in a dictionary built from the text.
        guard let value = members.last(where: { $0.key == key })?.value, value != .null else { return nil }
        return value
    }

    func required<T>(_ key: String, _ read: (String) throws(ValidationError) -> T?) throws(ValidationError) -> T {
        guard let value = try read(key) else { throw ValidationError("\(key) of \(what) is required") }
        return value
    }

    func string(_ key: String) throws(ValidationError) -> String? {
        guard let value = present(key) else { return nil }
        guard case .string(let text) = value else { throw ValidationError("\(key) of \(what) must be a string") }
        return text
    }

    func integer(_ key: String) throws(ValidationError) -> Int? {
        guard let value = present(key) else { return nil }
        guard case .number(let number) = value, number == number.rounded(), abs(number) < 9e15 else {
            throw ValidationError("\(key) of \(what) must be a whole number")
        }
        return Int(number)
    }

    func bool(_ key: String) throws(ValidationError) -> Bool? {
        guard let value = present(key) else { return nil }
        guard case .bool(let flag) = value else { throw ValidationError("\(key) of \(what) must be true or false") }
        return flag
    }

    func time(_ key: String) throws(ValidationError) -> Date? {
        guard let text = try string(key) else { return nil }
        guard let date = ISOTime.parse(text) else { throw ValidationError("\(key) of \(what) must be an ISO 8601 time, got \"\(text)\"") }
        return date
    }

    func enumeration<E: CaseInsensitiveEnum>(_ key: String, _ type: E.Type) throws(ValidationError) -> E? {
        guard let text = try string(key) else { return nil }
        guard let value = E(spelling: text) else {
            throw ValidationError("\(key) of \(what): \"\(text)\" is not one of \(E.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        return value
    }

    func nested(_ key: String) throws(ValidationError) -> WireObject? {
        guard let value = present(key) else { return nil }
        return try WireObject(value, "\(key) of \(what)")
    }

    func any(_ key: String) -> JSONValue? { present(key) }
}

extension UserNotification {
    /// Reads a notification from its JSON object (SPEC §1), as the service writes it.
    fileprivate init(wire f: WireObject) throws(ValidationError) {
        let payload = try f.required("payload") { key throws(ValidationError) in try f.nested(key) }
        let visual = try payload.nested("visualContent")
        self.init(
            id: try f.required("id", f.string), appNotificationId: try f.required("appNotificationId", f.string),
            targetHostName: try f.required("targetHostName", f.string), groupName: try f.string("groupName"),
            priority: try f.required("priority") { key throws(ValidationError) in try f.enumeration(key, Priority.self) },
            payload: NotificationPayload(
                rawContent: try payload.string("rawContent"),
                visualContent: try visual.map { v throws(ValidationError) in VisualContent(title: try v.required("title", v.string), body: try v.string("body")) }),
            displayTimeToLive: try f.integer("displayTimeToLive"),
            expirationDateTime: try f.required("expirationDateTime", f.time), createdDateTime: try f.required("createdDateTime", f.time),
            lastModifiedDateTime: try f.required("lastModifiedDateTime", f.time),
            status: try f.required("status") { key throws(ValidationError) in try f.enumeration(key, NotificationStatus.self) },
            readState: try f.required("readState") { key throws(ValidationError) in try f.enumeration(key, ReadState.self) },
            userActionState: try f.required("userActionState") { key throws(ValidationError) in try f.enumeration(key, UserActionState.self) },
            snoozedUntil: try f.time("snoozedUntil"), targetPolicy: f.any("targetPolicy"), fallbackPolicy: f.any("fallbackPolicy"),
            launchUrl: try f.string("launchUrl"))
    }
}

extension ChangesPage {
    /// Reads a page of the change feed (`GET /v1/me/notifications/changes`) from its body.
    /// The notifications are read member by member, never as a whole ``JSONValue``.
    public init(wire body: Data) throws(ValidationError) {
        var parser = JSONParser(data: body)
        var changes: [UserNotification] = []
        var others: [(key: String, value: JSONValue)] = []  // cursor, hasMore
        var sawChanges = false
        var failure: ValidationError?
        let read = parser.readObject { key, parser in
            switch key {
            case "changes":
                sawChanges = true
                changes.removeAll()  // given twice, the last one counts, as in JSONParser's objects
                return parser.readArray { parser in
                    do throws(ValidationError) {
                        changes.append(try UserNotification(wire: try WireObject(reading: &parser, "a notification")))
                        return true
                    } catch {
                        failure = error
                        return false
                    }
                }
            default:
                guard let value = parser.readValue() else { return false }
                others.append((key, value))
                return true
            }
        }
        if let failure { throw failure }
        guard read, parser.atEnd() else {
            guard JSONParser.isValid(body) else { throw ValidationError("the page is not valid JSON") }
            throw ValidationError(sawChanges ? "changes of the page must be a JSON array" : "the page must be a JSON object")
        }
        guard sawChanges else { throw ValidationError("changes of the page is required") }
        let f = WireObject(members: others, "the page")
        self.init(changes: changes, cursor: try f.required("cursor", f.string), hasMore: try f.required("hasMore", f.bool))
    }
}
