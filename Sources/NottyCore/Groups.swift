import Foundation

/// The center's group rows (`=`): notifications fold by their group name, or by their app when
/// they have none. One group of a view is a search, `group:KEY`, that matches exactly the
/// notifications of that group (so every windowed read of the store serves an open group).
public enum GroupQuery {
    /// Not the query language's `group:` field (PROTOCOL.md §17): a group row's key is its group
    /// name, else its app.
    public static let prefix = "groupkey:"

    /// The search that shows exactly the group `key`.
    public static func query(for key: String) -> String { prefix + key }

    /// The group a search names (`group:KEY`), nil for a text search.
    public static func key(in query: String) -> String? {
        let text = query.trimmingCharacters(in: .whitespaces)
        guard text.hasPrefix(prefix) else { return nil }
        let key = text.dropFirst(prefix.count).trimmingCharacters(in: .whitespaces)
        return key.isEmpty ? nil : key
    }

    /// ``UserNotification/groupKey`` as SQL over the columns `group_name` and `app`.
    public static let sqlKey = "coalesce(nullif(group_name, ''), app)"
}

extension UserNotification {
    /// The group row the notification folds into: its group name, else its app.
    public var groupKey: String {
        if let groupName, !groupName.isEmpty { return groupName }
        return targetHostName
    }
}

/// One group row: the notifications of a view (matching its search) that share a group key.
public struct NotificationGroup: Sendable, Equatable {
    /// ``UserNotification/groupKey``.
    public var key: String
    /// The apps of the group's notifications, when they are one app (shown before the key).
    public var app: String?
    public var count: Int
    public var unread: Int
    /// The creation time of its newest notification.
    public var newest: Date
    /// Its newest notification's title (``UserNotification/displayTitle``), shown beside the count.
    public var newestTitle: String
    /// The group's one notification, when it has one: the list shows it as itself, not as a
    /// group row (as swaync and GNOME do), and the keys act on it.
    public var lone: UserNotification?

    public init(key: String, app: String?, count: Int, unread: Int, newest: Date, newestTitle: String = "", lone: UserNotification? = nil) {
        self.key = key
        self.app = app
        self.count = count
        self.unread = unread
        self.newest = newest
        self.newestTitle = newestTitle
        self.lone = lone
    }
}
