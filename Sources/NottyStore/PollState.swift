import Foundation
import GRDB
import GRDBSQLite
import NottyCore

/// What `notty poll` keeps in the store: which notifications were announced, when the device
/// last synced, the desktop popups on screen.
extension LocalStore {
    /// Notifications that arrived (or were re-published) since they were last announced and
    /// are still live, oldest first.
    @available(
        *, noasync, message: "blocks on SQLite: call it inside `await store.perform { … }` (a thread of its own), never on Swift's cooperative pool"
    )
    public func unannounced(now: Date = Date()) throws -> [UserNotification] {
        try database.read { db in
            try Self.notifications(
                db.cachedStatement(
                    sql: """
                        SELECT \(Self.columns) FROM notifications WHERE announced = 0 AND hidden = 0 AND expires > ?
                        ORDER BY created, id
                        """), arguments: [ISOTime.millis(now)])
        }
    }

    /// Marks notifications as announced, and keeps those of them that quiet holds back
    /// (`held`) for its summary (``takeHeldByQuiet()``), in one transaction.
    @available(
        *, noasync, message: "blocks on SQLite: call it inside `await store.perform { … }` (a thread of its own), never on Swift's cooperative pool"
    )
    public func markAnnounced(_ ids: [String], held: [String] = []) throws {
        guard !ids.isEmpty else { return }
        try write { db in
            for id in ids {
                try db.cachedStatement(sql: "UPDATE notifications SET announced = 1 WHERE id = ?").execute(arguments: [id])
            }
            for id in held {
                try db.cachedStatement(sql: "INSERT OR IGNORE INTO quiet_held (notification_id) VALUES (?)").execute(arguments: [id])
            }
        }
    }

    /// Whether quiet holds anything back for a summary.
    @available(
        *, noasync, message: "blocks on SQLite: call it inside `await store.perform { … }` (a thread of its own), never on Swift's cooperative pool"
    )
    public func holdsForQuiet() throws -> Bool {
        try database.read { db in try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM quiet_held)") ?? false }
    }

    /// The notifications a quiet period held back, forgotten as held in the same statement:
    /// each goes into one summary, whichever process makes it (they may have been handled or
    /// removed since).
    @available(
        *, noasync, message: "blocks on SQLite: call it inside `await store.perform { … }` (a thread of its own), never on Swift's cooperative pool"
    )
    public func takeHeldByQuiet() throws -> [String] {
        try write { db in try String.fetchAll(db, sql: "DELETE FROM quiet_held RETURNING notification_id") }
    }

    /// Marks everything in the store as announced (what `notty poll` does when it starts).
    @available(
        *, noasync, message: "blocks on SQLite: call it inside `await store.perform { … }` (a thread of its own), never on Swift's cooperative pool"
    )
    public func markAllAnnounced() throws {
        // One transaction in statements of 5,000 rows: each statement's journal (kept in memory)
        // holds the pages of its own rows only, not those of the whole store (60,000 rows pulled
        // by `notty sync` into a store in use, all still to mark, took about 20 MiB in one
        // statement, for a moment).
        try write { db in
            let statement = try db.cachedStatement(
                sql: """
                    UPDATE notifications SET announced = 1
                    WHERE rowid IN (SELECT rowid FROM notifications WHERE announced = 0 LIMIT 5000)
                    """)
            repeat { try statement.execute() } while db.changesCount > 0
        }
    }

    /// Records the time of a successful exchange with the service.
    @available(
        *, noasync, message: "blocks on SQLite: call it inside `await store.perform { … }` (a thread of its own), never on Swift's cooperative pool"
    )
    public func noteSynced(now: Date = Date()) throws {
        try write { db in try setMeta(db, "last_sync", String(ISOTime.millis(now))) }
    }

    // MARK: - Desktop popups (`notty poll --desktop`)

    /// One row of the notification ↔ popup mapping.
    public struct PopupRecord: Sendable, Equatable {
        public var notificationId: String
        public var popupId: UInt32?
        public var view: NotificationView
        public init(notificationId: String, popupId: UInt32?, view: NotificationView) {
            self.notificationId = notificationId
            self.popupId = popupId
            self.view = view
        }
    }

    /// The mapping as `notty poll --desktop` left it.
    @available(
        *, noasync, message: "blocks on SQLite: call it inside `await store.perform { … }` (a thread of its own), never on Swift's cooperative pool"
    )
    public func popups() throws -> [PopupRecord] {
        try database.read { db in
            try Row.fetchAll(db, sql: "SELECT notification_id, popup_id, view FROM popups").map { row in
                PopupRecord(
                    notificationId: row[0], popupId: (row[1] as Int64?).map { UInt32(truncatingIfNeeded: $0) },
                    view: NotificationView(name: row[2]) ?? .unread)
            }
        }
    }

    /// Replaces the mapping, in one transaction (it holds the popups on screen: a few rows).
    @available(
        *, noasync, message: "blocks on SQLite: call it inside `await store.perform { … }` (a thread of its own), never on Swift's cooperative pool"
    )
    public func savePopups(_ records: [PopupRecord]) throws {
        try write { db in
            try db.execute(sql: "DELETE FROM popups")
            for record in records {
                try db.cachedStatement(sql: "INSERT INTO popups (notification_id, popup_id, view) VALUES (?, ?, ?)")
                    .execute(arguments: [record.notificationId, record.popupId.map { Int64($0) }, record.view.rawValue])
            }
        }
    }
}
