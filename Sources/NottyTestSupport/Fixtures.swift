import Foundation
import NottyCore

extension UserNotification {
    /// A notification for a test, built in one place: what a test does not name is a plain
    /// one from `ci.example.com`, created at `created`, last changed then, live for `ttl`
    /// (a week), Unread and untouched.
    public static func fixture(
        id: String, appNotificationId: String? = nil, app: String = "ci.example.com", group: String? = nil,
        priority: Priority = .none, title: String = "Build failed", body: String? = nil, raw: String? = nil,
        created: Date = Date(timeIntervalSince1970: 1_800_000_000), modified: Date? = nil, ttl: TimeInterval = 7 * 86_400,
        expires: Date? = nil, status: NotificationStatus = .active, read: ReadState = .unread,
        action: UserActionState = .noInteraction, snoozedUntil: Date? = nil, launchUrl: String? = nil
    ) -> UserNotification {
        UserNotification(
            id: id, appNotificationId: appNotificationId ?? "a-\(id)", targetHostName: app, groupName: group, priority: priority,
            payload: NotificationPayload(rawContent: raw, visualContent: VisualContent(title: title, body: body)),
            expirationDateTime: expires ?? created.addingTimeInterval(ttl), createdDateTime: created, lastModifiedDateTime: modified ?? created,
            status: status, readState: read, userActionState: action, snoozedUntil: snoozedUntil, launchUrl: launchUrl)
    }

    /// The id of the `n`th notification of a test's store: UUID-shaped, ordered as `n`.
    public static func fixtureId(_ n: Int) -> String {
        String(format: "%08x-0000-4000-8000-000000000000", n)
    }
}
