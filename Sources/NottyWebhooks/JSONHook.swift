import Foundation
import NottyCore

/// Any other JSON object, for scripts and tools with a JSON body of their own:
/// `{"title":…, "body"|"message":…, "priority":…, "group":…, "id":…, "url":…, "expires":…}`.
public enum JSONHook: WebhookKind {
    public static let name = "json"

    public static func recognises(_ request: WebhookRequest) -> Bool {
        if case .object? = request.json { return true }
        return false
    }

    public static func notifications(_ request: WebhookRequest) throws(WebhookError) -> [WebhookNotification] {
        [try notification(try request.object("JSON"), what: "a JSON body")]
    }

    /// The notification of an object of these fields (a JSON body, or a form's fields as
    /// strings), with `actions` (ntfy's objects, PROTOCOL.md §12) in a JSON body.
    static func notification(_ json: JSONValue, what: String) throws(WebhookError) -> WebhookNotification {
        func string(_ key: String) throws(WebhookError) -> String? {
            switch json[key] {
            case nil, .null?: return nil
            case .string(let text)?: return text.trimmed(newlines: true).isEmpty ? nil : text
            default: throw WebhookError("\(key) must be a string")
            }
        }
        var title = try string("title")
        let message = try string("message")
        var body = try string("body")
        if body == nil { body = message }
        if title == nil, let text = body {
            (title, body) = TextHook.split(text)
        }
        guard let title else { throw WebhookError("\(what) needs a title, a body or a message") }
        return WebhookNotification(
            appNotificationId: try string("id"), title: title, body: body,
            priority: try json["priority"].map { value throws(WebhookError) in try priority(value) } ?? .none,
            groupName: try string("group"), launchUrl: try string("url").map { url throws(WebhookError) in try link(url) },
            expiration: try expiration(json["expires"]), actions: try actions(json["actions"]))
    }

    /// An `actions` member: ntfy's array of objects.
    static func actions(_ value: JSONValue?) throws(WebhookError) -> [NotificationAction]? {
        guard let value, value != .null else { return nil }
        do {
            return try NotificationAction.parse(json: value)
        } catch {
            throw WebhookError(error.message)
        }
    }

    /// `High`/`None`/`Low` (any case), `high`/`normal`/`low`, or 1–5 (1–2 low, 3 normal, 4–5 high,
    /// as ntfy and Gotify count), as a number or a string.
    static func priority(_ value: JSONValue) throws(WebhookError) -> Priority {
        let problem = WebhookError("priority must be High, None or Low (also high, normal, low), or 1 to 5")
        switch value {
        case .null: return .none
        case .number(let number):
            guard number == number.rounded(), number >= 1, number <= 5 else { throw problem }
            return number <= 2 ? .low : number == 3 ? .none : .high
        case .string(let text):
            if let level = Double(text.trimmed()) { return try priority(.number(level)) }
            if let priority = Priority(spelling: text) { return priority }
            if text.lowercased() == "normal" { return .none }
            throw problem
        default:
            throw problem
        }
    }

    static func link(_ url: String) throws(WebhookError) -> String {
        guard LaunchURL.isValid(url) else { throw WebhookError("url must be an absolute http or https URL of at most 2,048 characters") }
        return url
    }

    /// Seconds from now (a number or a string of digits), or an ISO 8601 time.
    private static func expiration(_ value: JSONValue?) throws(WebhookError) -> WebhookNotification.Expiration? {
        let problem = WebhookError("expires must be a number of seconds or an ISO 8601 time such as 2026-11-21T09:40:18Z")
        switch value {
        case nil, .null?: return nil
        case .number(let seconds)?:
            guard seconds == seconds.rounded(), seconds >= 1, seconds <= 2_147_483_647 else { throw problem }
            return .after(seconds: Int(seconds))
        case .string(let text)?:
            if let seconds = Int(text), seconds >= 1 { return .after(seconds: seconds) }
            guard let date = ISOTime.parse(text) else { throw problem }
            return .at(date)
        default:
            throw problem
        }
    }
}
