import Foundation
import GRDB
import GRDBSQLite
import NottyCore

/// The service's changes: pages of the feed applied in one transaction each, a first sync's
/// deferred indexes, a full resync.
extension LocalStore {
    /// Applies one page of the change feed in one transaction, if the store's cursor is still
    /// `since` (another process of this device may have pulled meanwhile).
    @available(
        *, noasync, message: "blocks on SQLite: call it inside `await store.perform { … }` (a thread of its own), never on Swift's cooperative pool"
    )
    public func apply(page: ChangesPage, since: String?, now: Date = Date()) throws -> PageOutcome {
        try writeWithoutTransaction { db in
            try Self.inRepairableTransaction(db) {
                guard try meta(db, "cursor") == since else { return .cursorMoved }
                let firstSync = try since == nil && meta(db, "announce_all") == nil
                // Only notifications with pending changes need their shown state worked out again;
                // for the others it is the service's, which the upsert writes.
                let pending = Set(try String.fetchAll(db.cachedStatement(sql: "SELECT DISTINCT notification_id FROM outbox")))
                // Which rows exist, asked once for the page (an initial sync's pages are all new).
                let ids = page.changes.map(\.id)
                let existing =
                    ids.isEmpty
                    ? []
                    : Set(
                        try String.fetchAll(
                            db, sql: "SELECT id FROM notifications WHERE id IN (\(ids.map { _ in "?" }.joined(separator: ",")))",
                            arguments: StatementArguments(ids)))
                // A page of many new rows (a first sync's) counts them into `view_blocks` once,
                // grouped, instead of four upserts per row in the insert trigger. Only when each id
                // is on the page once, so that no row inserted here is also updated or deleted here.
                let inserted = page.changes.lazy.filter { $0.status != .deleted && !existing.contains($0.id) }.count
                let unique = Set(ids).count == ids.count
                let bulk = inserted >= Self.bulkInsertRows && unique
                let rowidBefore = bulk ? try Int64.fetchOne(db, sql: "SELECT max(rowid) FROM notifications") ?? 0 : 0
                if bulk { try setMeta(db, ViewIndex.bulkKey, "1") }
                var newest: Int64 = 0
                // With each id on the page once, the order between ids does not matter: tombstones go
                // last, so that no row of this page can take the rowid of one deleted before it
                // (SQLite gives max(rowid) + 1) and be missed by the count after `rowidBefore`.
                var tombstones: [String] = []
                func delete(_ id: String) throws {
                    try db.cachedStatement(sql: "DELETE FROM notifications WHERE id = ?").execute(arguments: [id])
                    try db.cachedStatement(sql: "DELETE FROM outbox WHERE notification_id = ?").execute(arguments: [id])
                }
                for change in page.changes {
                    newest = max(newest, ISOTime.millis(change.lastModifiedDateTime))
                    if change.status == .deleted {
                        if unique { tombstones.append(change.id) } else { try delete(change.id) }
                    } else {
                        try storeServiceState(db, change, onlyIfNotOlder: false, announce: !firstSync, mayExist: existing.contains(change.id))
                        if pending.contains(change.id) { try refreshShown(db, id: change.id) }
                    }
                }
                for id in tombstones { try delete(id) }
                if bulk {
                    try setMeta(db, ViewIndex.bulkKey, nil)
                    try ViewIndex.countRows(db, after: rowidBefore)
                } else {
                    // The search index keeps in step with every sync but a first one's pages, and
                    // catches up a store it has not caught up yet (no center running) a little a page.
                    _ = try SearchIndex.catchUp(db, rows: SearchIndex.rowsPerSync)
                }
                try observeClock(db, millis: newest)
                if let preferences = page.preferences, try applyServicePreferences(db, preferences) { try bumpRevision(db) }
                try setMeta(db, "cursor", page.cursor)
                try setMeta(db, "last_sync", String(ISOTime.millis(now)))
                if !page.changes.isEmpty { try bumpRevision(db) }
                return .applied(changed: page.changes.count)
            }
        }
    }

    /// Runs `body` in a transaction committed without waiting for the disk (`synchronous =
    /// NORMAL`, for this transaction only): for what the service already holds, so that
    /// what a power loss takes is pulled again. Its changes and the cursor that covers them
    /// commit together, so such a loss rolls both back and the next pull fetches them again;
    /// a WAL is written in order, so the next commit that does wait (a state change the user
    /// made) makes this one durable as well. A process that dies loses nothing either way.
    static func inRepairableTransaction<T>(_ db: Database, _ body: () throws -> T) throws -> T {
        try db.execute(sql: "PRAGMA synchronous = NORMAL")
        let result = Result {
            var value: T?
            try db.inTransaction {
                value = try body()
                return .commit
            }
            return value!
        }
        try db.execute(sql: "PRAGMA synchronous = FULL")  // before anything else commits here
        return try result.get()
    }

    // MARK: - A first sync's indexes

    /// The `meta` keys that keep a dropped index's definition until it is made again.
    static let deferredIndexPrefix = "deferred_index "
    /// Indexes that queries name with `INDEXED BY` (which fails without them): never deferred.
    static let indexesNamedByQueries: Set<String> = ["notifications_snoozes", "notifications_unread"]

    /// Before a first sync into an empty store: drops the secondary indexes of
    /// `notifications`, keeping each one's definition in `meta`, so that its rows go in without
    /// them (inserting 100,000 rows took 1.1 s instead of 2.0 s here, making the indexes after
    /// 0.4 s). ``buildDeferredIndexes()`` makes them again at the end of the pull, or of the
    /// next one if this process dies first: until then the store is complete and correct, only
    /// slower to read. Returns whether it dropped any.
    @available(
        *, noasync, message: "blocks on SQLite: call it inside `await store.perform { … }` (a thread of its own), never on Swift's cooperative pool"
    )
    @discardableResult
    public func deferIndexesIfEmpty() throws -> Bool {
        try write { db in
            guard try meta(db, "cursor") == nil,
                try !Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM notifications)")!
            else { return false }
            let indexes = try Row.fetchAll(
                db,
                sql: """
                    SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'notifications' AND sql IS NOT NULL
                    """
            ).filter { !Self.indexesNamedByQueries.contains($0["name"]) }
            for index in indexes {
                let name: String = index["name"], sql: String = index["sql"]
                try setMeta(db, Self.deferredIndexPrefix + name, sql)
                try db.execute(sql: "DROP INDEX \(name.quotedDatabaseIdentifier)")
            }
            if !indexes.isEmpty { try db.execute(sql: "PRAGMA cache_size = \(Self.firstSyncCacheSize)") }
            return !indexes.isEmpty
        }
    }

    /// The writer's page cache during a first sync (KiB, negated as SQLite wants it), and
    /// otherwise (SQLite's default). With the default 2 MiB the pages of a growing 50 MiB store
    /// left the cache and were read back with `pread` (7% of the writing thread's time).
    static let firstSyncCacheSize = -65_536
    static let defaultCacheSize = -2_000

    /// Makes the indexes ``deferIndexesIfEmpty()`` dropped, if any (one sorted pass each).
    @available(
        *, noasync, message: "blocks on SQLite: call it inside `await store.perform { … }` (a thread of its own), never on Swift's cooperative pool"
    )
    public func buildDeferredIndexes() throws {
        let pattern = Self.deferredIndexPrefix + "%"
        let deferred = "SELECT key, value FROM meta WHERE key LIKE ?"
        guard try database.read({ db in try Row.fetchOne(db, sql: deferred, arguments: [pattern]) }) != nil else { return }
        try write { db in
            for row in try Row.fetchAll(db, sql: deferred, arguments: [pattern]) {
                let key: String = row["key"], sql: String = row["value"]
                let name = String(key.dropFirst(Self.deferredIndexPrefix.count))
                if try !Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = ?)", arguments: [name])! {
                    try db.execute(sql: sql)
                }
                try setMeta(db, key, nil)
            }
        }
        // The first sync's cache is given back (a center or `poll` goes on running).
        try writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA cache_size = \(Self.defaultCacheSize)")
            try db.execute(sql: "PRAGMA shrink_memory")
        }
        // Its log (16 MB for the indexes alone at 100,000) is copied into the store and emptied:
        // a process that opens the store next with no other one holding it (a prompt's `notty
        // count`) would otherwise read all of it to rebuild the log's index, at every start,
        // since one opened to read only cannot checkpoint.
        checkpointer.emptyLog()
    }

    /// How many new rows a page needs for them to be counted into `view_blocks` in one go.
    static let bulkInsertRows = 32

    /// Starts a full resync (after `410 cursorExpired`): forgets the cursor and marks every
    /// notification stale; pages from the start clear the mark; ``finishResync()`` drops what
    /// the service no longer has. The outbox is kept. The store remembers that a resync is
    /// under way (``resyncUnfinished()``), so that a pull from the start that a dead network
    /// cut off is finished by the next one to reach the end.
    @available(
        *, noasync, message: "blocks on SQLite: call it inside `await store.perform { … }` (a thread of its own), never on Swift's cooperative pool"
    )
    public func beginResync() throws {
        try write { db in
            try setMeta(db, "cursor", nil)
            try setMeta(db, "announce_all", "1")
            try setMeta(db, "resync", "1")
            try db.execute(sql: "UPDATE notifications SET stale = 1")
        }
    }

    /// Whether a resync began and has not finished (its pull was cut off).
    @available(
        *, noasync, message: "blocks on SQLite: call it inside `await store.perform { … }` (a thread of its own), never on Swift's cooperative pool"
    )
    public func resyncUnfinished() throws -> Bool {
        try database.read { db in try meta(db, "resync") != nil }
    }

    /// Ends a full resync: notifications the service did not send again are gone.
    @available(
        *, noasync, message: "blocks on SQLite: call it inside `await store.perform { … }` (a thread of its own), never on Swift's cooperative pool"
    )
    public func finishResync() throws {
        try write { db in
            try db.execute(sql: "DELETE FROM outbox WHERE notification_id IN (SELECT id FROM notifications WHERE stale = 1)")
            try db.execute(sql: "DELETE FROM notifications WHERE stale = 1")
            try setMeta(db, "resync", nil)
            try bumpRevision(db)
        }
    }

    /// Writes the service's view of a notification. New notifications and re-published ones
    /// (a new `createdDateTime`) are marked to be announced by `notty poll`. When the row may
    /// exist, a change of state alone (the common change) updates only the state columns, so
    /// that indexes without them are left alone. Only a page of the feed vouches that the
    /// service still has a row for this device (`fromFeed`, clearing a resync's stale mark);
    /// an answer to a flush during a resync leaves the mark, so that a row the user lost
    /// meanwhile (a team they left) is still dropped at the resync's end.
    func storeServiceState(
        _ db: Database, _ n: UserNotification, onlyIfNotOlder: Bool, announce: Bool = true, mayExist: Bool = true, fromFeed: Bool = true
    ) throws {
        let stale: Int64 = fromFeed ? 0 : try meta(db, "resync") == nil ? 0 : 1
        let modified = ISOTime.millis(n.lastModifiedDateTime)
        if onlyIfNotOlder,
            let stored = try Int64.fetchOne(db.cachedStatement(sql: "SELECT modified FROM notifications WHERE id = ?"), arguments: [n.id]),
            stored > modified
        {
            return
        }
        // The column `policies` keeps what is rarely there: the policies, the escalations
        // (PROTOCOL.md §11), the actions and how they went (PROTOCOL.md §12), a team's name and who
        // changed its notification (PROTOCOL.md §13.1), as one JSON object.
        var policies: String?
        if n.targetPolicy != nil || n.fallbackPolicy != nil || n.escalations != nil || n.actions != nil || n.actionResults != nil
            || n.team != nil || n.changedBy != nil
        {
            var object: [String: JSONValue] = [:]
            object["targetPolicy"] = n.targetPolicy
            object["fallbackPolicy"] = n.fallbackPolicy
            object["escalations"] = n.escalations.map(EscalationRecord.value)
            object["actions"] = n.actions.map(NotificationAction.shownValue)
            object["actionResults"] = n.actionResults.map { .array($0.map(\.value)) }
            object["team"] = n.team.map(JSONValue.string)
            object["changedBy"] = n.changedBy?.value
            policies = JSONValue.object(object).jsonText
        }
        let read = n.readState.rawValue, action = n.userActionState.rawValue
        let until = n.userActionState == .snoozed ? n.snoozedUntil.map(ISOTime.millis) : nil
        let bucket = Self.bucket(read: read, action: action)
        let created = ISOTime.millis(n.createdDateTime), expires = ISOTime.millis(n.expirationDateTime)
        if mayExist {
            try db.cachedStatement(
                sql: """
                    UPDATE notifications SET modified = ?, s_read = ?, s_action = ?, s_snoozed = ?,
                        read_state = ?, action_state = ?, snoozed_until = ?, bucket = ?, stale = min(stale, ?)
                    WHERE id = ? AND hidden = 0 AND created = ? AND expires = ? AND app_notification_id = ? AND app = ?
                        AND group_name IS ? AND priority = ? AND title IS ? AND body IS ? AND raw_content IS ? AND ttl IS ? AND policies IS ?
                        AND launch_url IS ?
                    """
            ).execute(arguments: [
                modified, read, action, until, read, action, until, bucket, stale,
                n.id, created, expires, n.appNotificationId, n.targetHostName,
                n.groupName, n.priority.rawValue, n.payload.visualContent?.title, n.payload.visualContent?.body,
                n.payload.rawContent, n.displayTimeToLive, policies, n.launchUrl,
            ])
            if db.changesCount == 1 { return }
        }
        let insert = try db.cachedStatement(
            sql: """
                INSERT INTO notifications (id, app_notification_id, app, group_name, priority, title, body, raw_content, ttl, policies,
                    created, expires, modified, s_read, s_action, s_snoozed, read_state, action_state, snoozed_until, bucket, announced, stale, launch_url)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (id) DO UPDATE SET
                    app_notification_id = excluded.app_notification_id, app = excluded.app, group_name = excluded.group_name,
                    priority = excluded.priority, title = excluded.title, body = excluded.body, raw_content = excluded.raw_content,
                    ttl = excluded.ttl, policies = excluded.policies, launch_url = excluded.launch_url,
                    announced = CASE WHEN notifications.created = excluded.created THEN notifications.announced ELSE excluded.announced END,
                    created = excluded.created, expires = excluded.expires, modified = excluded.modified,
                    s_read = excluded.s_read, s_action = excluded.s_action, s_snoozed = excluded.s_snoozed,
                    read_state = excluded.read_state, action_state = excluded.action_state, snoozed_until = excluded.snoozed_until,
                    bucket = excluded.bucket, hidden = 0, stale = min(notifications.stale, excluded.stale)
                """)
        // Bound and stepped with SQLite's own functions: GRDB's arguments (an existential per
        // value, 22 a row) were 14% of a first sync's writing thread. Nothing observes these
        // statements through GRDB (no transaction observer is registered), and the triggers
        // run inside SQLite either way.
        var row = DirectBinding(insert)
        row.text(n.id); row.text(n.appNotificationId); row.text(n.targetHostName); row.text(n.groupName); row.text(n.priority.rawValue)
        row.text(n.payload.visualContent?.title); row.text(n.payload.visualContent?.body); row.text(n.payload.rawContent)
        row.integer(n.displayTimeToLive.map(Int64.init)); row.text(policies)
        row.integer(created); row.integer(expires); row.integer(modified)
        for _ in 0..<2 { row.text(read); row.text(action); row.integer(until) }
        row.text(bucket); row.integer(announce ? 0 : 1); row.integer(stale); row.text(n.launchUrl)
        try row.step(db)
    }
}

/// Values bound in order into a prepared statement with SQLite's functions, then one step:
/// for the insert a first sync runs 100,000 times.
struct DirectBinding {
    private let statement: Statement
    private var index: Int32 = 0
    private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

    /// Every parameter is bound again before ``step(_:)`` (it checks), so none is cleared here.
    init(_ statement: Statement) {
        self.statement = statement
        sqlite3_reset(statement.sqliteStatement)
    }

    mutating func text(_ value: String?) {
        index += 1
        guard var value else { sqlite3_bind_null(statement.sqliteStatement, index); return }
        let handle = statement.sqliteStatement, at = index
        value.withUTF8 { bytes in
            // A null pointer would bind NULL: an empty string is bound from a literal.
            guard let start = bytes.baseAddress, !bytes.isEmpty else { _ = sqlite3_bind_text(handle, at, "", 0, Self.transient); return }
            _ = start.withMemoryRebound(to: CChar.self, capacity: bytes.count) {
                sqlite3_bind_text(handle, at, $0, Int32(bytes.count), Self.transient)
            }
        }
    }

    mutating func integer(_ value: Int64?) {
        index += 1
        guard let value else { sqlite3_bind_null(statement.sqliteStatement, index); return }
        sqlite3_bind_int64(statement.sqliteStatement, index, value)
    }

    /// Runs the statement to its end; an error is GRDB's `DatabaseError`.
    func step(_ db: Database) throws {
        precondition(Int(index) == Int(sqlite3_bind_parameter_count(statement.sqliteStatement)), "every parameter is bound")
        let handle = statement.sqliteStatement
        defer { sqlite3_reset(handle) }
        var code = sqlite3_step(handle)
        while code == SQLITE_ROW { code = sqlite3_step(handle) }
        guard code == SQLITE_DONE else {
            throw DatabaseError(
                resultCode: ResultCode(rawValue: code), message: String(cString: sqlite3_errmsg(db.sqliteConnection)), sql: statement.sql)
        }
    }
}
