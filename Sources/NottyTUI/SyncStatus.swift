import Foundation
import NottyCore

/// What the status line says about the account and the sync engine (`TUIEvent.status`).
public struct SyncStatus: Sendable, Equatable {
    public var user: String
    /// The service's base URL as the user typed it at login.
    public var server: String
    public var connection: ConnectionState
    /// Changes written locally and not yet acknowledged by the service.
    public var outbox: Int
    /// When the last sync finished; `nil` before the first one.
    public var lastSync: Date?
    /// When the user's quiet period ends (PROTOCOL.md §9); nil: not quiet.
    public var quietUntil: Date?
    /// How many apps and groups are muted.
    public var mutes: Int
    /// Where the user is on call (PROTOCOL.md §13.2).
    public var onCall: [MyOnCall]

    public init(
        user: String, server: String, connection: ConnectionState, outbox: Int = 0, lastSync: Date? = nil,
        quietUntil: Date? = nil, mutes: Int = 0, onCall: [MyOnCall] = []
    ) {
        self.onCall = onCall
        self.user = user
        self.server = server
        self.connection = connection
        self.outbox = outbox
        self.lastSync = lastSync
        self.quietUntil = quietUntil
        self.mutes = mutes
    }

    /// Whether the user is quiet at `now` (a period that has ended is over).
    public func isQuiet(at now: Date) -> Bool { quietUntil.map { $0 > now } ?? false }
}
