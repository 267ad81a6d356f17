import Foundation
import GRDB
import GRDBSQLite
import NottyCore

/// A change the user makes on this device to a notification: its state, or its deletion (what
/// the outbox sends; a publisher's buttons are `NotificationAction`s, another thing).
public enum LocalChange: Sendable, Equatable {
    case patch(StateChange)
    case delete
}

/// A pending change in the outbox, as sent to the service's batch route.
public struct OutboxEntry: Sendable, Equatable {
    public var seq: Int64
    public var mutationId: String
    public var notificationId: String
    public var change: LocalChange
    public var changedAt: Int64

    /// The wire form (PROTOCOL.md §2.3 batch item), with its stable `mutationId`.
    public var mutation: Mutation {
        switch change {
        case .patch(let change):
            Mutation(id: notificationId, operation: .patch, change: change, changedAt: changedAt, mutationId: mutationId)
        case .delete:
            Mutation(id: notificationId, operation: .delete, changedAt: changedAt, mutationId: mutationId)
        }
    }
}

/// What a notification looked like before an action, so the action can be undone by a new change.
public struct ShownState: Sendable, Equatable {
    public var id: String
    public var readState: ReadState
    public var userActionState: UserActionState
    public var snoozedUntil: Date?

    /// The change that brings the notification back to this state.
    public var restoring: StateChange {
        StateChange(readState: readState, userActionState: userActionState, snoozedUntil: userActionState == .snoozed ? snoozedUntil : nil)
    }
}

/// Outcome of applying one page of the change feed.
public enum PageOutcome: Sendable, Equatable {
    /// Applied; the store's cursor is now the page's.
    case applied(changed: Int)
    /// Another process moved the cursor meanwhile; nothing was written. Pull again from ``LocalStore/cursor()``.
    case cursorMoved
}

// MARK: - The user's changes

extension LocalStore {
    /// Records changes of notifications: for each, the shown state and a durable outbox entry in
    /// one transaction. Ids not in the store (or deleted) are skipped. Returns the state of each
    /// affected notification before the action (for undo).
    @available(
        *, noasync, message: "blocks on SQLite: call it inside `await store.perform { … }` (a thread of its own), never on Swift's cooperative pool"
    )
    @discardableResult
    public func record(_ changes: [(id: String, change: LocalChange)], now: Date = Date()) throws -> [ShownState] {
        try write { db in try record(db, changes, now: now) }
    }

    /// Marks every Unread notification of `view` matching `query` Read, in one transaction
    /// (no other write comes between the rows read and the rows changed). Answers their ids
    /// (what an undo restores to Unread).
    @available(
        *, noasync, message: "blocks on SQLite: call it inside `await store.perform { … }` (a thread of its own), never on Swift's cooperative pool"
    )
    @discardableResult
    public func markAllRead(view: NotificationView, query: String = "", now: Date = Date()) throws -> [String] {
        try write { db in
            let ids = try window(db, view: view, query: query, offset: 0, limit: Int(Int32.max), total: nil, now: now)
                .filter { $0.readState == .unread }.map(\.id)
            _ = try record(db, ids.map { ($0, LocalChange.patch(StateChange(readState: .read))) }, now: now)
            return ids
        }
    }

    func record(_ db: Database, _ changes: [(id: String, change: LocalChange)], now: Date) throws -> [ShownState] {
        var before: [ShownState] = []
        // One clock read for the whole batch: after the first, each action's clock is the
        // previous one + 1 (what reading and writing `hlc` each time would give), and `hlc`
        // is written once, at the end.
        var lastClock: Int64?
        for (id, change) in changes {
            guard
                let row = try Row.fetchOne(
                    db.cachedStatement(sql: "SELECT read_state, action_state, snoozed_until FROM notifications WHERE id = ? AND hidden = 0"),
                    arguments: [id])
            else { continue }
            before.append(
                ShownState(
                    id: id, readState: ReadState(spelling: row["read_state"]) ?? .unread,
                    userActionState: UserActionState(spelling: row["action_state"]) ?? .noInteraction,
                    snoozedUntil: (row["snoozed_until"] as Int64?).map(ISOTime.date(millis:))))
            let clock = try lastClock.map { $0 + 1 } ?? nextClock(db, now: now)
            lastClock = clock
            var read: String?, state: String?, until: Int64?, op = "patch"
            switch change {
            case .patch(let patch):
                read = patch.readState?.rawValue
                state = patch.userActionState?.rawValue
                if patch.userActionState == .snoozed || (patch.userActionState == nil && patch.snoozedUntil != nil) {
                    state = UserActionState.snoozed.rawValue
                    until = patch.snoozedUntil.map(ISOTime.millis)
                }
            case .delete:
                op = "delete"
            }
            try db.cachedStatement(
                sql: """
                    INSERT INTO outbox (mutation_id, notification_id, op, read_state, action_state, snoozed_until, changed_at, created)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                    """
            ).execute(arguments: [UUID().uuidString.lowercased(), id, op, read, state, until, clock, ISOTime.millis(now)])
            try refreshShown(db, id: id)
        }
        if let lastClock { try setMeta(db, "hlc", String(lastClock)) }
        if !before.isEmpty { try bumpRevision(db) }
        return before
    }

    /// Recomputes the shown state of `id`: the service's state with every pending outbox entry
    /// for it applied in order.
    func refreshShown(_ db: Database, id: String) throws {
        guard
            let row = try Row.fetchOne(db.cachedStatement(sql: "SELECT s_read, s_action, s_snoozed FROM notifications WHERE id = ?"), arguments: [id])
        else { return }
        var shown = (
            readState: ReadState(spelling: row["s_read"]) ?? .unread, userActionState: UserActionState(spelling: row["s_action"]) ?? .noInteraction,
            snoozedUntil: (row["s_snoozed"] as Int64?).map(ISOTime.date(millis:))
        )
        var hidden = false
        let pending = try Row.fetchAll(
            db.cachedStatement(sql: "SELECT op, read_state, action_state, snoozed_until FROM outbox WHERE notification_id = ? ORDER BY seq"),
            arguments: [id])
        for entry in pending {
            if (entry["op"] as String) == "delete" { hidden = true; continue }
            let change = StateChange(
                readState: (entry["read_state"] as String?).flatMap(ReadState.init(spelling:)),
                userActionState: (entry["action_state"] as String?).flatMap(UserActionState.init(spelling:)),
                snoozedUntil: (entry["snoozed_until"] as Int64?).map(ISOTime.date(millis:)))
            shown = change.applied(to: shown)
        }
        let (read, action) = (shown.readState.rawValue, shown.userActionState.rawValue)
        try db.cachedStatement(
            sql: "UPDATE notifications SET read_state = ?, action_state = ?, snoozed_until = ?, bucket = ?, hidden = ? WHERE id = ?"
        )
        .execute(arguments: [read, action, shown.snoozedUntil.map(ISOTime.millis), Self.bucket(read: read, action: action), hidden, id])
    }

    static func bucket(read: String, action: String) -> String {
        NotificationView.bucket(readState: ReadState(spelling: read) ?? .unread, userActionState: UserActionState(spelling: action) ?? .noInteraction)
            .rawValue
    }

    // MARK: - The outbox

    /// The oldest pending changes, at most `limit`.
    @available(
        *, noasync, message: "blocks on SQLite: call it inside `await store.perform { … }` (a thread of its own), never on Swift's cooperative pool"
    )
    public func pending(limit: Int = 1000) throws -> [OutboxEntry] {
        try database.read { db in
            try Row.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT seq, mutation_id, notification_id, op, read_state, action_state, snoozed_until, changed_at
                        FROM outbox ORDER BY seq LIMIT ?
                        """), arguments: [limit]
            ).map { row in
                let change: LocalChange
                if (row["op"] as String) == "delete" {
                    change = .delete
                } else {
                    change = .patch(
                        StateChange(
                            readState: (row["read_state"] as String?).flatMap { ReadState(spelling: $0) },
                            userActionState: (row["action_state"] as String?).flatMap { UserActionState(spelling: $0) },
                            snoozedUntil: (row["snoozed_until"] as Int64?).map(ISOTime.date(millis:))))
                }
                return OutboxEntry(
                    seq: row["seq"], mutationId: row["mutation_id"], notificationId: row["notification_id"], change: change,
                    changedAt: row["changed_at"])
            }
        }
    }

    /// How many changes wait to be sent.
    @available(
        *, noasync, message: "blocks on SQLite: call it inside `await store.perform { … }` (a thread of its own), never on Swift's cooperative pool"
    )
    public func outboxCount() throws -> Int {
        try database.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM outbox") ?? 0 }
    }

    /// Takes the service's answers to a flushed batch: an entry the service applied (2xx) or
    /// refused for good (4xx: unknown or deleted notification, invalid) leaves the outbox;
    /// one worth retrying (``HTTPStatusRule``: 408, 429, 5xx) stays to be sent again with the same `mutationId`. A returned
    /// notification becomes the service state when it is not older than the stored one.
    /// Returns how many entries left the outbox.
    @available(
        *, noasync, message: "blocks on SQLite: call it inside `await store.perform { … }` (a thread of its own), never on Swift's cooperative pool"
    )
    @discardableResult
    public func acknowledge(_ results: [MutationResult]) throws -> Int {
        try write { db in
            var done = 0
            for result in results {
                guard let mutationId = result.mutationId else { continue }
                guard !HTTPStatusRule.isWorthRetrying(result.status) else {
                    try db.execute(sql: "UPDATE outbox SET attempts = attempts + 1 WHERE mutation_id = ?", arguments: [mutationId])
                    continue
                }
                let op = try String.fetchOne(db.cachedStatement(sql: "SELECT op FROM outbox WHERE mutation_id = ?"), arguments: [mutationId])
                try db.cachedStatement(sql: "DELETE FROM outbox WHERE mutation_id = ?").execute(arguments: [mutationId])
                done += db.changesCount
                let gone = result.status == 404 || result.status == 410 || (op == "delete" && (200..<300).contains(result.status))
                if gone {
                    // Deleted (by us or elsewhere) or expired: final, and later changes to it are moot.
                    try db.execute(sql: "DELETE FROM notifications WHERE id = ?", arguments: [result.id])
                    try db.execute(sql: "DELETE FROM outbox WHERE notification_id = ?", arguments: [result.id])
                    continue
                }
                if let notification = result.notification {
                    try storeServiceState(db, notification, onlyIfNotOlder: true, fromFeed: false)
                }
                try refreshShown(db, id: result.id)
            }
            try bumpRevision(db)
            return done
        }
    }
}
