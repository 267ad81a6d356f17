import Foundation
import GRDB
import NottyCore
import NottyService
import NottySQLite

/// ``NotificationStorage`` on one SQLite file through GRDB: WAL mode, many readers, one
/// writer with group commit (``SQLiteWriter``).
public final class SQLiteStorage: NotificationStorage {
    private let pool: DatabasePool
    private let writer: SQLiteWriter
    /// Checkpoints the WAL beside the writer instead of in its commits.
    let checkpointer: WALCheckpointer
    /// `PATH-credentials`: touched after every commit that revokes or deletes credentials, so
    /// that a `notty serve` on this file sees `notty admin`'s removals (another process) on its
    /// next request: ``credentialsStamp()`` is one stat(2), not a query.
    private let credentialsMark: String

    /// Opens (and creates) the store at `path` and migrates it.
    public convenience init(path: String) throws {
        try self.init(path: path, migratingUpTo: nil)
    }

    /// Migrates only up to `lastMigration` when given: tests make the store an older notty left.
    init(path: String, migratingUpTo lastMigration: String?) throws {
        var config = Configuration()
        config.busyMode = .timeout(30)
        config.maximumReaderCount = 8
        config.foreignKeysEnabled = true
        credentialsMark = path + "-credentials"
        let directory = URL(fileURLWithPath: path).deletingLastPathComponent().path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        pool = try DatabasePool(path: path, configuration: config)
        // WAL (DatabasePool's default) with FULL sync: a commit that was acknowledged survives
        // a crash and a power loss. Group commit keeps this affordable. It is set here, on the
        // writer, and not in `prepareDatabase`: the pool turns WAL on after that hook and sets
        // `synchronous = NORMAL` as it does, which would lose the last commits on power loss.
        try pool.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA synchronous = FULL") }
        if let lastMigration { try Self.migrator.migrate(pool, upTo: lastMigration) } else { try Self.migrator.migrate(pool) }
        let seq = try pool.read { db in try Int64.fetchOne(db, sql: "SELECT value FROM meta WHERE key = 'seq'") ?? 0 }
        writer = SQLiteWriter(pool: pool, committedSeq: seq)
        checkpointer = WALCheckpointer(path: path)
        pool.writeWithoutTransaction { [checkpointer] db in checkpointer.install(on: db) }
    }

    // MARK: - Schema (migrations are never edited once shipped)

    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.execute(sql: """
                CREATE TABLE meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
                INSERT INTO meta (key, value) VALUES ('seq', 0);
                CREATE TABLE users (
                    id TEXT PRIMARY KEY,
                    user_name TEXT NOT NULL UNIQUE COLLATE NOCASE,
                    display_name TEXT NOT NULL,
                    password_hash TEXT NOT NULL,
                    purged_through INTEGER NOT NULL DEFAULT 0
                );
                CREATE TABLE apps (
                    client_id TEXT PRIMARY KEY,
                    host_name TEXT NOT NULL UNIQUE COLLATE NOCASE,
                    secret_hash TEXT NOT NULL
                );
                CREATE TABLE tokens (
                    hash TEXT PRIMARY KEY,
                    kind TEXT NOT NULL,
                    subject TEXT NOT NULL,
                    expires INTEGER NOT NULL,
                    revoked INTEGER NOT NULL DEFAULT 0
                );
                CREATE INDEX tokens_subject ON tokens (subject);
                CREATE TABLE subscriptions (
                    id TEXT PRIMARY KEY,
                    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
                    host_name TEXT COLLATE NOCASE,
                    device_id TEXT NOT NULL,
                    device_name TEXT,
                    platform TEXT,
                    created INTEGER NOT NULL,
                    expires INTEGER NOT NULL,
                    revoked INTEGER NOT NULL DEFAULT 0
                );
                CREATE INDEX subscriptions_user ON subscriptions (user_id);
                CREATE TABLE notifications (
                    id TEXT PRIMARY KEY,
                    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
                    host_name TEXT NOT NULL COLLATE NOCASE,
                    app_notification_id TEXT NOT NULL,
                    group_name TEXT,
                    priority TEXT NOT NULL,
                    raw_content TEXT,
                    has_visual INTEGER NOT NULL,
                    title TEXT,
                    body TEXT,
                    display_ttl INTEGER,
                    expires INTEGER NOT NULL,
                    created INTEGER NOT NULL,
                    modified INTEGER NOT NULL,
                    deleted INTEGER NOT NULL DEFAULT 0,
                    read_state TEXT NOT NULL,
                    read_at INTEGER NOT NULL,
                    action_state TEXT NOT NULL,
                    snoozed_until INTEGER,
                    action_at INTEGER NOT NULL,
                    target_policy TEXT,
                    fallback_policy TEXT,
                    seq INTEGER NOT NULL
                );
                CREATE UNIQUE INDEX notifications_feed ON notifications (user_id, seq);
                CREATE UNIQUE INDEX notifications_app_id ON notifications (user_id, host_name, app_notification_id) WHERE deleted = 0;
                CREATE INDEX notifications_view ON notifications (user_id, created DESC, id DESC) WHERE deleted = 0;
                CREATE INDEX notifications_expiry ON notifications (expires) WHERE deleted = 0;
                CREATE INDEX notifications_tombstones ON notifications (modified) WHERE deleted = 1;
                CREATE TABLE mutations (
                    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
                    mutation_id TEXT NOT NULL,
                    notification_id TEXT NOT NULL,
                    status INTEGER NOT NULL,
                    created INTEGER NOT NULL,
                    PRIMARY KEY (user_id, mutation_id)
                );
                CREATE INDEX mutations_created ON mutations (created);
                """)
        }
        // v2: the id is no longer the table's primary key, whose index put every new random id
        // on a random page (a written page per publish). The ids' own index is keyed by the id
        // from its tenth character, then its first eight: the time in a notification id comes
        // first there (see `Identifiers.notification`). Ids made before this migration keep
        // working, as random keys. The table is rebuilt: SQLite cannot drop a primary key.
        migrator.registerMigration("v2") { db in
            try db.execute(sql: """
                CREATE TABLE notifications_v2 (
                    id TEXT NOT NULL,
                    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
                    host_name TEXT NOT NULL COLLATE NOCASE,
                    app_notification_id TEXT NOT NULL,
                    group_name TEXT,
                    priority TEXT NOT NULL,
                    raw_content TEXT,
                    has_visual INTEGER NOT NULL,
                    title TEXT,
                    body TEXT,
                    display_ttl INTEGER,
                    expires INTEGER NOT NULL,
                    created INTEGER NOT NULL,
                    modified INTEGER NOT NULL,
                    deleted INTEGER NOT NULL DEFAULT 0,
                    read_state TEXT NOT NULL,
                    read_at INTEGER NOT NULL,
                    action_state TEXT NOT NULL,
                    snoozed_until INTEGER,
                    action_at INTEGER NOT NULL,
                    target_policy TEXT,
                    fallback_policy TEXT,
                    seq INTEGER NOT NULL
                );
                INSERT INTO notifications_v2 SELECT * FROM notifications ORDER BY rowid;
                DROP TABLE notifications;
                ALTER TABLE notifications_v2 RENAME TO notifications;
                CREATE UNIQUE INDEX notifications_id ON notifications (substr(id, 10), substr(id, 1, 8));
                CREATE UNIQUE INDEX notifications_feed ON notifications (user_id, seq);
                CREATE UNIQUE INDEX notifications_app_id ON notifications (user_id, host_name, app_notification_id) WHERE deleted = 0;
                CREATE INDEX notifications_view ON notifications (user_id, created DESC, id DESC) WHERE deleted = 0;
                CREATE INDEX notifications_expiry ON notifications (expires) WHERE deleted = 0;
                CREATE INDEX notifications_tombstones ON notifications (modified) WHERE deleted = 1;
                """)
        }
        // Devices: the device a user token was issued to, and when each device was last seen.
        migrator.registerMigration("v3") { db in
            try db.execute(sql: """
                ALTER TABLE tokens ADD COLUMN device_id TEXT;
                CREATE INDEX tokens_device ON tokens (device_id) WHERE device_id IS NOT NULL;
                ALTER TABLE subscriptions ADD COLUMN last_seen INTEGER;
                """)
        }
        // Links (SPEC §7.1).
        migrator.registerMigration("v4") { db in
            try db.execute(sql: "ALTER TABLE notifications ADD COLUMN launch_url TEXT")
        }
        // Webhooks (SPEC §7.2): the URL token's hash and the optional secret.
        migrator.registerMigration("v5") { db in
            try db.execute(sql: """
                ALTER TABLE subscriptions ADD COLUMN webhook_hash TEXT;
                ALTER TABLE subscriptions ADD COLUMN webhook_secret TEXT;
                CREATE UNIQUE INDEX subscriptions_webhook ON subscriptions (webhook_hash) WHERE webhook_hash IS NOT NULL;
                """)
        }
        // Failed sign-ins per user name, client id and client address (GuessLimiter).
        migrator.registerMigration("v6 guesses") { db in
            try db.execute(sql: """
                CREATE TABLE guesses (
                    key TEXT PRIMARY KEY,
                    failures INTEGER NOT NULL,
                    window_start INTEGER NOT NULL,
                    locked_until INTEGER,
                    strikes INTEGER NOT NULL
                ) WITHOUT ROWID;
                """)
        }
        // Publishes held until they are due (ntfy's X-Delay).
        migrator.registerMigration("v7 delayed") { db in
            try db.execute(sql: """
                CREATE TABLE delayed (
                    id TEXT PRIMARY KEY,
                    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
                    subscription_id TEXT NOT NULL,
                    host_name TEXT NOT NULL,
                    due_at INTEGER NOT NULL,
                    body TEXT NOT NULL,
                    created_at INTEGER NOT NULL,
                    claimed_until INTEGER NOT NULL DEFAULT 0
                );
                CREATE INDEX delayed_due ON delayed (due_at);
                """)
        }
        return migrator
    }

    /// A pragma's value on the writer's connection (tests check `synchronous`).
    func writerPragma(_ name: String) throws -> Int? {
        try pool.writeWithoutTransaction { db in try Int.fetchOne(db, sql: "PRAGMA \(name)") }
    }

    public func migrate() async throws {
        try Self.migrator.migrate(pool)
    }

    public func ping() async throws {
        try await read { db in _ = try Int.fetchOne(db, sql: "SELECT 1") }
    }

    public func setChangeHandler(_ handler: @escaping @Sendable ([String: Int64]) -> Void) {
        writer.setChangeHandler(handler)
    }

    public func close() async throws {
        try await pool.writeWithoutTransaction { [checkpointer] db in checkpointer.uninstall(from: db) }
        await checkpointer.finished()
        try pool.close()
    }

    private func read<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        do {
            return try await pool.read(body)
        } catch let error as DatabaseError {
            throw StorageError.unavailable("SQLite: \(error)")
        }
    }

    private func write<T: Sendable>(savepoint: Bool = true, _ body: @escaping @Sendable (Database, WriteContext) throws -> T) async throws -> T {
        do {
            return try await writer.write(savepoint: savepoint, body)
        } catch let error as DatabaseError {
            if error.resultCode == .SQLITE_CONSTRAINT { throw StorageError.conflict(error.message ?? "constraint") }
            throw StorageError.unavailable("SQLite: \(error)")
        }
    }

    // MARK: - Failed sign-ins

    private static func guessRecord(_ row: Row) -> GuessRecord {
        GuessRecord(key: row["key"], failures: row["failures"], windowStart: ISOTime.date(millis: row["window_start"]),
                    lockedUntil: (row["locked_until"] as Int64?).map(ISOTime.date(millis:)), strikes: row["strikes"])
    }

    public func guesses(keys: [String]) async throws -> [GuessRecord] {
        try await read { db in
            try keys.compactMap { key in
                try Row.fetchOne(db, sql: "SELECT * FROM guesses WHERE key = ?", arguments: [key]).map(Self.guessRecord)
            }
        }
    }

    public func updateGuesses(keys: [String], _ update: @escaping @Sendable (String, GuessRecord?) -> GuessRecord?) async throws {
        try await write { db, _ in
            for key in keys {
                let current = try Row.fetchOne(db, sql: "SELECT * FROM guesses WHERE key = ?", arguments: [key]).map(Self.guessRecord)
                if let next = update(key, current) {
                    try db.execute(
                        sql: "INSERT OR REPLACE INTO guesses (key, failures, window_start, locked_until, strikes) VALUES (?, ?, ?, ?, ?)",
                        arguments: [key, next.failures, ISOTime.millis(next.windowStart), next.lockedUntil.map(ISOTime.millis), next.strikes])
                } else if current != nil {
                    try db.execute(sql: "DELETE FROM guesses WHERE key = ?", arguments: [key])
                }
            }
        }
    }

    public func allGuesses() async throws -> [GuessRecord] {
        try await read { db in try Row.fetchAll(db, sql: "SELECT * FROM guesses ORDER BY key").map(Self.guessRecord) }
    }

    public func forgetGuesses(keys: [String]?) async throws -> Int {
        try await write { db, _ in
            if let keys {
                for key in keys { try db.execute(sql: "DELETE FROM guesses WHERE key = ?", arguments: [key]) }
            } else {
                try db.execute(sql: "DELETE FROM guesses")
            }
            return db.changesCount
        }
    }

    // MARK: - Accounts

    public func createUser(_ user: UserRecord) async throws {
        try await write { db, _ in
            try db.execute(
                sql: "INSERT INTO users (id, user_name, display_name, password_hash) VALUES (?, ?, ?, ?)",
                arguments: [user.id, user.userName, user.displayName, user.passwordHash])
        }
    }

    /// The credentials mark's modification time in nanoseconds (0 before the first revocation).
    public func credentialsStamp() -> Int64 {
        var info = stat()
        guard stat(credentialsMark, &info) == 0 else { return 0 }
        return Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec)
    }

    /// After a commit that revoked or deleted credentials: every process on this file is told.
    private func markCredentialsChanged() {
        let text = String(ISOTime.millis(Date())) + " " + String(UInt64.random(in: 0...UInt64.max))
        if !FileManager.default.createFile(atPath: credentialsMark, contents: Data(text.utf8)) {
            // This process has emptied its own caches already; others keep theirs up to 5 s.
            FileHandle.standardError.write(Data("notty: cannot write \(credentialsMark): other processes on this database learn of the revocation within 5 s instead of at once\n".utf8))
        }
    }

    public func deleteUser(name: String) async throws -> Bool {
        defer { markCredentialsChanged() }
        return try await write { db, _ in
            guard let id = try String.fetchOne(db, sql: "SELECT id FROM users WHERE user_name = ?", arguments: [name]) else { return false }
            try db.execute(sql: "DELETE FROM tokens WHERE subject = ?", arguments: [id])
            try db.execute(sql: "DELETE FROM users WHERE id = ?", arguments: [id])
            return true
        }
    }

    public func user(name: String) async throws -> UserRecord? {
        try await read { db in try Row.fetchOne(db, sql: "SELECT * FROM users WHERE user_name = ?", arguments: [name]).map(Self.user) }
    }

    public func user(id: String) async throws -> UserRecord? {
        try await read { db in try Row.fetchOne(db, sql: "SELECT * FROM users WHERE id = ?", arguments: [id]).map(Self.user) }
    }

    private static func user(_ row: Row) -> UserRecord {
        UserRecord(id: row["id"], userName: row["user_name"], displayName: row["display_name"], passwordHash: row["password_hash"])
    }

    public func createApp(_ app: AppRecord) async throws {
        try await write { db, _ in
            try db.execute(
                sql: "INSERT INTO apps (client_id, host_name, secret_hash) VALUES (?, ?, ?)",
                arguments: [app.clientId, app.hostName, app.secretHash])
        }
    }

    public func deleteApp(hostName: String) async throws -> Bool {
        defer { markCredentialsChanged() }
        return try await write { db, _ in
            guard let id = try String.fetchOne(db, sql: "SELECT client_id FROM apps WHERE host_name = ?", arguments: [hostName]) else { return false }
            try db.execute(sql: "DELETE FROM tokens WHERE subject = ?", arguments: [id])
            try db.execute(sql: "DELETE FROM apps WHERE client_id = ?", arguments: [id])
            return true
        }
    }

    public func app(clientId: String) async throws -> AppRecord? {
        try await read { db in try Row.fetchOne(db, sql: "SELECT * FROM apps WHERE client_id = ?", arguments: [clientId]).map(Self.app) }
    }

    public func app(hostName: String) async throws -> AppRecord? {
        try await read { db in try Row.fetchOne(db, sql: "SELECT * FROM apps WHERE host_name = ?", arguments: [hostName]).map(Self.app) }
    }

    private static func app(_ row: Row) -> AppRecord {
        AppRecord(clientId: row["client_id"], hostName: row["host_name"], secretHash: row["secret_hash"])
    }

    // MARK: - Tokens

    public func insertTokens(_ tokens: [TokenRecord]) async throws {
        try await write { db, _ in try Self.insert(tokens, db) }
    }

    private static func insert(_ tokens: [TokenRecord], _ db: Database) throws {
        for token in tokens {
            try db.execute(
                sql: "INSERT INTO tokens (hash, kind, subject, expires, revoked, device_id) VALUES (?, ?, ?, ?, ?, ?)",
                arguments: [token.hash, token.kind.rawValue, token.subject, ISOTime.millis(token.expiresAt), token.revoked, token.deviceId])
        }
    }

    public func token(hash: String) async throws -> TokenRecord? {
        try await read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM tokens WHERE hash = ?", arguments: [hash]).map { row in
                TokenRecord(
                    hash: row["hash"], kind: TokenRecord.Kind(rawValue: row["kind"]) ?? .userAccess, subject: row["subject"],
                    expiresAt: ISOTime.date(millis: row["expires"]), revoked: row["revoked"], deviceId: row["device_id"])
            }
        }
    }

    public func rotateToken(oldHash: String, replacements: [TokenRecord], now: Date) async throws -> Bool {
        try await write { db, _ in
            try db.execute(
                sql: "UPDATE tokens SET revoked = 1 WHERE hash = ? AND revoked = 0 AND expires > ?",
                arguments: [oldHash, ISOTime.millis(now)])
            guard db.changesCount == 1 else { return false }
            try Self.insert(replacements, db)
            return true
        }
    }

    public func revokeTokens(hashes: [String]) async throws {
        defer { markCredentialsChanged() }
        try await write { db, _ in
            for hash in hashes { try db.execute(sql: "UPDATE tokens SET revoked = 1 WHERE hash = ?", arguments: [hash]) }
        }
    }

    // MARK: - Subscriptions

    public func insertSubscription(_ s: SubscriptionRecord) async throws {
        try await write { db, _ in
            try db.execute(
                sql: """
                    INSERT INTO subscriptions (id, user_id, host_name, device_id, device_name, platform, created, expires, revoked, last_seen,
                                               webhook_hash, webhook_secret)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [s.id, s.userId, s.targetHostName, s.deviceId, s.deviceName, s.platform,
                            ISOTime.millis(s.createdAt), ISOTime.millis(s.expiresAt), s.revoked, s.lastSeen.map(ISOTime.millis),
                            s.webhookHash, s.webhookSecret])
        }
    }

    public func subscription(id: String) async throws -> SubscriptionRecord? {
        try await read { db in try Row.fetchOne(db, sql: "SELECT * FROM subscriptions WHERE id = ?", arguments: [id]).map(Self.subscription) }
    }

    public func subscription(webhookHash hash: String) async throws -> SubscriptionRecord? {
        try await read { db in try Row.fetchOne(db, sql: "SELECT * FROM subscriptions WHERE webhook_hash = ?", arguments: [hash]).map(Self.subscription) }
    }

    public func subscriptions(userId: String) async throws -> [SubscriptionRecord] {
        try await read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM subscriptions WHERE user_id = ? AND revoked = 0 ORDER BY created", arguments: [userId]).map(Self.subscription)
        }
    }

    public func revokeSubscription(id: String, userId: String) async throws -> Bool {
        defer { markCredentialsChanged() }
        return try await write { db, _ in
            guard let row = try Row.fetchOne(
                db, sql: "SELECT host_name, device_id FROM subscriptions WHERE id = ? AND user_id = ? AND revoked = 0", arguments: [id, userId])
            else { return false }
            try db.execute(sql: "UPDATE subscriptions SET revoked = 1 WHERE id = ?", arguments: [id])
            if (row["host_name"] as String?) == nil {
                try db.execute(
                    sql: "UPDATE tokens SET revoked = 1 WHERE device_id = ? AND subject = ? AND revoked = 0",
                    arguments: [row["device_id"] as String, userId])
            }
            return true
        }
    }

    public func touchDevice(deviceId: String, userId: String, at: Date) async throws {
        try await write { db, _ in
            try db.execute(
                sql: "UPDATE subscriptions SET last_seen = ? WHERE device_id = ? AND user_id = ? AND host_name IS NULL AND revoked = 0",
                arguments: [ISOTime.millis(at), deviceId, userId])
        }
    }

    private static func subscription(_ row: Row) -> SubscriptionRecord {
        SubscriptionRecord(
            id: row["id"], userId: row["user_id"], targetHostName: row["host_name"], deviceId: row["device_id"],
            deviceName: row["device_name"], platform: row["platform"], createdAt: ISOTime.date(millis: row["created"]),
            expiresAt: ISOTime.date(millis: row["expires"]), revoked: row["revoked"],
            lastSeen: (row["last_seen"] as Int64?).map(ISOTime.date(millis:)), webhookHash: row["webhook_hash"], webhookSecret: row["webhook_secret"])
    }

    // MARK: - Notification rows

    /// A row selected with ``NotificationColumns/list``.
    private static func stored(_ row: Row) throws -> StoredNotification {
        try NotificationColumns(SQLiteColumns(row: row)).stored
    }

    /// A whole row, one value per column of ``NotificationColumns/names``.
    private static let intoNotifications = """
        INTO notifications (\(NotificationColumns.list))
        VALUES (\(Array(repeating: "?", count: NotificationColumns.names.count).joined(separator: ", ")))
        """

    private static let saveSQL = "INSERT OR REPLACE " + intoNotifications

    /// Inserts a new row unless the app already has an active notification with its id.
    private static let insertNewSQL = "INSERT " + intoNotifications + " ON CONFLICT (user_id, host_name, app_notification_id) WHERE deleted = 0 DO NOTHING"

    /// A row's values in ``NotificationColumns/names`` order, without the last one, `seq`,
    /// which only the writer knows.
    private static func valuesBeforeSeq(_ s: StoredNotification) -> [(any DatabaseValueConvertible)?] {
        var values = SQLiteValues()
        NotificationColumns(s).write(to: &values)
        return values.values.dropLast()
    }

    /// Writes a row whole (insert or replace by id).
    private static func save(_ s: StoredNotification, _ db: Database) throws {
        try db.cachedStatement(sql: saveSQL).execute(arguments: StatementArguments(valuesBeforeSeq(s) + [s.seq]))
    }

    /// The row whose id is `?1`, found through `notifications_id`: SQLite uses an index on
    /// expressions only for a condition on the same expressions. The last term makes the
    /// match exact (the two others ignore the ninth character); its `+` keeps SQLite from
    /// propagating `id = ?1` into the others, which then no longer match the index.
    static let idMatches = "substr(id, 10) = substr(?1, 10) AND substr(id, 1, 8) = substr(?1, 1, 8) AND +id = ?1"

    /// The notification with id `?1` of user `?2`.
    static let byIdSQL = "SELECT \(NotificationColumns.list) FROM notifications WHERE \(idMatches) AND user_id = ?2"

    private static func fetchStored(_ db: Database, sql: String, _ arguments: StatementArguments) throws -> StoredNotification? {
        try Row.fetchOne(db.cachedStatement(sql: sql), arguments: arguments).map { try stored($0) }
    }

    // MARK: - Notification writes

    public func publish(_ input: PublishInput) async throws -> UserNotification {
        try await publish(batch: [input])[0]
    }

    public func publish(batch inputs: [PublishInput]) async throws -> [UserNotification] {
        // The rows new notifications become are built here, before the writer's turn, so that
        // the one thread every write waits for only binds and runs one statement for each.
        let fresh = inputs.map { NotificationRules.published($0, existing: nil, newId: Identifiers.notification(), seq: 0) }
        let values = fresh.map { StatementArguments(Self.valuesBeforeSeq($0)) }
        // One INSERT is atomic by itself; a batch is all or nothing in the job's savepoint.
        return try await write(savepoint: inputs.count > 1) { db, context in
            var published: [UserNotification] = []
            published.reserveCapacity(inputs.count)
            for (index, input) in inputs.enumerated() {
                let insert = try db.cachedStatement(sql: Self.insertNewSQL)
                insert.setUncheckedArguments(values[index] + [context.upcomingSeq])  // one value per column, by construction
                try insert.execute()
                if db.changesCount == 1 {
                    _ = context.nextSeq(for: input.userId)  // the `seq` just written
                    published.append(fresh[index].notification)
                } else {
                    // The app already has an active notification with this id: a re-publish (with
                    // the id made above, should the active one have expired).
                    published.append(try db.resultInSavepoint { try Self.publishRows(input, newId: fresh[index].notification.id, db, context) })
                }
            }
            return published
        }
    }

    /// Publishes over the app's active notification with the same id, if any.
    private static func publishRows(_ input: PublishInput, newId: String, _ db: Database, _ context: WriteContext) throws -> UserNotification {
        let active = try activeRow(db, userId: input.userId, hostName: input.hostName, appNotificationId: input.request.appNotificationId)
        let rows = NotificationRules.publishRows(input, active: active, newId: newId) { context.nextSeq(for: input.userId) }
        for row in rows { try save(row, db) }
        return rows[rows.count - 1].notification
    }

    /// The app's active notification with this `appNotificationId`, if any.
    private static func activeRow(_ db: Database, userId: String, hostName: String, appNotificationId: String) throws -> StoredNotification? {
        try fetchStored(
            db, sql: "SELECT \(NotificationColumns.list) FROM notifications WHERE user_id = ? AND host_name = ? AND app_notification_id = ? AND deleted = 0",
            [userId, hostName, appNotificationId])
    }

    public func notification(userId: String, hostName: String, appNotificationId: String) async throws -> UserNotification? {
        try await read { db in try Self.activeRow(db, userId: userId, hostName: hostName, appNotificationId: appNotificationId)?.notification }
    }

    public func deleteByApp(userId: String, hostName: String, appNotificationId: String, now: Date) async throws -> Bool {
        try await write { db, context in
            guard let row = try Self.activeRow(db, userId: userId, hostName: hostName, appNotificationId: appNotificationId) else { return false }
            try Self.save(NotificationRules.deleted(row, now: now, seq: context.nextSeq(for: userId)), db)
            return row.notification.expirationDateTime > now
        }
    }

    public func mutate(userId: String, mutations: [Mutation], now: Date) async throws -> [MutationResult] {
        try await write { db, context in
            try mutations.map { mutation in
                try MutationApplier.apply(mutation, userId: userId, now: now, context: context, store: SQLiteRowStore(db: db))
            }
        }
    }

    public func insertDelayed(_ record: DelayedRecord) async throws {
        try await write { db, _ in
            try db.execute(
                sql: "INSERT INTO delayed (id, user_id, subscription_id, host_name, due_at, body, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                arguments: [record.id, record.userId, record.subscriptionId, record.hostName, ISOTime.millis(record.dueAt), record.body,
                            ISOTime.millis(record.createdAt)])
        }
    }

    public func claimDueDelayed(now: Date, lease: Date, limit: Int) async throws -> [DelayedRecord] {
        let at = ISOTime.millis(now)
        return try await write { db, _ in
            try Row.fetchAll(db, sql: """
                UPDATE delayed SET claimed_until = ?
                WHERE id IN (SELECT id FROM delayed WHERE due_at <= ? AND claimed_until <= ? ORDER BY due_at LIMIT ?)
                RETURNING id, user_id, subscription_id, host_name, due_at, body, created_at
                """, arguments: [ISOTime.millis(lease), at, at, limit]).map { row in
                DelayedRecord(id: row["id"], userId: row["user_id"], subscriptionId: row["subscription_id"], hostName: row["host_name"],
                              dueAt: ISOTime.date(millis: row["due_at"]), body: row["body"], createdAt: ISOTime.date(millis: row["created_at"]))
            }.sorted { $0.dueAt < $1.dueAt }
        }
    }

    public func deleteDelayed(ids: [String]) async throws {
        guard !ids.isEmpty else { return }
        try await write { db, _ in
            for id in ids { try db.execute(sql: "DELETE FROM delayed WHERE id = ?", arguments: [id]) }
        }
    }

    public func expire(now: Date) async throws -> Int {
        try await write { db, context in
            let rows = try Row.fetchAll(
                db, sql: "SELECT \(NotificationColumns.list) FROM notifications WHERE deleted = 0 AND expires <= ? ORDER BY expires LIMIT 5000",
                arguments: [ISOTime.millis(now)]
            ).map { try Self.stored($0) }
            for row in rows {
                try Self.save(NotificationRules.deleted(row, now: now, seq: context.nextSeq(for: row.userId)), db)
            }
            return rows.count
        }
    }

    public func purgeHistory(before: Date) async throws {
        try await write { db, _ in
            let cutoff = ISOTime.millis(before)
            try db.execute(sql: """
                UPDATE users SET purged_through = max(purged_through, (
                    SELECT max(seq) FROM notifications n WHERE n.user_id = users.id AND n.deleted = 1 AND n.modified < ?))
                WHERE id IN (SELECT user_id FROM notifications WHERE deleted = 1 AND modified < ?)
                """, arguments: [cutoff, cutoff])
            try db.execute(sql: "DELETE FROM notifications WHERE deleted = 1 AND modified < ?", arguments: [cutoff])
            try db.execute(sql: "DELETE FROM mutations WHERE created < ?", arguments: [cutoff])
            try db.execute(sql: "DELETE FROM tokens WHERE expires < ?", arguments: [cutoff])
        }
    }

    // MARK: - Notification reads

    public func notification(id: String, userId: String) async throws -> UserNotification? {
        try await read { db in
            try Self.fetchStored(db, sql: Self.byIdSQL, [id, userId])?.notification
        }
    }

    public func changes(userId: String, since: Int64, limit: Int) async throws -> ChangeFeedPage? {
        try await read { db in
            let purged = try Int64.fetchOne(db, sql: "SELECT purged_through FROM users WHERE id = ?", arguments: [userId]) ?? 0
            if since > 0 && since < purged { return nil }
            let rows = try Row.fetchAll(
                db.cachedStatement(sql: "SELECT \(NotificationColumns.list) FROM notifications WHERE user_id = ? AND seq > ? ORDER BY seq LIMIT ?"),
                arguments: [userId, since, limit + 1]
            ).map { try Self.stored($0) }
            let page = rows.prefix(limit)
            return ChangeFeedPage(changes: page.map(\.notification), lastSeq: page.last?.seq ?? max(since, purged), hasMore: rows.count > limit)
        }
    }

    public func latestSeq(userId: String) async throws -> Int64 {
        try await read { db in
            let newest = try Int64.fetchOne(db, sql: "SELECT max(seq) FROM notifications WHERE user_id = ?", arguments: [userId]) ?? 0
            let purged = try Int64.fetchOne(db, sql: "SELECT purged_through FROM users WHERE id = ?", arguments: [userId]) ?? 0
            return max(newest, purged)
        }
    }

    public func highestSeq() async throws -> Int64 {
        writer.committedSeq
    }

    public func list(userId: String, view: NotificationView, top: Int, skip: Int, now: Date) async throws -> [UserNotification] {
        try await read { db in
            try Row.fetchAll(
                db.cachedStatement(sql: """
                    SELECT \(NotificationColumns.list) FROM notifications WHERE user_id = ?1 AND deleted = 0 AND expires > ?2 AND \(view.sqlCondition(now: "?2"))
                    ORDER BY created DESC, id DESC LIMIT ?3 OFFSET ?4
                    """),
                arguments: [userId, ISOTime.millis(now), top, skip]
            ).map { try Self.stored($0).notification }
        }
    }


    /// The views counted one by one (All is the rows' count).
    static let countedViews: [NotificationView] = [.unread, .read, .activated, .dismissed, .snoozed]

    public func counts(userId: String, now: Date) async throws -> ViewCounts {
        try await read { db in
            let nowMillis = ISOTime.millis(now)
            let row = try Row.fetchOne(
                db, sql: """
                    SELECT
                      count(*) AS total,
                      \(Self.countedViews.map { "sum(CASE WHEN \($0.sqlCondition(now: "?1")) THEN 1 ELSE 0 END) AS \($0.rawValue)" }.joined(separator: ",\n"))
                    FROM notifications WHERE user_id = ?2 AND deleted = 0 AND expires > ?1
                    """, arguments: [nowMillis, userId])
            var counts = ViewCounts()
            counts.all = row?["total"] ?? 0
            for view in Self.countedViews { counts[view] = row?[view.rawValue] ?? 0 }
            return counts
        }
    }

    // MARK: - Row access for the shared mutation logic

    fileprivate struct SQLiteRowStore: MutationRowStore {
        let db: Database

        func row(id: String, userId: String) throws -> StoredNotification? {
            try SQLiteStorage.fetchStored(db, sql: SQLiteStorage.byIdSQL, [id, userId])
        }

        func save(_ row: StoredNotification) throws {
            try SQLiteStorage.save(row, db)
        }

        func priorMutation(userId: String, mutationId: String) throws -> Int? {
            try Int.fetchOne(db.cachedStatement(sql: "SELECT status FROM mutations WHERE user_id = ? AND mutation_id = ?"), arguments: [userId, mutationId])
        }

        func recordMutation(userId: String, mutationId: String, notificationId: String, status: Int, now: Date) throws {
            try db.cachedStatement(sql: "INSERT OR IGNORE INTO mutations (user_id, mutation_id, notification_id, status, created) VALUES (?, ?, ?, ?, ?)")
                .execute(arguments: [userId, mutationId, notificationId, status, ISOTime.millis(now)])
        }
    }
}

/// A GRDB row read by position.
private struct SQLiteColumns: ColumnReader {
    let row: Row
    func text(_ index: Int) -> String { row[index] }
    func optionalText(_ index: Int) -> String? { row[index] }
    func integer(_ index: Int) -> Int64 { row[index] }
    func optionalInteger(_ index: Int) -> Int64? { row[index] }
    func flag(_ index: Int) -> Bool { row[index] }
}

/// A row's values as GRDB binds them.
private struct SQLiteValues: ColumnWriter {
    var values: [(any DatabaseValueConvertible)?] = []
    mutating func text(_ value: String?) { values.append(value) }
    mutating func integer(_ value: Int64?) { values.append(value) }
    mutating func flag(_ value: Bool) { values.append(value) }
}
