import Foundation
import NottyCore

/// A stored notification as the columns of a `notifications` row, the same in every backend:
/// times in milliseconds since 1970, policies as JSON text, enums by their wire spelling.
struct NotificationColumns {
    /// The column names, in the order every backend selects and inserts them.
    static let names = [
        "id", "user_id", "host_name", "app_notification_id", "group_name", "priority", "raw_content",
        "has_visual", "title", "body", "display_ttl", "expires", "created", "modified", "deleted", "read_state", "read_at",
        "action_state", "snoozed_until", "action_at", "target_policy", "fallback_policy", "launch_url", "seq",
    ]
    static let list = names.joined(separator: ", ")

    var id: String
    var userId: String
    var hostName: String
    var appNotificationId: String
    var groupName: String?
    var priority: String
    var rawContent: String?
    var hasVisual: Bool
    var title: String?
    var body: String?
    var displayTTL: Int64?
    var expires: Int64
    var created: Int64
    var modified: Int64
    var deleted: Bool
    var readState: String
    var readAt: Int64
    var actionState: String
    var snoozedUntil: Int64?
    var actionAt: Int64
    var targetPolicy: String?
    var fallbackPolicy: String?
    var launchUrl: String?
    var seq: Int64

    var stored: StoredNotification {
        let notification = UserNotification(
            id: id, appNotificationId: appNotificationId, targetHostName: hostName, groupName: groupName,
            priority: Priority(rawValue: priority) ?? .none,
            payload: NotificationPayload(rawContent: rawContent, visualContent: hasVisual ? VisualContent(title: title ?? "", body: body) : nil),
            displayTimeToLive: displayTTL.map { Int($0) }, expirationDateTime: ISOTime.date(millis: expires),
            createdDateTime: ISOTime.date(millis: created), lastModifiedDateTime: ISOTime.date(millis: modified),
            status: deleted ? .deleted : .active, readState: ReadState(rawValue: readState) ?? .unread,
            userActionState: UserActionState(rawValue: actionState) ?? .noInteraction,
            snoozedUntil: snoozedUntil.map { ISOTime.date(millis: $0) },
            targetPolicy: targetPolicy.flatMap { JSONValue(jsonText: $0) },
            fallbackPolicy: fallbackPolicy.flatMap { JSONValue(jsonText: $0) }, launchUrl: launchUrl)
        return StoredNotification(userId: userId, notification: notification, readChangedAt: readAt, actionChangedAt: actionAt, seq: seq)
    }
}

// In an extension, so that Swift still writes the memberwise initialiser the backends use.
extension NotificationColumns {
    init(_ s: StoredNotification) {
        let n = s.notification
        self.init(
            id: n.id, userId: s.userId, hostName: n.targetHostName, appNotificationId: n.appNotificationId, groupName: n.groupName,
            priority: n.priority.rawValue, rawContent: n.payload.rawContent, hasVisual: n.payload.visualContent != nil,
            title: n.payload.visualContent?.title, body: n.payload.visualContent?.body, displayTTL: n.displayTimeToLive.map(Int64.init),
            expires: ISOTime.millis(n.expirationDateTime), created: ISOTime.millis(n.createdDateTime),
            modified: ISOTime.millis(n.lastModifiedDateTime), deleted: n.status == .deleted, readState: n.readState.rawValue,
            readAt: s.readChangedAt, actionState: n.userActionState.rawValue, snoozedUntil: n.snoozedUntil.map { ISOTime.millis($0) },
            actionAt: s.actionChangedAt, targetPolicy: n.targetPolicy?.jsonText, fallbackPolicy: n.fallbackPolicy?.jsonText,
            launchUrl: n.launchUrl, seq: s.seq)
    }
}
