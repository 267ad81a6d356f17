import Foundation

/// The user-owned state of one notification with the clock of each field's last write.
/// This is what PROTOCOL.md §1's "last writer wins, per field" rule is applied to.
public struct UserState: Sendable, Equatable, Codable {
    public var readState: ReadState
    /// Milliseconds of the hybrid logical clock of the change that set `readState` (0: never changed).
    public var readChangedAt: Int64
    public var userActionState: UserActionState
    public var snoozedUntil: Date?
    /// Milliseconds of the change that set `userActionState` and `snoozedUntil`.
    public var actionChangedAt: Int64

    public init(
        readState: ReadState = .unread, readChangedAt: Int64 = 0,
        userActionState: UserActionState = .noInteraction, snoozedUntil: Date? = nil, actionChangedAt: Int64 = 0
    ) {
        self.readState = readState
        self.readChangedAt = readChangedAt
        self.userActionState = userActionState
        self.snoozedUntil = snoozedUntil
        self.actionChangedAt = actionChangedAt
    }

    /// A fresh state, as after a (re-)publish: Unread and NoInteraction, both stamped `at`,
    /// so that changes made before the re-publish lose to it.
    public static func fresh(at millis: Int64) -> UserState {
        UserState(readChangedAt: millis, actionChangedAt: millis)
    }

    /// Applies a state change made at `changedAt` (already clamped to the service clock).
    /// Each field is last writer wins; a tie goes to the later arrival (this one).
    /// Returns whether anything visible changed.
    @discardableResult
    public mutating func apply(_ change: StateChange, changedAt: Int64) -> Bool {
        let before = self
        // Only the fields whose clock this change wins take it.
        let wins = StateChange(
            readState: changedAt >= readChangedAt ? change.readState : nil,
            userActionState: changedAt >= actionChangedAt ? change.userActionState : nil, snoozedUntil: change.snoozedUntil)
        (readState, userActionState, snoozedUntil) = wins.applied(to: (readState, userActionState, snoozedUntil))
        if wins.readState != nil { readChangedAt = changedAt }
        if wins.userActionState != nil { actionChangedAt = changedAt }
        return before.readState != readState || before.userActionState != userActionState
            || before.snoozedUntil != snoozedUntil
    }
}

/// The state fields a device may change (PATCH body without its bookkeeping).
public struct StateChange: Sendable, Equatable, Codable {
    /// PROTOCOL.md §1's state-change rule, the one definition: a given `readState` replaces the read
    /// state; a given `userActionState` replaces the action and brings its `snoozedUntil`
    /// (cleared unless Snoozed). The service (``UserState/apply(_:changedAt:)``, under its clocks),
    /// the device store (pending changes over the service's state) and the center (its
    /// detail's copy) all apply changes with it.
    public func applied(to state: (readState: ReadState, userActionState: UserActionState, snoozedUntil: Date?))
        -> (readState: ReadState, userActionState: UserActionState, snoozedUntil: Date?)
    {
        var result = state
        if let readState { result.readState = readState }
        if let userActionState {
            result.userActionState = userActionState
            result.snoozedUntil = userActionState == .snoozed ? snoozedUntil : nil
        }
        return result
    }

    public var readState: ReadState?
    public var userActionState: UserActionState?
    public var snoozedUntil: Date?

    public init(readState: ReadState? = nil, userActionState: UserActionState? = nil, snoozedUntil: Date? = nil) {
        self.readState = readState
        self.userActionState = userActionState
        self.snoozedUntil = snoozedUntil
    }

    /// Opening a notification (or its link): Read and Activated.
    public static let activate = StateChange(readState: .read, userActionState: .activated)
    /// Handled without opening it (ntfy's clear): Read and Dismissed.
    public static let clear = StateChange(readState: .read, userActionState: .dismissed)
}
