import Foundation
import GRDB
import NottyCore
import NottySQLite

/// A change the user made on this device that had not reached the service, read out of a
/// store that cannot be used any more (damaged, or of a newer build) by `notty resync`.
public struct SalvagedChange: Sendable, Equatable {
    public var mutationId: String
    public var notificationId: String
    public var op: String
    public var readState: String?
    public var actionState: String?
    public var snoozedUntil: Int64?
    public var changedAt: Int64
    public var created: Int64
}

extension LocalStore {
    /// The outbox of the store file at `path`, read with a plain read-only connection as far as
    /// it can be read (rows of a damaged page end it): the changes, and whether every row was
    /// read. Nothing is written to the file.
    @available(*, noasync, message: "blocks on SQLite: call it inside `offThePool { … }`, never on Swift's cooperative pool")
    public static func salvageOutbox(path: String) -> (changes: [SalvagedChange], complete: Bool) {
        var changes: [SalvagedChange] = []
        do {
            var configuration = Configuration()
            configuration.readonly = true
            let file = try DatabaseQueue(path: path, configuration: configuration)
            try file.read { db in
                let rows = try Row.fetchCursor(
                    db,
                    sql: """
                        SELECT mutation_id, notification_id, op, read_state, action_state, snoozed_until, changed_at, created
                        FROM outbox ORDER BY seq
                        """)
                while let row = try rows.next() {
                    changes.append(
                        SalvagedChange(
                            mutationId: row[0], notificationId: row[1], op: row[2], readState: row[3], actionState: row[4],
                            snoozedUntil: row[5], changedAt: row[6], created: row[7]))
                }
            }
            return (changes, true)
        } catch {
            return (changes, false)
        }
    }

    /// Moves the store's files at `path` aside (`PATH.before-resync-TIME`) before a new one is
    /// made there; nil when there is none.
    public static func setAside(path: String) throws -> String? {
        try DatabaseFiles.setAside(path, label: "resync")
    }

    /// Puts salvaged changes back in this store's outbox as they were: the same mutation ids
    /// (the service applies each once, however often it is sent) and times (the later change
    /// still wins). The next sync shows them on the service's state and sends them. Returns how
    /// many were queued (one already queued is not queued twice).
    @available(
        *, noasync, message: "blocks on SQLite: call it inside `await store.perform { … }` (a thread of its own), never on Swift's cooperative pool"
    )
    @discardableResult
    public func requeue(_ changes: [SalvagedChange]) throws -> Int {
        try write { db in
            var queued = 0
            for change in changes {
                try db.cachedStatement(
                    sql: """
                        INSERT INTO outbox (mutation_id, notification_id, op, read_state, action_state, snoozed_until, changed_at, created)
                        VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (mutation_id) DO NOTHING
                        """
                ).execute(arguments: [
                    change.mutationId, change.notificationId, change.op, change.readState, change.actionState,
                    change.snoozedUntil, change.changedAt, change.created,
                ])
                queued += db.changesCount
            }
            if let newest = changes.map(\.changedAt).max() { try observeClock(db, millis: newest) }
            if queued > 0 { try bumpRevision(db) }
            return queued
        }
    }
}
