import Foundation
import GRDB
import GRDBSQLite
import NottyCore

/// A change the user makes on this device.
public enum LocalAction: Sendable, Equatable {
    case patch(StateChange)
    case delete
}

/// A pending change in the outbox, as sent to the service's batch route.
public struct OutboxEntry: Sendable, Equatable {
    public var seq: Int64
    public var mutationId: String
    public var notificationId: String
    public var action: LocalAction
    public var changedAt: Int64

    /// The wire form (SPEC §2.3 batch item), with its stable `mutationId`.
    public var mutation: Mutation {
        switch action {
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

// MARK: - The user's actions

extension LocalStore {
    /// Records actions on notifications: for each, the shown state and a durable outbox entry in
    /// one transaction. Ids not in the store (or deleted) are skipped. Returns the state of each
    /// affected notification before the action (for undo).
    @discardableResult
    public func record(_ actions: [(id: String, action: LocalAction)], now: Date = Date()) throws -> [ShownState] {
        try write { db in
            var before: [ShownState] = []
            // One clock read for the whole batch: after the first, each action's clock is the
            // previous one + 1 (what reading and writing `hlc` each time would give), and `hlc`
            // is written once, at the end.
            var lastClock: Int64?
            for (id, action) in actions {
                guard let row = try Row.fetchOne(
                    db.cachedStatement(sql: "SELECT read_state, action_state, snoozed_until FROM notifications WHERE id = ? AND hidden = 0"),
                    arguments: [id])
                else { continue }
                before.append(ShownState(
                    id: id, readState: ReadState(spelling: row["read_state"]) ?? .unread,
                    userActionState: UserActionState(spelling: row["action_state"]) ?? .noInteraction,
                    snoozedUntil: (row["snoozed_until"] as Int64?).map(ISOTime.date(millis:))))
                let clock = try lastClock.map { $0 + 1 } ?? nextClock(db, now: now)
                lastClock = clock
                var read: String?, state: String?, until: Int64?, op = "patch"
                switch action {
                case .patch(let change):
                    read = change.readState?.rawValue
                    state = change.userActionState?.rawValue
                    if change.userActionState == .snoozed || (change.userActionState == nil && change.snoozedUntil != nil) {
                        state = UserActionState.snoozed.rawValue
                        until = change.snoozedUntil.map(ISOTime.millis)
                    }
                case .delete:
                    op = "delete"
                }
                try db.cachedStatement(sql: """
                    INSERT INTO outbox (mutation_id, notification_id, op, read_state, action_state, snoozed_until, changed_at, created)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                    """).execute(arguments: [UUID().uuidString.lowercased(), id, op, read, state, until, clock, ISOTime.millis(now)])
                try refreshShown(db, id: id)
            }
            if let lastClock { try setMeta(db, "hlc", String(lastClock)) }
            if !before.isEmpty { try bumpRevision(db) }
            return before
        }
    }

    /// Recomputes the shown state of `id`: the service's state with every pending outbox entry
    /// for it applied in order.
    func refreshShown(_ db: Database, id: String) throws {
        guard let row = try Row.fetchOne(db.cachedStatement(sql: "SELECT s_read, s_action, s_snoozed FROM notifications WHERE id = ?"), arguments: [id]) else { return }
        var shown = (readState: ReadState(spelling: row["s_read"]) ?? .unread, userActionState: UserActionState(spelling: row["s_action"]) ?? .noInteraction,
                     snoozedUntil: (row["s_snoozed"] as Int64?).map(ISOTime.date(millis:)))
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
        try db.cachedStatement(sql: "UPDATE notifications SET read_state = ?, action_state = ?, snoozed_until = ?, bucket = ?, hidden = ? WHERE id = ?")
            .execute(arguments: [read, action, shown.snoozedUntil.map(ISOTime.millis), Self.bucket(read: read, action: action), hidden, id])
    }

    static func bucket(read: String, action: String) -> String {
        NotificationView.bucket(readState: ReadState(spelling: read) ?? .unread, userActionState: UserActionState(spelling: action) ?? .noInteraction).rawValue
    }

    // MARK: - The outbox

    /// The oldest pending changes, at most `limit`.
    public func pending(limit: Int = 1000) throws -> [OutboxEntry] {
        try pool.read { db in
            try Row.fetchAll(db.cachedStatement(sql: """
                SELECT seq, mutation_id, notification_id, op, read_state, action_state, snoozed_until, changed_at
                FROM outbox ORDER BY seq LIMIT ?
                """), arguments: [limit]).map { row in
                let action: LocalAction
                if (row["op"] as String) == "delete" {
                    action = .delete
                } else {
                    action = .patch(StateChange(
                        readState: (row["read_state"] as String?).flatMap { ReadState(spelling: $0) },
                        userActionState: (row["action_state"] as String?).flatMap { UserActionState(spelling: $0) },
                        snoozedUntil: (row["snoozed_until"] as Int64?).map(ISOTime.date(millis:))))
                }
                return OutboxEntry(seq: row["seq"], mutationId: row["mutation_id"], notificationId: row["notification_id"], action: action, changedAt: row["changed_at"])
            }
        }
    }

    /// How many changes wait to be sent.
    public func outboxCount() throws -> Int {
        try pool.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM outbox") ?? 0 }
    }

    /// Takes the service's answers to a flushed batch: an entry the service applied (2xx) or
    /// refused for good (4xx: unknown or deleted notification, invalid) leaves the outbox;
    /// anything else (429, 5xx) stays to be sent again with the same `mutationId`. A returned
    /// notification becomes the service state when it is not older than the stored one.
    /// Returns how many entries left the outbox.
    @discardableResult
    public func acknowledge(_ results: [MutationResult]) throws -> Int {
        try write { db in
            var done = 0
            for result in results {
                guard let mutationId = result.mutationId else { continue }
                let permanent = (200..<300).contains(result.status) || (400..<500).contains(result.status) && result.status != 429 && result.status != 408
                guard permanent else {
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
                    try storeServiceState(db, notification, onlyIfNotOlder: true)
                }
                try refreshShown(db, id: result.id)
            }
            try bumpRevision(db)
            return done
        }
    }

    // MARK: - The service's changes

    /// Applies one page of the change feed in one transaction, if the store's cursor is still
    /// `since` (another process of this device may have pulled meanwhile).
    public func apply(page: ChangesPage, since: String?, now: Date = Date()) throws -> PageOutcome {
        try writeWithoutTransaction { db in try Self.inRepairableTransaction(db) {
            guard try meta(db, "cursor") == since else { return .cursorMoved }
            let firstSync = try since == nil && meta(db, "announce_all") == nil
            // Only notifications with pending changes need their shown state worked out again;
            // for the others it is the service's, which the upsert writes.
            let pending = Set(try String.fetchAll(db.cachedStatement(sql: "SELECT DISTINCT notification_id FROM outbox")))
            // Which rows exist, asked once for the page (an initial sync's pages are all new).
            let ids = page.changes.map(\.id)
            let existing = ids.isEmpty ? [] : Set(try String.fetchAll(
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
            }
            try observeClock(db, millis: newest)
            try setMeta(db, "cursor", page.cursor)
            try setMeta(db, "last_sync", String(ISOTime.millis(now)))
            if !page.changes.isEmpty { try bumpRevision(db) }
            return .applied(changed: page.changes.count)
        } }
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
    @discardableResult
    public func deferIndexesIfEmpty() throws -> Bool {
        try write { db in
            guard try meta(db, "cursor") == nil,
                  try !Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM notifications)")! else { return false }
            let indexes = try Row.fetchAll(db, sql: """
                SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'notifications' AND sql IS NOT NULL
                """).filter { !Self.indexesNamedByQueries.contains($0["name"]) }
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
    public func buildDeferredIndexes() throws {
        let pattern = Self.deferredIndexPrefix + "%"
        let deferred = "SELECT key, value FROM meta WHERE key LIKE ?"
        guard try pool.read({ db in try Row.fetchOne(db, sql: deferred, arguments: [pattern]) }) != nil else { return }
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
    }

    /// How many new rows a page needs for them to be counted into `view_blocks` in one go.
    static let bulkInsertRows = 32

    /// Starts a full resync (after `410 cursorExpired`): forgets the cursor and marks every
    /// notification stale; pages from the start clear the mark; ``finishResync()`` drops what
    /// the service no longer has. The outbox is kept.
    public func beginResync() throws {
        try write { db in
            try setMeta(db, "cursor", nil)
            try setMeta(db, "announce_all", "1")
            try db.execute(sql: "UPDATE notifications SET stale = 1")
        }
    }

    /// Ends a full resync: notifications the service did not send again are gone.
    public func finishResync() throws {
        try write { db in
            try db.execute(sql: "DELETE FROM outbox WHERE notification_id IN (SELECT id FROM notifications WHERE stale = 1)")
            try db.execute(sql: "DELETE FROM notifications WHERE stale = 1")
            try bumpRevision(db)
        }
    }

    /// Writes the service's view of a notification. New notifications and re-published ones
    /// (a new `createdDateTime`) are marked to be announced by `notty poll`. When the row may
    /// exist, a change of state alone (the common change) updates only the state columns, so
    /// that indexes without them are left alone.
    func storeServiceState(_ db: Database, _ n: UserNotification, onlyIfNotOlder: Bool, announce: Bool = true, mayExist: Bool = true) throws {
        let modified = ISOTime.millis(n.lastModifiedDateTime)
        if onlyIfNotOlder,
           let stored = try Int64.fetchOne(db.cachedStatement(sql: "SELECT modified FROM notifications WHERE id = ?"), arguments: [n.id]),
           stored > modified {
            return
        }
        var policies: String?
        if n.targetPolicy != nil || n.fallbackPolicy != nil {
            var object: [String: JSONValue] = [:]
            object["targetPolicy"] = n.targetPolicy
            object["fallbackPolicy"] = n.fallbackPolicy
            policies = JSONValue.object(object).jsonText
        }
        let read = n.readState.rawValue, action = n.userActionState.rawValue
        let until = n.userActionState == .snoozed ? n.snoozedUntil.map(ISOTime.millis) : nil
        let bucket = Self.bucket(read: read, action: action)
        let created = ISOTime.millis(n.createdDateTime), expires = ISOTime.millis(n.expirationDateTime)
        if mayExist {
            try db.cachedStatement(sql: """
                UPDATE notifications SET modified = ?, s_read = ?, s_action = ?, s_snoozed = ?,
                    read_state = ?, action_state = ?, snoozed_until = ?, bucket = ?, stale = 0
                WHERE id = ? AND hidden = 0 AND created = ? AND expires = ? AND app_notification_id = ? AND app = ?
                    AND group_name IS ? AND priority = ? AND title IS ? AND body IS ? AND raw_content IS ? AND ttl IS ? AND policies IS ?
                    AND launch_url IS ?
                """).execute(arguments: [
                    modified, read, action, until, read, action, until, bucket,
                    n.id, created, expires, n.appNotificationId, n.targetHostName,
                    n.groupName, n.priority.rawValue, n.payload.visualContent?.title, n.payload.visualContent?.body,
                    n.payload.rawContent, n.displayTimeToLive, policies, n.launchUrl,
                ])
            if db.changesCount == 1 { return }
        }
        let insert = try db.cachedStatement(sql: """
            INSERT INTO notifications (id, app_notification_id, app, group_name, priority, title, body, raw_content, ttl, policies,
                created, expires, modified, s_read, s_action, s_snoozed, read_state, action_state, snoozed_until, bucket, announced, stale, launch_url)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?)
            ON CONFLICT (id) DO UPDATE SET
                app_notification_id = excluded.app_notification_id, app = excluded.app, group_name = excluded.group_name,
                priority = excluded.priority, title = excluded.title, body = excluded.body, raw_content = excluded.raw_content,
                ttl = excluded.ttl, policies = excluded.policies, launch_url = excluded.launch_url,
                announced = CASE WHEN notifications.created = excluded.created THEN notifications.announced ELSE excluded.announced END,
                created = excluded.created, expires = excluded.expires, modified = excluded.modified,
                s_read = excluded.s_read, s_action = excluded.s_action, s_snoozed = excluded.s_snoozed,
                read_state = excluded.read_state, action_state = excluded.action_state, snoozed_until = excluded.snoozed_until,
                bucket = excluded.bucket, hidden = 0, stale = 0
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
        row.text(bucket); row.integer(announce ? 0 : 1); row.text(n.launchUrl)
        try row.step(db)
    }

    // MARK: - Announcements (`notty poll`)

    /// Notifications that arrived (or were re-published) since they were last announced and
    /// are still live, oldest first.
    public func unannounced(now: Date = Date()) throws -> [UserNotification] {
        try pool.read { db in
            try Self.notifications(db.cachedStatement(sql: """
                SELECT \(Self.columns) FROM notifications WHERE announced = 0 AND hidden = 0 AND expires > ?
                ORDER BY created, id
                """), arguments: [ISOTime.millis(now)])
        }
    }

    /// Marks notifications as announced.
    public func markAnnounced(_ ids: [String]) throws {
        guard !ids.isEmpty else { return }
        try write { db in
            for id in ids {
                try db.cachedStatement(sql: "UPDATE notifications SET announced = 1 WHERE id = ?").execute(arguments: [id])
            }
        }
    }

    /// Marks everything in the store as announced (what `notty poll` does when it starts).
    public func markAllAnnounced() throws {
        // One transaction in statements of 5,000 rows: each statement's journal (kept in memory)
        // holds the pages of its own rows only, not those of the whole store (60,000 rows pulled
        // by `notty sync` into a store in use, all still to mark, took about 20 MiB in one
        // statement, for a moment).
        try write { db in
            let statement = try db.cachedStatement(sql: """
                UPDATE notifications SET announced = 1
                WHERE rowid IN (SELECT rowid FROM notifications WHERE announced = 0 LIMIT 5000)
                """)
            repeat { try statement.execute() } while db.changesCount > 0
        }
    }

    /// Records the time of a successful exchange with the service.
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
    public func popups() throws -> [PopupRecord] {
        try pool.read { db in
            try Row.fetchAll(db, sql: "SELECT notification_id, popup_id, view FROM popups").map { row in
                PopupRecord(notificationId: row[0], popupId: (row[1] as Int64?).map { UInt32(truncatingIfNeeded: $0) },
                            view: NotificationView(name: row[2]) ?? .unread)
            }
        }
    }

    /// Replaces the mapping, in one transaction (it holds the popups on screen: a few rows).
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
            _ = start.withMemoryRebound(to: CChar.self, capacity: bytes.count) { sqlite3_bind_text(handle, at, $0, Int32(bytes.count), Self.transient) }
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
            throw DatabaseError(resultCode: ResultCode(rawValue: code), message: String(cString: sqlite3_errmsg(db.sqliteConnection)), sql: statement.sql)
        }
    }
}
