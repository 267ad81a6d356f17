import Foundation

/// What the status line says about the account and the sync engine (`TUIEvent.status`).
public struct SyncStatus: Sendable, Equatable {
    /// How this device currently hears about changes.
    public enum Connection: Sendable, Equatable {
        /// The doorbell (WebSocket) is open: changes arrive within a second.
        case live
        /// Polling the service every few seconds.
        case polling(everySeconds: Int)
        /// The service cannot be reached; the UI works from the local store.
        case offline(since: Date)
        /// Signing in or opening the doorbell.
        case connecting
    }

    public var user: String
    /// The service's base URL as the user typed it at login.
    public var server: String
    public var connection: Connection
    /// Changes written locally and not yet acknowledged by the service.
    public var outbox: Int
    /// When the last sync finished; `nil` before the first one.
    public var lastSync: Date?

    public init(user: String, server: String, connection: Connection, outbox: Int = 0, lastSync: Date? = nil) {
        self.user = user
        self.server = server
        self.connection = connection
        self.outbox = outbox
        self.lastSync = lastSync
    }
}
