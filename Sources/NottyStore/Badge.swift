import Foundation
import GRDB
import NottyCore

extension LocalStore {
    /// The badge of `view` at `now`: the view counts (a few block counts, ``counts(now:)``)
    /// and the High Unread rows (their counts by bucket, migration v14), both corrected by the
    /// same few exceptions (expired rows, ended snoozes). One read transaction; nothing walks
    /// the view's rows or an index of them.
    @available(
        *, noasync, message: "blocks on SQLite: call it inside `await store.perform { … }` (a thread of its own), never on Swift's cooperative pool"
    )
    public func badge(view: NotificationView, now: Date = Date()) throws -> Badge {
        try database.read { db in
            let exceptions = try ViewIndex.exceptions(db, now: now)
            let counts = try counts(db, now: now, exceptions: exceptions)
            let high = try ViewIndex.highUnread(db, view: view, exceptions: exceptions)
            return Badge(view: view, count: counts[view], highUnread: high, counts: counts)
        }
    }

    /// The badge of a saved view (PROTOCOL.md §17): All's rows its search finds, and those of
    /// them Unread and High.
    @available(
        *, noasync, message: "blocks on SQLite: call it inside `await store.perform { … }` (a thread of its own), never on Swift's cooperative pool"
    )
    public func badge(saved: SavedView, now: Date = Date()) throws -> Badge {
        try database.read { db in
            let counts = try counts(db, now: now)
            // Words in the search and the index whole: both counts in one pass over the rows the
            // index finds (by rowid), not over All.
            if let filter = try SearchFilter(saved.query, now: now), let match = filter.sql.match,
                try SearchIndex.indexed(db) >= (Int64.fetchOne(db.cachedStatement(sql: "SELECT max(rowid) FROM notifications")) ?? 0)
            {
                let row = try Row.fetchOne(
                    db.cachedStatement(
                        sql: """
                            SELECT count(*), coalesce(sum(read_state = 'Unread' AND priority = 'High'), 0) FROM notifications NOT INDEXED
                            WHERE rowid IN (SELECT rowid FROM \(SearchIndex.table) WHERE \(SearchIndex.table) MATCH ?) AND hidden = 0 AND expires > ?
                            AND \(filter.fieldsCondition)
                            """), arguments: [match, ISOTime.millis(now)] + filter.fieldsArguments)
                return Badge(view: .all, count: row?[0] ?? 0, highUnread: row?[1] ?? 0, counts: counts, name: saved.name)
            }
            let branches = try branches(db, .all, now: now, query: saved.query)
            let total = try quickCount(db, view: .all, query: saved.query, now: now) ?? count(db, branches)
            let high = try count(db, branches, extra: "AND read_state = 'Unread' AND priority = 'High'")
            return Badge(view: .all, count: total, highUnread: high, counts: counts, name: saved.name)
        }
    }

    /// The saved view `name` as this device knows it (nil when there is none).
    @available(
        *, noasync, message: "blocks on SQLite: call it inside `await store.perform { … }` (a thread of its own), never on Swift's cooperative pool"
    )
    public func savedView(named name: String) throws -> SavedView? {
        try database.read { db in
            try Row.fetchOne(db, sql: "SELECT key, value, changed_at FROM preferences WHERE key = ?", arguments: [SavedView.keyPrefix + name])
                .map(Self.entry).flatMap { SavedView(key: $0.key, value: $0.value) }
        }
    }
}
