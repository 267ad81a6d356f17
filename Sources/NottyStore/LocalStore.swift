import Foundation
import GRDB
import GRDBSQLite
import NottyCore
import NottyPOSIX
import NottySQLite
import Synchronization

/// A device's durable copy of the signed-in user's notifications (PROTOCOL.md §4 "Files").
///
/// Every notification keeps two states: the service's (as last pulled or acknowledged) and the
/// shown one, which is the service's with the pending outbox re-applied on top. Every user
/// action writes the shown state and an outbox entry in one transaction. Several processes of
/// one device may open the same file (WAL, busy timeout); ``revision()`` tells a reader
/// that another connection committed.
///
/// Every method blocks (SQLite, its locks, the disk) and so is unavailable from async code:
/// the compiler refuses a call on Swift's cooperative pool (2 threads here), and async code
/// goes through ``perform(_:)`` or ``open(path:)`` instead, which run it on a thread of its own.
/// A thread of the caller's own (the center's loop, a command's main) calls them directly.
public final class LocalStore: Sendable {
    public let path: String
    /// A pool of connections (one writer, readers beside it); one connection read-only
    /// (``openedToRead(path:)``: a pool's second connection and queues cost more than a count).
    let database: any DatabaseWriter
    /// Checkpoints the WAL beside the writer instead of in its commits.
    let checkpointer: WALCheckpointer
    /// The candidates of the last search with few of them (see ``SearchPlan``).
    let searchPlan = Mutex<SearchPlan?>(nil)

    /// Opens (and creates) the store at `path` and migrates it. `readers`: how many
    /// connections read at once (tests take one, to look at its statements).
    @available(*, noasync, message: "blocks on SQLite: use `await LocalStore.open(path:)` (a thread of its own), never on Swift's cooperative pool")
    public convenience init(path: String) throws {
        try self.init(path: path, readers: 4)
    }

    /// ``init(path:)`` from async code: opens and migrates the store off the pool.
    public static func open(path: String) async throws -> LocalStore {
        try await offThePool { try LocalStore(path: path) }
    }

    /// Runs `body`, which calls the store's blocking methods, on a thread of its own and
    /// awaits its result: how async code (the sync engine, `notty poll`, commands) uses the store.
    @discardableResult
    public func perform<T: Sendable>(_ body: @escaping @Sendable (LocalStore) throws -> T) async throws -> T {
        try await offThePool { [self] in try body(self) }
    }

    /// The store at `path` opened to read only, with one reader and no writer (`notty count`,
    /// in every prompt: half the time of an opening); nil when it is not at this build's schema
    /// (``init(path:)`` then migrates it, or refuses a newer one).
    @available(*, noasync, message: "blocks on SQLite: call it inside `offThePool { … }`, never on Swift's cooperative pool")
    public static func openedToRead(path: String) throws -> LocalStore? {
        let store = try LocalStore(path: path, readers: 1, readOnly: true)
        let current = try store.database.read { db in try migrator.hasCompletedMigrations(db) && !migrator.hasBeenSuperseded(db) }
        return current ? store : nil
    }

    @available(
        *, noasync, message: "blocks on SQLite: call it inside `await store.perform { … }` (a thread of its own), never on Swift's cooperative pool"
    )
    init(path: String, readers: Int, readOnly: Bool = false) throws {
        self.path = path
        checkpointer = WALCheckpointer(path: path)
        var config = Configuration()
        config.readonly = readOnly
        config.busyMode = .timeout(30)
        config.maximumReaderCount = readers
        // Statement journals in memory: a write statement inside a transaction (each row of a
        // page, each state change; they fire triggers) keeps the pages it changes there so it
        // can be undone alone. On disk (SQLite's default here) that was a temporary file
        // written page by page: 2.16 million `pwrite` calls for a 100,000-row first sync.
        config.prepareDatabase { db in
            // The -wal and -shm files stay when the last connection closes (they are emptied,
            // not deleted): opening the store again then needs no new disk space, so the store
            // can be read on a full disk (SQLite cannot map a new -shm there, not even to read).
            var persist: Int32 = 1
            _ = sqlite3_file_control(db.sqliteConnection, "main", SQLITE_FCNTL_PERSIST_WAL, &persist)
            try db.execute(sql: "PRAGMA temp_store = MEMORY")
            // Searches bind `LIKE` patterns: without this each search statement would be
            // parsed and planned anew every time it runs (see QueryPlans).
            try QueryPlans.keep(db)
            // The search index's folding (PROTOCOL.md §17): its triggers call it.
            SearchFunctions.install(db)
        }
        if readOnly {
            do {
                database = try DatabaseQueue(path: path, configuration: config)
            } catch {
                throw Self.storeError(error, path: path)
            }
            return
        }
        let directory = URL(fileURLWithPath: path).deletingLastPathComponent().path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        // The user's notifications are theirs alone, whatever the umask and whatever an older
        // build left (SQLite makes -wal and -shm with the database's mode).
        for suffix in ["", "-wal", "-shm"] { chmod(path + suffix, 0o600) }
        do {
            let pool = try DatabasePool(path: path, configuration: config)
            database = pool
            // A state change the user made survives a power loss too. Set on the writer after
            // opening: the pool sets `synchronous = NORMAL` when it turns WAL on, after
            // `prepareDatabase` would have run.
            try database.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA synchronous = FULL") }
            // A store of a newer build is left as it is (this build would not know its tables).
            let migrator = Self.migrator
            let unknown = try database.read { db in try migrator.appliedIdentifiers(db).subtracting(migrator.migrations) }
            if !unknown.isEmpty { throw StoreError.newer(path: path, unknown: unknown.sorted(), newestKnown: migrator.migrations.last ?? "") }
            try Self.migrator.migrate(pool)
            try pool.write { db in try SearchIndex.checkFolding(db) }
        } catch {
            throw Self.storeError(error, path: path)
        }
        database.writeWithoutTransaction { [checkpointer] db in checkpointer.install(on: db) }
    }

    /// Every write of the store goes through here: a full disk becomes
    /// ``StoreError/diskFull(_:)`` (one line a user can act on), anything else is as it was.
    func write<T>(_ updates: (Database) throws -> T) throws -> T {
        do {
            return try database.write(updates)
        } catch {
            throw Self.storeError(error, path: path)
        }
    }

    /// ``write(_:)`` without the transaction GRDB opens (the body opens its own).
    func writeWithoutTransaction<T>(_ updates: (Database) throws -> T) throws -> T {
        do {
            return try database.writeWithoutTransaction(updates)
        } catch {
            throw Self.storeError(error, path: path)
        }
    }

    /// `error` as a store error: ``StoreError/diskFull(_:)`` when SQLite ran out of space
    /// (`SQLITE_FULL`, or an I/O error with the store's file system full).
    static func storeError(_ error: any Error, path: String) -> any Error {
        if let damage = StoreError.damage(in: error, path: path) { return damage }
        guard let database = error as? DatabaseError else { return error }
        let directory = URL(fileURLWithPath: path).deletingLastPathComponent().path
        if database.resultCode == .SQLITE_FULL || (database.resultCode == .SQLITE_IOERR && freeBytes(directory) < 1 << 20) {
            return StoreError.diskFull(directory)
        }
        return error
    }

    /// Bytes an unprivileged write may still use on the file system of `directory`.
    static func freeBytes(_ directory: String) -> UInt64 {
        var stats = statvfs()
        guard statvfs(directory, &stats) == 0 else { return .max }
        return UInt64(stats.f_bavail) * UInt64(stats.f_frsize)
    }

    /// The statements kept prepared on the connection of the reader that answers (the only
    /// one of a store opened with `readers: 1`) that were prepared again, with how many times.
    /// Tests: SQLite prepares a statement again each time a value is bound to a parameter its
    /// plan depends on.
    @available(
        *, noasync, message: "blocks on SQLite: call it inside `await store.perform { … }` (a thread of its own), never on Swift's cooperative pool"
    )
    func readerReprepares() throws -> [String: Int] {
        try database.read { db in
            var found: [String: Int] = [:]
            var statement = sqlite3_next_stmt(db.sqliteConnection, nil)
            while let current = statement {
                let times = sqlite3_stmt_status(current, SQLITE_STMTSTATUS_REPREPARE, 0)
                if times > 0 { found[sqlite3_sql(current).map { String(cString: $0) } ?? "?", default: 0] += Int(times) }
                statement = sqlite3_next_stmt(db.sqliteConnection, current)
            }
            return found
        }
    }

    /// A pragma's value on the writer's connection (tests check `synchronous`).
    @available(
        *, noasync, message: "blocks on SQLite: call it inside `await store.perform { … }` (a thread of its own), never on Swift's cooperative pool"
    )
    func writerPragma(_ name: String) throws -> Int? {
        try database.writeWithoutTransaction { db in try Int.fetchOne(db, sql: "PRAGMA \(name)") }
    }

    // MARK: - Schema (migrations are never edited once shipped)

    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.execute(
                sql: """
                    CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
                    CREATE TABLE notifications (
                        id TEXT PRIMARY KEY,
                        app_notification_id TEXT NOT NULL,
                        app TEXT NOT NULL,
                        group_name TEXT,
                        priority TEXT NOT NULL,
                        title TEXT,
                        body TEXT,
                        raw_content TEXT,
                        ttl INTEGER,
                        policies TEXT,
                        created INTEGER NOT NULL,
                        expires INTEGER NOT NULL,
                        modified INTEGER NOT NULL,
                        s_read TEXT NOT NULL,
                        s_action TEXT NOT NULL,
                        s_snoozed INTEGER,
                        read_state TEXT NOT NULL,
                        action_state TEXT NOT NULL,
                        snoozed_until INTEGER,
                        bucket TEXT NOT NULL,
                        hidden INTEGER NOT NULL DEFAULT 0,
                        announced INTEGER NOT NULL DEFAULT 0,
                        stale INTEGER NOT NULL DEFAULT 0
                    );
                    CREATE INDEX notifications_bucket ON notifications (bucket, created DESC, id DESC);
                    CREATE INDEX notifications_order ON notifications (created DESC, id DESC);
                    CREATE INDEX notifications_counts ON notifications (bucket, read_state, hidden, expires, snoozed_until);
                    CREATE INDEX notifications_unannounced ON notifications (announced) WHERE announced = 0;
                    CREATE TABLE outbox (
                        seq INTEGER PRIMARY KEY AUTOINCREMENT,
                        mutation_id TEXT NOT NULL UNIQUE,
                        notification_id TEXT NOT NULL,
                        op TEXT NOT NULL,
                        read_state TEXT,
                        action_state TEXT,
                        snoozed_until INTEGER,
                        changed_at INTEGER NOT NULL,
                        created INTEGER NOT NULL,
                        attempts INTEGER NOT NULL DEFAULT 0
                    );
                    CREATE INDEX outbox_notification ON outbox (notification_id);
                    """)
        }
        // Windows, positions and counts read indexes only: every column a view filter needs
        // is in the index its order comes from, and ended snoozes are one small range.
        migrator.registerMigration("v2 covering view indexes") { db in
            try db.execute(
                sql: """
                    DROP INDEX notifications_bucket;
                    DROP INDEX notifications_order;
                    CREATE INDEX notifications_view ON notifications (bucket, created DESC, id DESC, hidden, expires, read_state, snoozed_until);
                    CREATE INDEX notifications_all ON notifications (created DESC, id DESC, hidden, expires);
                    CREATE INDEX notifications_snoozes ON notifications (snoozed_until, read_state) WHERE bucket = 'snoozed';
                    CREATE INDEX notifications_expiry ON notifications (expires) WHERE hidden = 0;
                    """)
        }
        // Positions without stepping over index entries: how many visible rows each bucket has
        // per block of creation time, at four block sizes, kept exact by triggers (see ViewIndex;
        // a change of state, the common write, updates one row per block size).
        // Counts come from these blocks now, so their index goes (it slowed every state change).
        migrator.registerMigration("v3 view blocks") { db in
            try db.execute(
                sql: """
                    DROP INDEX notifications_counts;
                    CREATE TABLE view_blocks (
                        level INTEGER NOT NULL,
                        block INTEGER NOT NULL,
                        \(ViewIndex.buckets.map { "\($0.rawValue) INTEGER NOT NULL" }.joined(separator: ",\n"))
                        , PRIMARY KEY (level, block)
                    ) WITHOUT ROWID;
                    """)
            let blocks = ViewIndex.blockRows, added = ViewIndex.addedToBlocks
            try db.execute(
                sql: """
                    \(ViewIndex.insertTrigger(when: "new.hidden = 0"))
                    CREATE TRIGGER view_blocks_delete AFTER DELETE ON notifications WHEN old.hidden = 0 BEGIN
                        INSERT INTO view_blocks VALUES \(blocks("old") { "-(old.bucket = '\($0)')" })\(added);
                    END;
                    CREATE TRIGGER view_blocks_restate AFTER UPDATE OF bucket, hidden ON notifications
                    WHEN old.created = new.created AND (old.bucket IS NOT new.bucket OR old.hidden IS NOT new.hidden) BEGIN
                        INSERT INTO view_blocks VALUES \(blocks("new") { "(new.hidden = 0 AND new.bucket = '\($0)') - (old.hidden = 0 AND old.bucket = '\($0)')" })\(added);
                    END;
                    CREATE TRIGGER view_blocks_move AFTER UPDATE OF created ON notifications WHEN old.created IS NOT new.created BEGIN
                        INSERT INTO view_blocks SELECT * FROM (VALUES \(blocks("old") { "-(old.bucket = '\($0)')" })) WHERE old.hidden = 0\(added);
                        INSERT INTO view_blocks SELECT * FROM (VALUES \(blocks("new") { "new.bucket = '\($0)'" })) WHERE new.hidden = 0\(added);
                    END;
                    """)
            try ViewIndex.countRows(db, after: nil)
        }
        // Search without reading every row: a trigram index of the searched text, built
        // after the rows arrive (see SearchIndex).
        migrator.registerMigration("v4 search index") { db in
            try SearchIndex.migrate(db)
        }
        // `n`/`p` in the center: the next Unread row of a bucket after a row, in one seek.
        migrator.registerMigration("v5 unread index") { db in
            try db.execute(sql: "CREATE INDEX notifications_unread ON notifications (bucket, created DESC, id DESC) WHERE read_state = 'Unread'")
        }
        // `notty poll --desktop`: which notification each desktop popup shows (survives a restart).
        migrator.registerMigration("v6 popups") { db in
            try db.execute(sql: "CREATE TABLE popups (notification_id TEXT PRIMARY KEY, popup_id INTEGER, view TEXT NOT NULL) WITHOUT ROWID")
        }
        // Links (PROTOCOL.md §7.1).
        migrator.registerMigration("v7 links") { db in
            try db.execute(sql: "ALTER TABLE notifications ADD COLUMN launch_url TEXT")
        }
        // `notty poll --on-change`: a queue of state changes, fed by triggers while it watches.
        migrator.registerMigration("v8 state changes") { db in
            try migrateStateChanges(db)
        }
        // A first sync's pages: their new rows are counted into `view_blocks` once per page
        // instead of four upserts per row (see ``apply(page:since:now:)``).
        migrator.registerMigration("v9 view blocks in bulk") { db in
            try db.execute(sql: "DROP TRIGGER view_blocks_insert")
            try db.execute(
                sql: ViewIndex.insertTrigger(when: "new.hidden = 0 AND NOT EXISTS (SELECT 1 FROM meta WHERE key = '\(ViewIndex.bulkKey)')"))
        }
        // The user's preferences (PROTOCOL.md §9): the service's, or this device's not yet sent.
        migrator.registerMigration("v10 preferences") { db in
            try db.execute(
                sql: """
                    CREATE TABLE preferences (
                        key TEXT PRIMARY KEY,
                        value TEXT NOT NULL,
                        changed_at INTEGER NOT NULL,
                        pending INTEGER NOT NULL DEFAULT 0
                    )
                    """)
        }
        // What a quiet period held back (PROTOCOL.md §9), kept until its summary: `notty poll`
        // restarted while quiet still sums it up when quiet ends.
        migrator.registerMigration("v11 quiet held") { db in
            try db.execute(sql: "CREATE TABLE quiet_held (notification_id TEXT PRIMARY KEY) WITHOUT ROWID")
        }
        // `notty count` and `notty watch` tell whether a High one is Unread in every prompt.
        migrator.registerMigration("v12 High unread index") { db in
            try db.execute(
                sql:
                    "CREATE INDEX notifications_high_unread ON notifications (bucket, hidden, expires) WHERE read_state = 'Unread' AND priority = 'High'"
            )
        }
        // Search (PROTOCOL.md §17): the query language's word index replaces the trigram index.
        migrator.registerMigration("v13 search words") { db in
            try SearchIndex.migrateToWords(db)
        }
        // `notty count` and `notty watch` read the High Unread counts as data (``ViewIndex``).
        migrator.registerMigration("v14 High unread counts") { db in
            try ViewIndex.migrateHighUnread(db)
        }
        return migrator
    }

    // MARK: - Meta

    func meta(_ db: Database, _ key: String) throws -> String? {
        try String.fetchOne(db.cachedStatement(sql: "SELECT value FROM meta WHERE key = ?"), arguments: [key])
    }

    func setMeta(_ db: Database, _ key: String, _ value: String?) throws {
        if let value {
            try db.cachedStatement(sql: "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value")
                .execute(arguments: [key, value])
        } else {
            try db.execute(sql: "DELETE FROM meta WHERE key = ?", arguments: [key])
        }
    }

    /// The change-feed cursor of the last applied page (nil: never synced).
    @available(
        *, noasync, message: "blocks on SQLite: call it inside `await store.perform { … }` (a thread of its own), never on Swift's cooperative pool"
    )
    public func cursor() throws -> String? {
        try database.read { db in try meta(db, "cursor") }
    }

    /// What ``status()`` shows besides counts.
    public struct SyncInfo: Sendable, Equatable {
        public var cursor: String?
        public var lastSync: Date?
        public var outbox: Int
    }

    @available(
        *, noasync, message: "blocks on SQLite: call it inside `await store.perform { … }` (a thread of its own), never on Swift's cooperative pool"
    )
    public func syncInfo() throws -> SyncInfo {
        try database.read { db in
            SyncInfo(
                cursor: try meta(db, "cursor"),
                lastSync: try meta(db, "last_sync").flatMap(Int64.init).map(ISOTime.date(millis:)),
                outbox: try Int.fetchOne(db, sql: "SELECT count(*) FROM outbox") ?? 0)
        }
    }

    /// Ties the store to `account`; when it held another account's notifications they are
    /// forgotten (with their outbox) so users never mix.
    @available(
        *, noasync, message: "blocks on SQLite: call it inside `await store.perform { … }` (a thread of its own), never on Swift's cooperative pool"
    )
    public func bind(account: String) throws {
        // Every command binds at its start: the store already bound to this account (the usual
        // case) is read, not written (a write commits and waits for the disk).
        if try database.read({ db in try meta(db, "account") }) == account { return }
        try write { db in
            if let current = try meta(db, "account"), current != account {
                try SearchIndex.reset(db)
                // The revision goes on counting (readers key caches by it).
                // Meta first: without `watch_states` the deletions are not queued as state changes.
                try db.execute(
                    sql:
                        "DELETE FROM meta WHERE key NOT IN ('revision', 'search_folding'); DELETE FROM notifications; DELETE FROM outbox; DELETE FROM state_changes; DELETE FROM preferences;"
                )
                try bumpRevision(db)
            }
            try setMeta(db, "account", account)
        }
    }

    // MARK: - Hybrid logical clock

    /// The next `changedAt` for a change made on this device: the wall clock in milliseconds,
    /// but always after every clock this device has written or seen. The caller writes the
    /// last clock it used back to `hlc`.
    func nextClock(_ db: Database, now: Date) throws -> Int64 {
        let last = try meta(db, "hlc").flatMap(Int64.init) ?? 0
        return max(ISOTime.millis(now), last + 1)
    }

    /// Moves the clock past a time seen from the service (the receive rule of an HLC).
    func observeClock(_ db: Database, millis: Int64) throws {
        let last = try meta(db, "hlc").flatMap(Int64.init) ?? 0
        if millis > last { try setMeta(db, "hlc", String(millis)) }
    }
}
