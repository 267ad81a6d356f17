import Foundation
import NottyCore

/// Every view's count from what a store keeps as data (PROTOCOL.md §1's views): each feed's live
/// rows counted by (read state, action state) in the transaction that writes them (a user's own
/// feed and each team's they are in, so a team's notifications count for every member), then
/// what time has moved since the rows were written, both found in a small index range: snoozes
/// still running move out of Unread or Read into Snoozed, and rows past their expiry that the
/// sweeper has not reached yet leave the views. Nothing walks the user's rows.
public struct KeptCounts: Sendable, Equatable {
    public private(set) var counts = ViewCounts()

    public init() {}

    /// `count` live rows with these states, as counted (their snoozes taken as ended).
    public mutating func kept(readState: String, actionState: String, count: Int) {
        guard let read = ReadState(rawValue: readState), let action = UserActionState(rawValue: actionState) else { return }
        counts[NotificationView.partition(readState: read, userActionState: action, snoozedUntil: nil, now: .distantPast)] += count
        counts.all += count
    }

    /// `count` rows whose snooze runs at the time asked: Snoozed, not Unread or Read.
    public mutating func running(readState: String, count: Int) {
        counts[ReadState(rawValue: readState) == .read ? .read : .unread] -= count
        counts.snoozed += count
    }

    /// `count` live rows past their expiry, with these states (`running`: a snooze of theirs
    /// still runs): in no view.
    public mutating func expired(readState: String, actionState: String, running: Bool, count: Int) {
        guard let read = ReadState(rawValue: readState), let action = UserActionState(rawValue: actionState) else { return }
        counts[
            NotificationView.partition(
                readState: read, userActionState: action, snoozedUntil: running ? .distantFuture : nil, now: .distantPast)] -= count
        counts.all -= count
    }
}
