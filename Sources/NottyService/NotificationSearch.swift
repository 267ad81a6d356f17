import Foundation

/// What `GET /v1/me/notifications?search=TEXT` matches (PROTOCOL.md §14, the web inbox's `/`):
/// the notifications of the view whose title, body, app or group contains TEXT, letters of
/// either case alike, as the center's search. Both storages read it as a `LIKE` pattern with
/// `\` as its escape, so that `%` and `_` in TEXT match themselves.
public enum NotificationSearch {
    /// The longest TEXT taken.
    public static let maxLength = 200

    /// TEXT as a pattern: anywhere in the field, its `%`, `_` and `\` escaped.
    public static func pattern(_ text: String) -> String {
        var escaped = ""
        for character in text {
            if character == "%" || character == "_" || character == "\\" { escaped.append("\\") }
            escaped.append(character)
        }
        return "%" + escaped + "%"
    }

    /// The condition on a notifications row: `like` is the dialect's case-insensitive `LIKE`
    /// (SQLite's `LIKE`, PostgreSQL's `ILIKE`), `placeholder` the pattern's parameter.
    public static func condition(like: String, placeholder: String) -> String {
        "(" + ["title", "body", "host_name", "group_name"].map { "\($0) \(like) \(placeholder) ESCAPE '\\'" }.joined(separator: " OR ") + ")"
    }
}
