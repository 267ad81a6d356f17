import Foundation
import NottyCore

/// Gotify's `POST /message` (PROTOCOL.md §8.1), as pure functions: the app token and the message a
/// request carries. Bodies are JSON, urlencoded or multipart, with Gotify's fields.
public enum Gotify {
    /// The app token: `X-Gotify-Key`, else `?token=`, else `Authorization: Bearer`.
    public static func token(_ request: WebhookRequest) -> String? {
        for candidate in [request.header("X-Gotify-Key"), request.query["token"], request.bearerToken] {
            if let candidate, !candidate.isEmpty { return candidate }
        }
        return nil
    }

    /// The message of a request's body.
    public static func message(_ request: WebhookRequest) throws(WebhookError) -> GotifyMessage {
        let fields: [String: JSONValue]
        if let form = try FormFields.fields(of: request) {
            fields = form.mapValues { JSONValue.string($0) }
        } else if let json = request.json, case .object(let object) = json {
            fields = object
        } else if request.body.allSatisfy({ $0 == 0x20 || $0 == 0x0a || $0 == 0x0d || $0 == 0x09 }) {
            fields = [:]
        } else {
            throw WebhookError("the body must be a JSON object, or a form, with the field message")
        }
        func string(_ key: String) throws(WebhookError) -> String? {
            switch fields[key] {
            case nil, .null?: return nil
            case .string(let text)?: return text
            default: throw WebhookError("Field '\(key)' must be a string")
            }
        }
        guard let message = try string("message"), !message.trimmed(newlines: true).isEmpty else {
            throw WebhookError("Field 'message' is required")
        }
        let priority: Int?
        switch fields["priority"] {
        case nil, .null?: priority = nil
        case .number(let number)? where number == number.rounded() && number >= 0 && number <= 10: priority = Int(number)
        case .string(let text)? where Int(text.trimmed()).map({ (0...10).contains($0) }) == true:
            priority = Int(text.trimmed())
        default: throw WebhookError("Field 'priority' must be a whole number from 0 to 10")
        }
        var extras: JSONValue?
        switch fields["extras"] {
        case nil, .null?: extras = nil
        case .object?: extras = fields["extras"]
        case .string(let text)?:  // a form carries extras as JSON text
            guard let parsed = JSONParser.parse(Data(text.utf8)), case .object = parsed else {
                throw WebhookError("Field 'extras' must be a JSON object")
            }
            extras = parsed
        default: throw WebhookError("Field 'extras' must be a JSON object")
        }
        var click: String?
        if let url = extras?["client::notification"]?["click"]?.text("url") {
            guard LaunchURL.isValid(url) else {
                throw WebhookError("client::notification.click.url must be an absolute http or https URL of at most 2,048 characters")
            }
            click = url
        }
        return GotifyMessage(title: try string("title"), message: message, priority: priority, extras: extras, click: click)
    }
}

/// What a Gotify publish asks for.
public struct GotifyMessage: Sendable, Equatable {
    public var title: String?
    public var message: String
    /// 0–10; nil when not given (then normal: notty's None).
    public var priority: Int?
    public var extras: JSONValue?
    public var click: String?

    /// Gotify's 0–10 as notty's priority: 8–10 High, 4–7 None, 0–3 Low.
    public var level: Priority {
        guard let priority else { return .none }
        return priority >= 8 ? .high : priority >= 4 ? .none : .low
    }

    /// The notification it becomes (without a title, the message's first line is the title).
    public var notification: WebhookNotification {
        var (heading, body): (String?, String?) = (title, message)
        if heading?.trimmed().isEmpty ?? true { (heading, body) = TextHook.split(message) }
        return WebhookNotification(appNotificationId: nil, title: heading ?? "(untitled)", body: body, priority: level, launchUrl: click)
    }
}
