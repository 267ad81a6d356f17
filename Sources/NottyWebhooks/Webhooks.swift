import Foundation
import NottyCore

/// `POST /v1/hooks/{token}` (PROTOCOL.md §7.2) as pure functions: a request (bytes, headers, query)
/// in, the notifications it becomes out. The service checks the credential, limits and rate,
/// and writes; nothing here touches storage or the network.
public enum Webhooks {
    /// Every kind, in the order they are tried: the first that recognises a request parses it.
    /// A new kind is one file with a type conforming to ``WebhookKind`` and one line here.
    public static let kinds: [any WebhookKind.Type] = [
        GitHubHook.self,
        GitLabHook.self,
        AlertHook.self,
        FormHook.self,
        JSONHook.self,
        TextHook.self,
    ]

    /// The kind that claims `request`.
    public static func kind(of request: WebhookRequest) -> any WebhookKind.Type {
        kinds.first { $0.recognises(request) } ?? TextHook.self
    }

    /// The notifications `request` becomes (empty for an event that means nothing, such as
    /// GitHub's `ping`), or why it cannot be understood.
    public static func parse(_ request: WebhookRequest) throws(WebhookError) -> [WebhookNotification] {
        try kind(of: request).notifications(request)
    }

    /// The longest title a webhook makes (PROTOCOL.md §5's title limit); longer ones are cut.
    public static let maxTitle = 1024
}

/// One kind of sender: how it is recognised, how it proves it knows the secret, and what its
/// requests become.
public protocol WebhookKind: Sendable {
    /// Its name in answers and logs.
    static var name: String { get }
    /// Whether this kind claims the request (kinds are tried in ``Webhooks/kinds`` order).
    static func recognises(_ request: WebhookRequest) -> Bool
    /// The proof of the webhook's secret the sender puts in a request, when one is set.
    static func credential(_ request: WebhookRequest) -> WebhookCredential
    /// The notifications the request becomes.
    static func notifications(_ request: WebhookRequest) throws(WebhookError) -> [WebhookNotification]
}

extension WebhookKind {
    /// Senders without a scheme of their own send the secret as `Authorization: Bearer S`
    /// (Alertmanager's `http_config.authorization`, Grafana's and curl's headers).
    public static func credential(_ request: WebhookRequest) -> WebhookCredential {
        .token(request.bearerToken)
    }
}

/// How a request proves it knows the webhook's secret.
public enum WebhookCredential: Equatable, Sendable {
    /// The hex HMAC-SHA256 of the raw body keyed with the secret (GitHub's `sha256=…`).
    case hmacSHA256(hex: String?)
    /// The secret itself, as sent (GitLab's `X-Gitlab-Token`, a bearer token).
    case token(String?)
}

/// A webhook request as the parsers see it.
public struct WebhookRequest: Sendable {
    public let body: Data
    /// Header fields by lowercased name (the last of repeated ones).
    public let headers: [String: String]
    /// Query parameters (the last of repeated ones).
    public let query: [String: String]
    /// The body as JSON, when it is JSON (parsed once for every kind that looks).
    public let json: JSONValue?

    public init(body: Data, headers: [String: String], query: [String: String] = [:]) {
        self.body = body
        self.headers = Dictionary(headers.map { ($0.key.lowercased(), $0.value) }, uniquingKeysWith: { _, last in last })
        self.query = query
        let first = body.first { !(" \t\r\n" as String).utf8.contains($0) }
        json = first == UInt8(ascii: "{") || first == UInt8(ascii: "[") ? JSONParser.parse(body) : nil
    }

    public func header(_ name: String) -> String? { headers[name.lowercased()] }

    /// The token of an `Authorization: Bearer …` header.
    public var bearerToken: String? {
        guard let value = header("Authorization"), value.count > 7, value.prefix(7).lowercased() == "bearer " else { return nil }
        return String(value.dropFirst(7)).trimmed()
    }

    /// The body as JSON, which must be an object.
    func object(_ what: String) throws(WebhookError) -> JSONValue {
        guard let json, case .object = json else { throw WebhookError("\(what): the body is not a JSON object") }
        return json
    }
}

/// What a webhook request becomes: one notification to publish for the webhook's user.
public struct WebhookNotification: Sendable, Equatable {
    /// Publishing again with the same id updates in place; nil: the service makes a new one.
    public var appNotificationId: String?
    public var title: String
    public var body: String?
    public var priority: Priority
    public var groupName: String?
    public var launchUrl: String?
    public var expiration: Expiration?
    /// The sender says the matter is over (a resolved alert, a passing run after a failure):
    /// the notification is updated and moved to Dismissed on every device.
    public var resolved: Bool
    /// What the sender offers to do (PROTOCOL.md §12), at most 3.
    public var actions: [NotificationAction]?
    /// An alert's labels (Alertmanager, Grafana): what a silence of it matches.
    public var labels: [String: String]?
    /// The sender's own data (`payload.rawContent`): an Opsgenie alert's record.
    public var rawContent: String?

    public enum Expiration: Sendable, Equatable {
        case at(Date)
        case after(seconds: Int)
    }

    public init(
        appNotificationId: String?, title: String, body: String? = nil, priority: Priority = .none, groupName: String? = nil,
        launchUrl: String? = nil, expiration: Expiration? = nil, resolved: Bool = false, actions: [NotificationAction]? = nil
    ) {
        self.appNotificationId = appNotificationId
        let shaped = Text.title(title)
        self.title = shaped.isEmpty ? "(untitled)" : shaped
        self.body = body.flatMap { $0.isEmpty ? nil : $0 }
        self.priority = priority
        self.groupName = groupName
        self.launchUrl = launchUrl
        self.expiration = expiration
        self.resolved = resolved
        self.actions = actions.flatMap { $0.isEmpty ? nil : $0 }
    }
}

/// Why a webhook request cannot be understood (answered `400`).
public struct WebhookError: Error, Equatable, Sendable, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

// MARK: - Helpers the kinds share

extension JSONValue {
    /// The member `key` of an object (nil for anything else or a missing key).
    subscript(_ key: String) -> JSONValue? {
        guard case .object(let object) = self else { return nil }
        return object[key]
    }

    /// The member at a dotted path, e.g. `"repository.full_name"`.
    func at(_ path: String) -> JSONValue? {
        var value: JSONValue? = self
        for key in path.split(separator: ".") { value = value?[String(key)] }
        return value
    }

    /// A non-empty string at `path` (numbers are written as integers when whole).
    func text(_ path: String) -> String? {
        switch at(path) {
        case .string(let text)? where !text.isEmpty: return text
        case .number(let number)? where number.isFinite:
            return number == number.rounded() && abs(number) < 1e15 ? String(Int64(number)) : String(number)
        default: return nil
        }
    }

    /// An absolute http(s) URL at `path`, or nil (a sender's odd URL is dropped, not an error).
    func link(_ path: String) -> String? {
        guard let url = text(path), LaunchURL.isValid(url) else { return nil }
        return url
    }

    var arrayValue: [JSONValue]? {
        guard case .array(let items) = self else { return nil }
        return items
    }
}

extension StringProtocol {
    /// Without leading and trailing blanks (spaces and tabs; with `newlines`, line breaks too),
    /// as Foundation's `trimmingCharacters(in: .whitespaces)` would, but in Swift: on Linux
    /// that goes through NSString, a cost every publish paid several times.
    func trimmed(newlines: Bool = false) -> String {
        let scalars = unicodeScalars
        func blank(_ scalar: Unicode.Scalar) -> Bool {
            guard scalar.properties.isWhitespace else { return false }
            switch scalar.value {
            case 0x0A...0x0D, 0x85, 0x2028, 0x2029: return newlines
            default: return true
            }
        }
        var start = scalars.startIndex, end = scalars.endIndex
        while start < end, blank(scalars[start]) { start = scalars.index(after: start) }
        while end > start, blank(scalars[scalars.index(before: end)]) { end = scalars.index(before: end) }
        if start == scalars.startIndex && end == scalars.endIndex { return String(self) }
        var result = String.UnicodeScalarView()
        result.append(contentsOf: scalars[start..<end])
        return String(result)
    }
}

/// Text shaping for titles and ids.
enum Text {
    /// An object's members as body lines, `key: value` sorted by key (a value that is not a
    /// string as its JSON); nothing for anything but an object.
    static func detailLines(_ value: JSONValue?) -> [String] {
        guard case .object(let members)? = value else { return [] }
        return members.sorted(by: { $0.key < $1.key }).map { key, value in
            if case .string(let text) = value { "\(key): \(text)" } else { "\(key): \(value.jsonText)" }
        }
    }

    /// One line (line breaks and tabs become spaces), trimmed, at most ``Webhooks/maxTitle``
    /// characters (cut with "…").
    static func title(_ text: String) -> String {
        // Most titles are one line already: only those with a break or a tab are rebuilt.
        let oneLine = text.unicodeScalars.allSatisfy { !CharacterSet.newlines.contains($0) && $0 != "\t" }
        let line = (oneLine ? text : String(text.unicodeScalars.map { CharacterSet.newlines.contains($0) || $0 == "\t" ? " " : Character($0) }))
            .trimmed()
        guard line.count > Webhooks.maxTitle else { return line }
        return String(line.prefix(Webhooks.maxTitle - 1)) + "…"
    }

    /// A short stable id from parts (FNV-1a, 64 bits, hex): the same parts, the same id.
    static func digest(_ parts: [String]) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for part in parts {
            for byte in part.utf8 + [0] {
                hash ^= UInt64(byte)
                hash = hash &* 0x100_0000_01b3
            }
        }
        let hex = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }
}
