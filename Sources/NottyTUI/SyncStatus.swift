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

    public init(user: String, server: String, connection: ConnectionState, outbox: Int = 0, lastSync: Date? = nil) {
        self.user = user
        self.server = server
        self.connection = connection
        self.outbox = outbox
        self.lastSync = lastSync
    }
}
