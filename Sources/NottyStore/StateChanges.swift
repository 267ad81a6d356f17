import Foundation
import GRDB
import NottyCore

// MARK: - State changes (`notty poll --on-change`)

/// A notification this device knew whose view changed: read, unread, activated, dismissed,
/// snoozed (``view``) or deleted (``view`` nil; ``notification`` is then the row as it was).
public struct StateChanged: Sendable, Equatable {
    public let notification: UserNotification
    public let view: NotificationView?

    /// `NOTTY_STATE`'s value: the view's name, or `deleted`.
    public var stateName: String { view?.rawValue ?? "deleted" }
}

extension LocalStore {
    /// The most changes the queue keeps when nobody reads it (a `notty poll --on-change` killed
    /// and not started again): the oldest go.
    static let stateChangesKept = 100_000

    /// The queue behind ``stateChanges(now:)``: while `notty poll --on-change` watches (the
    /// meta key `watch_states`), triggers keep each announced notification's row as it was
    /// before a change of its state or its deletion, whichever process wrote. The view rule
    /// itself stays in Swift (``NotificationView/partition(readState:userActionState:snoozedUntil:now:)``).
    static func migrateStateChanges(_ db: Database) throws {
        let watched = "old.announced = 1 AND EXISTS (SELECT 1 FROM meta WHERE key = 'watch_states')"
        let kept = "\(columns.replacingOccurrences(of: "\n", with: " ")), hidden"
        let old = kept.split(separator: ",").map { "old." + $0.trimmingCharacters(in: .whitespaces) }.joined(separator: ", ")
        try db.execute(
            sql: """
                CREATE TABLE state_changes (
                    seq INTEGER PRIMARY KEY,
                    id TEXT NOT NULL, app_notification_id TEXT NOT NULL, app TEXT NOT NULL, group_name TEXT,
                    priority TEXT NOT NULL, title TEXT, body TEXT, raw_content TEXT, ttl INTEGER, policies TEXT,
                    created INTEGER NOT NULL, expires INTEGER NOT NULL, modified INTEGER NOT NULL,
                    read_state TEXT NOT NULL, action_state TEXT NOT NULL, snoozed_until INTEGER, launch_url TEXT,
                    hidden INTEGER NOT NULL
                );
                CREATE TRIGGER state_changes_update AFTER UPDATE OF read_state, action_state, snoozed_until, hidden ON notifications
                WHEN \(watched) AND (old.read_state IS NOT new.read_state OR old.action_state IS NOT new.action_state
                    OR old.snoozed_until IS NOT new.snoozed_until OR old.hidden IS NOT new.hidden) BEGIN
                    INSERT INTO state_changes (\(kept)) VALUES (\(old));
                END;
                CREATE TRIGGER state_changes_delete AFTER DELETE ON notifications WHEN \(watched) BEGIN
                    INSERT INTO state_changes (\(kept)) VALUES (\(old));
                END;
                CREATE TRIGGER state_changes_cap AFTER INSERT ON state_changes WHEN new.seq % 1000 = 0 BEGIN
                    DELETE FROM state_changes WHERE seq <= new.seq - \(stateChangesKept);
                END;
                """)
    }

    /// Starts (or stops) keeping state changes for ``stateChanges(now:)``; either way what was
    /// kept before is forgotten (it was from an earlier run).
    @available(
        *, noasync, message: "blocks on SQLite: call it inside `await store.perform { … }` (a thread of its own), never on Swift's cooperative pool"
    )
    public func watchStates(_ on: Bool) throws {
        try write { db in
            try db.execute(sql: "DELETE FROM state_changes")
            try setMeta(db, "watch_states", on ? "1" : nil)
        }
    }

    /// Takes the state changes kept since the last call, one per notification (its state
    /// before the first change against its state now), oldest first; those that came back to
    /// where they were are left out. At most `limit` queued changes are taken per call.
    @available(
        *, noasync, message: "blocks on SQLite: call it inside `await store.perform { … }` (a thread of its own), never on Swift's cooperative pool"
    )
    public func stateChanges(now: Date = Date(), limit: Int = 1_000) throws -> [StateChanged] {
        try write { db in
            var reader = RowReader()
            // Each notification's row before its first change, and whether it was deleted then.
            var before: [(UserNotification, deleted: Bool)] = []
            var seen = Set<String>()
            var last: Int64 = 0
            let rows = try Row.fetchCursor(
                db.cachedStatement(
                    sql: """
                        SELECT \(Self.columns), hidden, seq FROM state_changes ORDER BY seq LIMIT ?
                        """), arguments: [limit])
            while let row = try rows.next() {
                last = row[18]
                let notification = reader.notification(row)
                guard seen.insert(notification.id).inserted else { continue }
                before.append((notification, deleted: row[17]))  // hidden: deleted here, not yet acknowledged
            }
            guard last > 0 else { return [] }
            try db.execute(sql: "DELETE FROM state_changes WHERE seq <= ?", arguments: [last])
            let ids = before.map(\.0.id)
            let current = Dictionary(
                try Self.notifications(
                    db.makeStatement(
                        sql: "SELECT \(Self.columns) FROM notifications WHERE hidden = 0 AND id IN (\(ids.map { _ in "?" }.joined(separator: ",")))"),
                    arguments: StatementArguments(ids)
                ).map { ($0.id, $0) },
                uniquingKeysWith: { a, _ in a })
            func view(_ n: UserNotification) -> NotificationView {
                NotificationView.partition(readState: n.readState, userActionState: n.userActionState, snoozedUntil: n.snoozedUntil, now: now)
            }
            return before.compactMap { old, deleted in
                let was = deleted ? nil : view(old)
                let now = current[old.id].map(view)
                guard was != now else { return nil }
                return StateChanged(notification: current[old.id] ?? old, view: now)
            }
        }
    }
}
