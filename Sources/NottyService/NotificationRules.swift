import Foundation
import NottyCore
import NottyRecords

/// PROTOCOL.md §1's rules as pure functions, shared by every storage backend.
public enum NotificationRules {
    /// The stored notification after a publish: a new one, or `existing` updated in place and
    /// made new again (Unread, NoInteraction, created now so it sorts first).
    public static func published(_ input: PublishInput, existing: StoredNotification?, newId: String, seq: Int64) -> StoredNotification {
        let nowMillis = ISOTime.millis(input.now)
        let request = existing.flatMap { active in input.merge.map { $0(active.notification, input.request) } } ?? input.request
        let notification = UserNotification(
            id: existing?.notification.id ?? newId,
            appNotificationId: request.appNotificationId,
            targetHostName: input.hostName,
            groupName: request.groupName,
            priority: request.effectivePriority,
            payload: request.payload,
            displayTimeToLive: request.displayTimeToLive,
            expirationDateTime: input.expiration,
            createdDateTime: input.now,
            lastModifiedDateTime: input.now,
            targetPolicy: request.targetPolicy,
            fallbackPolicy: request.fallbackPolicy,
            launchUrl: request.launchUrl,
            actions: request.actions,
            team: input.team)
        // A re-publish resets both fields with the service's own clock, so that state changes
        // made before it (older clocks) lose, and changes made after it win.
        let stamp = max(nowMillis, existing.map { max($0.readChangedAt, $0.actionChangedAt) } ?? 0)
        var row = StoredNotification(userId: input.userId, notification: notification, readChangedAt: stamp, actionChangedAt: stamp, seq: seq)
        row.storedActions = input.storedActions
        if input.resolved {
            // Handled by the sender (PROTOCOL.md §7.2): Dismissed with the same clock, so a later user change still wins.
            var state = row.userState
            _ = state.apply(StateChange(userActionState: .dismissed), changedAt: stamp)
            row.userState = state
        }
        return row
    }

    /// The rows a publish writes, in order, given the app's active notification with the same
    /// `appNotificationId`: the published row, after a tombstone for the active one when it had
    /// expired and the sweeper had not reached it yet (that one is deleted; this one is new).
    public static func publishRows(_ input: PublishInput, active: StoredNotification?, newId: String, nextSeq: () -> Int64) -> [StoredNotification] {
        var rows: [StoredNotification] = []
        var existing = active
        if let old = active, old.notification.expirationDateTime <= input.now {
            rows.append(deleted(old, now: input.now, seq: nextSeq()))
            existing = nil
        }
        rows.append(published(input, existing: existing, newId: newId, seq: nextSeq()))
        return rows
    }

    /// `current` with the content of `changed` (payload, priority, group, link) and nothing
    /// else: its state, creation time and actions kept (an alert's note is not a new alert).
    public static func edited(_ current: StoredNotification, to changed: UserNotification, now: Date, seq: Int64) -> StoredNotification {
        var row = current
        row.notification.payload = changed.payload
        row.notification.priority = changed.priority
        row.notification.groupName = changed.groupName
        row.notification.launchUrl = changed.launchUrl
        row.notification.lastModifiedDateTime = now
        row.seq = seq
        return row
    }

    /// The clock a change is ordered by: the device's, clamped to the service's own.
    public static func clampedClock(_ changedAt: Int64?, now: Date) -> Int64 {
        let nowMillis = ISOTime.millis(now)
        guard let changedAt else { return nowMillis }
        return min(changedAt, nowMillis)
    }

    /// Applies a PATCH to a stored notification. Returns the new row and whether anything
    /// visible changed (only then does it enter the change feed with a new `seq`).
    public static func patched(_ current: StoredNotification, change: StateChange, changedAt: Int64?, now: Date) -> (
        StoredNotification, visible: Bool
    ) {
        var row = current
        var state = row.userState
        let visible = state.apply(change, changedAt: clampedClock(changedAt, now: now))
        row.userState = state
        if visible { row.notification.lastModifiedDateTime = now }
        return (row, visible)
    }

    /// A tombstone: final, kept only so the change feed can tell devices.
    public static func deleted(_ current: StoredNotification, now: Date, seq: Int64) -> StoredNotification {
        var row = current
        row.notification.status = .deleted
        row.notification.lastModifiedDateTime = now
        row.seq = seq
        return row
    }
}
