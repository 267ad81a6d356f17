import Foundation
import NottyCore

/// Anything else that is UTF-8 text (`curl -d 'Backup failed' URL`): the first line is the
/// title, the rest the body. Query parameters `title`, `priority`, `group`, `id` and `url`
/// set those fields.
public enum TextHook: WebhookKind {
    public static let name = "text"

    public static func recognises(_ request: WebhookRequest) -> Bool { true }

    public static func notifications(_ request: WebhookRequest) throws(WebhookError) -> [WebhookNotification] {
        guard let text = String(validating: request.body, as: UTF8.self) else {
            throw WebhookError("the body is not UTF-8 text, JSON or a known sender's payload")
        }
        var (title, body) = split(text)
        let query = request.query
        if let given = query["title"], !given.isEmpty {
            // The whole text is the body when the title comes from the query.
            let whole = text.trimmed(newlines: true)
            (title, body) = (given, whole.isEmpty ? nil : whole)
        }
        guard let title else { throw WebhookError("the body is empty: send the notification's text (first line: the title)") }
        return [
            WebhookNotification(
                appNotificationId: query["id"].flatMap { $0.isEmpty ? nil : $0 }, title: title, body: body,
                priority: try query["priority"].map { value throws(WebhookError) in try JSONHook.priority(.string(value)) } ?? .none,
                groupName: query["group"].flatMap { $0.isEmpty ? nil : $0 },
                launchUrl: try query["url"].map { url throws(WebhookError) in try JSONHook.link(url) })
        ]
    }

    /// The first non-blank line and the rest (nil when blank).
    static func split(_ text: String) -> (title: String?, body: String?) {
        let trimmed = text.trimmed(newlines: true)
        guard !trimmed.isEmpty else { return (nil, nil) }
        guard let end = trimmed.firstIndex(where: \.isNewline) else { return (trimmed, nil) }
        let rest = trimmed[end...].trimmed(newlines: true)
        return (String(trimmed[..<end]), rest.isEmpty ? nil : rest)
    }
}
