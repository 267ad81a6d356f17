import Foundation

/// The six views of PROTOCOL.md §1. The first five partition the active notifications.
public enum NotificationView: String, CaseIterable, Sendable, Codable {
    case unread, read, activated, dismissed, snoozed, all

    /// The name shown on a tab.
    public var title: String { rawValue.prefix(1).uppercased() + rawValue.dropFirst() }

    /// Parses a view name, ignoring case.
    public init?(name: String) {
        self.init(rawValue: name.lowercased())
    }

    /// The view a notification belongs to at `now` among the five partitioning views.
    public static func partition(
        readState: ReadState, userActionState: UserActionState, snoozedUntil: Date?, now: Date
    ) -> NotificationView {
        switch userActionState {
        case .activated: return .activated
        case .dismissed: return .dismissed
        case .snoozed:
            if let until = snoozedUntil, until > now { return .snoozed }
            return readState == .read ? .read : .unread
        case .noInteraction:
            return readState == .read ? .read : .unread
        }
    }

    /// ``partition(readState:userActionState:snoozedUntil:now:)`` as an SQL condition over the
    /// columns `read_state`, `action_state` and `snoozed_until` (the states' spellings, times in
    /// milliseconds), `now` being the SQL expression of the current time in milliseconds. Written
    /// for both SQLite and PostgreSQL; the storage tests check it against the Swift rule for every
    /// combination of states.
    public func sqlCondition(now: String) -> String {
        let snoozeOver =
            "(action_state = '\(UserActionState.noInteraction.rawValue)' OR (action_state = '\(UserActionState.snoozed.rawValue)' AND snoozed_until <= \(now)))"
        switch self {
        case .unread: return "(read_state = '\(ReadState.unread.rawValue)' AND \(snoozeOver))"
        case .read: return "(read_state = '\(ReadState.read.rawValue)' AND \(snoozeOver))"
        case .activated: return "(action_state = '\(UserActionState.activated.rawValue)')"
        case .dismissed: return "(action_state = '\(UserActionState.dismissed.rawValue)')"
        case .snoozed: return "(action_state = '\(UserActionState.snoozed.rawValue)' AND snoozed_until > \(now))"
        case .all: return "(1 = 1)"
        }
    }

    /// The view a notification is in until a snooze ends: its partition with every snooze still
    /// running (the device store's `bucket`, which its queries split by `snoozed_until`).
    public static func bucket(readState: ReadState, userActionState: UserActionState) -> NotificationView {
        partition(readState: readState, userActionState: userActionState, snoozedUntil: .distantFuture, now: .distantPast)
    }

    /// The partitioning view `notification` is in at `now`; nil when it is deleted or expired.
    public static func current(of notification: UserNotification, now: Date) -> NotificationView? {
        guard notification.isLive(at: now) else { return nil }
        return partition(
            readState: notification.readState, userActionState: notification.userActionState,
            snoozedUntil: notification.snoozedUntil, now: now)
    }

    /// Whether `notification` is in this view at `now`. Expired or deleted ones are in none.
    public func contains(_ notification: UserNotification, now: Date) -> Bool {
        guard let view = Self.current(of: notification, now: now) else { return false }
        return self == .all || view == self
    }
}

/// The count of each view (`GET /v1/me/notifications/counts`).
public struct ViewCounts: Codable, Sendable, Equatable {
    public var unread = 0
    public var read = 0
    public var activated = 0
    public var dismissed = 0
    public var snoozed = 0
    public var all = 0

    public init() {}

    public subscript(view: NotificationView) -> Int {
        get {
            switch view {
            case .unread: unread
            case .read: read
            case .activated: activated
            case .dismissed: dismissed
            case .snoozed: snoozed
            case .all: all
            }
        }
        set {
            switch view {
            case .unread: unread = newValue
            case .read: read = newValue
            case .activated: activated = newValue
            case .dismissed: dismissed = newValue
            case .snoozed: snoozed = newValue
            case .all: all = newValue
            }
        }
    }

    /// Counts notifications into their views at `now`.
    public mutating func add(_ notification: UserNotification, now: Date) {
        guard notification.isLive(at: now) else { return }
        all += 1
        self[
            NotificationView.partition(
                readState: notification.readState, userActionState: notification.userActionState,
                snoozedUntil: notification.snoozedUntil, now: now)] += 1
    }
}
