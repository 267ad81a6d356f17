import Foundation
import Logging
import NottyCore
import PostgresNIO
import Synchronization

/// ``NotificationStorage`` on PostgreSQL through PostgresNIO's connection pool, for one or
/// several `notty serve` instances sharing one database.
///
/// - A user's change feed is in commit order on every instance: each write transaction first
///   locks the rows of the users it writes for (in id order), then reserves positions from
///   one sequence. Positions are global, so a cursor means the same on every instance.
/// - Every committed change is announced with `NOTIFY notty_changes` inside its transaction
///   (so only committed changes are announced). Each instance listens and rings its own
///   connected devices; after the listening connection is lost and regained, the service is
///   told to re-check every connected user (``setResyncHandler(_:)``), so no ring is lost.
/// - A call that cannot reach the database within ``timeout`` throws
///   ``StorageError/unavailable(_:)`` (the client's `503`); the pool reconnects on its own
///   once PostgreSQL is back.
public final class PostgresStorage: NotificationStorage {
    public let url: PostgresURL
    private let client: PostgresClient
    private let logger: Logger
    private let tasks = Mutex<[Task<Void, Never>]>([])
    private let onChange = HandlerSlot<@Sendable ([String: Int64]) -> Void>()
    private let onResync = HandlerSlot<@Sendable () -> Void>()
    private let onCredentialsChange = HandlerSlot<@Sendable () -> Void>()
    /// Tells this instance's own announcements apart from other instances'.
    let instanceId = String(UUID().uuidString.prefix(8)).lowercased()
    /// How long a call may wait for the database before it is reported unavailable.
    let timeout: Duration
    static let channel = "notty_changes"

    /// Connects (the pool connects lazily), migrates and starts listening for other instances' changes.
    public static func connect(url: PostgresURL, logger: Logger = Logger(label: "notty.postgres"), timeout: Duration = .seconds(5)) async throws -> PostgresStorage {
        let storage = PostgresStorage(url: url, logger: logger, timeout: timeout)
        do {
            try await storage.migrate()
        } catch {
            try? await storage.close()
            throw error
        }
        storage.startListening()
        return storage
    }

    private init(url: PostgresURL, logger: Logger, timeout: Duration) {
        self.url = url
        self.logger = logger
        self.timeout = timeout
        var configuration = url.clientConfiguration
        configuration.options.maximumConnections = 32
        configuration.options.minimumConnections = 2
        configuration.options.connectTimeout = .seconds(3)
        configuration.options.keepAliveBehavior = .init(frequency: .seconds(15))
        // The pool reports every failed connection attempt; while PostgreSQL is away that is a
        // line each second, so only warnings and worse from it (notty's own lines say what matters).
        var poolLogger = logger
        poolLogger.logLevel = max(logger.logLevel, .warning)
        client = PostgresClient(configuration: configuration, backgroundLogger: poolLogger)
        let client = client
        tasks.withLock { $0.append(Task { await client.run() }) }
    }

    // MARK: - Schema (migrations are never edited once shipped)

    /// Each migration is a list of statements (the extended protocol runs one at a time).
    static let migrations: [(name: String, statements: [String])] = [
        ("v1", [
            "CREATE SEQUENCE notty_seq",
            """
            CREATE TABLE users (
                id TEXT PRIMARY KEY,
                user_name TEXT NOT NULL,
                display_name TEXT NOT NULL,
                password_hash TEXT NOT NULL,
                purged_through BIGINT NOT NULL DEFAULT 0
            )
            """,
            "CREATE UNIQUE INDEX users_name ON users (lower(user_name))",
            "CREATE TABLE apps (client_id TEXT PRIMARY KEY, host_name TEXT NOT NULL, secret_hash TEXT NOT NULL)",
            "CREATE UNIQUE INDEX apps_host ON apps (lower(host_name))",
            """
            CREATE TABLE tokens (
                hash TEXT PRIMARY KEY,
                kind TEXT NOT NULL,
                subject TEXT NOT NULL,
                expires BIGINT NOT NULL,
                revoked BOOLEAN NOT NULL DEFAULT false
            )
            """,
            "CREATE INDEX tokens_subject ON tokens (subject)",
            "CREATE INDEX tokens_expires ON tokens (expires)",
            """
            CREATE TABLE subscriptions (
                id TEXT PRIMARY KEY,
                user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
                host_name TEXT,
                device_id TEXT NOT NULL,
                device_name TEXT,
                platform TEXT,
                created BIGINT NOT NULL,
                expires BIGINT NOT NULL,
                revoked BOOLEAN NOT NULL DEFAULT false
            )
            """,
            "CREATE INDEX subscriptions_user ON subscriptions (user_id)",
            """
            CREATE TABLE notifications (
                id TEXT PRIMARY KEY,
                user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
                host_name TEXT NOT NULL,
                app_notification_id TEXT NOT NULL,
                group_name TEXT,
                priority TEXT NOT NULL,
                raw_content TEXT,
                has_visual BOOLEAN NOT NULL,
                title TEXT,
                body TEXT,
                display_ttl BIGINT,
                expires BIGINT NOT NULL,
                created BIGINT NOT NULL,
                modified BIGINT NOT NULL,
                deleted BOOLEAN NOT NULL DEFAULT false,
                read_state TEXT NOT NULL,
                read_at BIGINT NOT NULL,
                action_state TEXT NOT NULL,
                snoozed_until BIGINT,
                action_at BIGINT NOT NULL,
                target_policy TEXT,
                fallback_policy TEXT,
                seq BIGINT NOT NULL
            )
            """,
            "CREATE UNIQUE INDEX notifications_feed ON notifications (user_id, seq)",
            "CREATE UNIQUE INDEX notifications_app_id ON notifications (user_id, lower(host_name), app_notification_id) WHERE NOT deleted",
            "CREATE INDEX notifications_view ON notifications (user_id, created DESC, id DESC) WHERE NOT deleted",
            "CREATE INDEX notifications_expiry ON notifications (expires) WHERE NOT deleted",
            "CREATE INDEX notifications_tombstones ON notifications (modified) WHERE deleted",
            """
            CREATE TABLE mutations (
                user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
                mutation_id TEXT NOT NULL,
                notification_id TEXT NOT NULL,
                status INTEGER NOT NULL,
                created BIGINT NOT NULL,
                PRIMARY KEY (user_id, mutation_id)
            )
            """,
            "CREATE INDEX mutations_created ON mutations (created)",
        ]),
        // Devices: the device a user token was issued to, and when each device was last seen.
        ("v2", [
            "ALTER TABLE tokens ADD COLUMN device_id TEXT",
            "CREATE INDEX tokens_device ON tokens (device_id) WHERE device_id IS NOT NULL",
            "ALTER TABLE subscriptions ADD COLUMN last_seen BIGINT",
        ]),
        // Links (SPEC §7.1).
        ("v3", ["ALTER TABLE notifications ADD COLUMN launch_url TEXT"]),
        // Webhooks (SPEC §7.2): the URL token's hash and the optional secret.
        ("v4", [
            "ALTER TABLE subscriptions ADD COLUMN webhook_hash TEXT",
            "ALTER TABLE subscriptions ADD COLUMN webhook_secret TEXT",
            "CREATE UNIQUE INDEX subscriptions_webhook ON subscriptions (webhook_hash) WHERE webhook_hash IS NOT NULL",
        ]),
    ]

    /// Applies the migrations not yet applied, under an advisory lock so that instances
    /// starting together do not race (given a minute: the first connection, perhaps a busy server).
    public func migrate() async throws {
        try await transaction(timeout: .seconds(60)) { connection in
            try await connection.exec("SELECT pg_advisory_xact_lock(7262031)", logger: self.logger)
            try await connection.exec(
                "CREATE TABLE IF NOT EXISTS notty_migrations (name TEXT PRIMARY KEY, applied TIMESTAMPTZ NOT NULL DEFAULT now())",
                logger: self.logger)
            let names: [String] = try await connection.query("SELECT name FROM notty_migrations", logger: self.logger).collect(String.self)
            let applied = Set(names)
            for migration in Self.migrations where !applied.contains(migration.name) {
                for statement in migration.statements {
                    try await connection.exec(PostgresQuery(unsafeSQL: statement), logger: self.logger)
                }
                try await connection.exec("INSERT INTO notty_migrations (name) VALUES (\(migration.name))", logger: self.logger)
            }
        }
    }

    /// Runs one statement on its own (autocommit).
    private func execute(_ query: PostgresQuery) async throws {
        try await run { connection in try await connection.exec(query, logger: self.logger) }
    }

    public func ping() async throws {
        try await execute("SELECT 1")
    }

    public func setChangeHandler(_ handler: @escaping @Sendable ([String: Int64]) -> Void) {
        onChange.set(handler)
    }

    public func setResyncHandler(_ handler: @escaping @Sendable () -> Void) {
        onResync.set(handler)
    }

    public func setCredentialsChangeHandler(_ handler: @escaping @Sendable () -> Void) {
        onCredentialsChange.set(handler)
    }

    public func close() async throws {
        let running = tasks.withLock { tasks -> [Task<Void, Never>] in
            defer { tasks = [] }
            return tasks
        }
        for task in running { task.cancel() }
        for task in running { await task.value }
    }

    // MARK: - Running calls

    private enum Outcome<T: Sendable>: Sendable {
        case value(T)
        case timedOut
    }

    /// Runs `body` on a pooled connection; any failure to reach the database, or no answer
    /// within ``timeout``, becomes ``StorageError/unavailable(_:)``.
    private func run<T: Sendable>(
        timeout: Duration? = nil, _ body: @escaping @Sendable (PostgresConnection) async throws -> T
    ) async throws -> T {
        do {
            return try await withTimeout(timeout ?? self.timeout, body)
        } catch {
            throw Self.storageError(error, url: url)
        }
    }

    /// `body` on a pooled connection, or ``StorageError/unavailable(_:)`` after `timeout`;
    /// other errors as thrown.
    private func withTimeout<T: Sendable>(
        _ timeout: Duration, _ body: @escaping @Sendable (PostgresConnection) async throws -> T
    ) async throws -> T {
        let client = client
        let outcome = try await withThrowingTaskGroup(of: Outcome<T>.self) { group in
            group.addTask { .value(try await client.withConnection { connection in try await body(connection) }) }
            group.addTask {
                try await Task.sleep(for: timeout)
                return .timedOut
            }
            defer { group.cancelAll() }
            return try await group.next() ?? .timedOut
        }
        switch outcome {
        case .value(let value): return value
        case .timedOut: throw StorageError.unavailable("PostgreSQL at \(url) did not answer within \(timeout)")
        }
    }

    /// Any failure as the ``StorageError`` the service understands.
    static func storageError(_ error: any Error, url: PostgresURL) -> StorageError {
        switch error {
        case let error as StorageError:
            return error
        case let error as PSQLError:
            if let state = error.serverInfo?[.sqlState], state == "23505" {
                return StorageError.conflict(error.serverInfo?[.message] ?? "unique violation")
            }
            return StorageError.unavailable("PostgreSQL at \(url): \(describe(error))")
        default:
            return StorageError.unavailable("PostgreSQL at \(url): \(error)")
        }
    }

    private static func describe(_ error: PSQLError) -> String {
        if let message = error.serverInfo?[.message] {
            return "\(message) (SQLSTATE \(error.serverInfo?[.sqlState] ?? "?"))"
        }
        return "\(error.code)"
    }

    /// Runs `body` in one transaction. A deadlock or serialization failure (which PostgreSQL
    /// rolls back whole) is retried a few times.
    private func transaction<T: Sendable>(
        timeout: Duration? = nil, _ body: @escaping @Sendable (PostgresConnection) async throws -> T
    ) async throws -> T {
        var attempt = 0
        while true {
            do {
                return try await withTimeout(timeout ?? self.timeout) { connection in
                    try await connection.exec("BEGIN", logger: self.logger)
                    do {
                        let value = try await body(connection)
                        try await connection.exec("COMMIT", logger: self.logger)
                        return value
                    } catch {
                        try? await connection.exec("ROLLBACK", logger: self.logger)
                        throw error
                    }
                }
            } catch let error as PSQLError where attempt < 3 && ["40P01", "40001"].contains(error.serverInfo?[.sqlState] ?? "") {
                attempt += 1
            } catch {
                throw Self.storageError(error, url: url)
            }
        }
    }

    /// Inside a transaction: locks the rows of `users` (in id order, so writers never
    /// deadlock) and reserves `positions` change positions after the lock.
    private func lockFeeds(of users: [String], positions: Int, _ connection: PostgresConnection) async throws -> WriteContext {
        if !users.isEmpty {
            try await connection.exec("SELECT id FROM users WHERE id = ANY(\(users.sorted())) ORDER BY id FOR NO KEY UPDATE", logger: logger)
        }
        var reserved: [Int64] = []
        if positions > 0 {
            reserved = try await connection.query(
                "SELECT nextval('notty_seq') FROM generate_series(1, \(positions))", logger: logger
            ).collect(Int64.self)
        }
        return WriteContext(reserved: reserved.sorted())
    }

    /// Inside the transaction, before its commit: tells the other instances what moved.
    private func announce(_ context: WriteContext, _ connection: PostgresConnection) async throws {
        for payload in Self.announcements(context.changedUsers, from: instanceId) {
            try await connection.exec("SELECT pg_notify(\(Self.channel), \(payload))", logger: logger)
        }
    }

    /// A write of `users`' feeds in a transaction of its own: locks them, reserves
    /// `positions`, runs `body`, announces the change and, once committed, tells this instance.
    private func feedWrite<T: Sendable>(
        users: [String], positions: Int, _ body: @escaping @Sendable (PostgresConnection, WriteContext) async throws -> T
    ) async throws -> T {
        let (value, changed) = try await transaction { connection in
            let context = try await self.lockFeeds(of: users, positions: positions, connection)
            let value = try await body(connection, context)
            try await self.announce(context, connection)
            return (value, context.changedUsers)
        }
        if !changed.isEmpty { onChange.handler?(changed) }
        return value
    }

    // MARK: - Group commit of one user's writes

    /// A queued write of one user's feed.
    private struct FeedJob: Sendable {
        let user: String
        let positions: Int
        /// Runs the write in its own savepoint and keeps its outcome.
        let run: @Sendable (PostgresConnection, WriteContext) async -> Void
        /// Called once the batch committed (`nil`) or failed.
        let finish: @Sendable ((any Error)?) -> Void
    }

    /// Writes of users' feeds are queued and run in batches: one transaction locks every user
    /// of the batch once, runs each write in its own savepoint (a failing one is rolled back
    /// alone), announces, and commits once. Concurrent publishes for one user then cost one
    /// lock and one commit per batch, not each (the lock is held through the commit's fsync).
    private func groupedFeedWrite<T: Sendable>(
        user: String, positions: Int, _ body: @escaping @Sendable (PostgresConnection, WriteContext) async throws -> T
    ) async throws -> T {
        let outcome = Mutex<Result<T, any Error>?>(nil)
        let logger = logger
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let job = FeedJob(
                user: user, positions: positions,
                run: { connection, context in
                    do {
                        try await connection.exec("SAVEPOINT feed_write", logger: logger)
                        let value = try await body(connection, context)
                        try await connection.exec("RELEASE SAVEPOINT feed_write", logger: logger)
                        outcome.withLock { $0 = .success(value) }
                    } catch {
                        // If even this fails the connection is gone, and so is the whole batch.
                        try? await connection.exec("ROLLBACK TO SAVEPOINT feed_write", logger: logger)
                        outcome.withLock { $0 = .failure(error) }
                    }
                },
                finish: { error in
                    if let error { continuation.resume(throwing: error) } else { continuation.resume() }
                })
            let startDraining = queue.withLock { queue -> Bool in
                queue.jobs.append(job)
                if queue.draining { return false }
                queue.draining = true
                return true
            }
            if startDraining { Task { await self.drain() } }
        }
        switch outcome.withLock({ $0 }) {
        case .success(let value)?: return value
        case .failure(let error)?: throw Self.storageError(error, url: url)
        case nil: throw StorageError.unavailable("a write did not run")
        }
    }

    private let queue = Mutex<(jobs: [FeedJob], draining: Bool)>(([], false))
    static let maxBatch = 500

    private func drain() async {
        while true {
            let jobs = queue.withLock { queue -> [FeedJob] in
                if queue.jobs.isEmpty {
                    queue.draining = false
                    return []
                }
                let batch = Array(queue.jobs.prefix(Self.maxBatch))
                queue.jobs.removeFirst(batch.count)
                return batch
            }
            if jobs.isEmpty { return }
            var failure: (any Error)?
            var changed: [String: Int64] = [:]
            do {
                changed = try await transaction { connection in
                    let context = try await self.lockFeeds(
                        of: Array(Set(jobs.map(\.user))), positions: jobs.reduce(0) { $0 + $1.positions }, connection)
                    for job in jobs { await job.run(connection, context) }
                    try await self.announce(context, connection)
                    return context.changedUsers
                }
            } catch {
                failure = error
            }
            for job in jobs { job.finish(failure) }
            if failure == nil, !changed.isEmpty { onChange.handler?(changed) }
        }
    }

    // MARK: - Announcements between instances

    /// `instance|user:seq;user:seq…`, split to stay well under NOTIFY's 8000-byte payload limit.
    static func announcements(_ cursors: [String: Int64], from instance: String) -> [String] {
        var payloads: [String] = []
        var current = ""
        for (user, seq) in cursors.sorted(by: { $0.key < $1.key }) {
            let item = "\(user):\(seq)"
            if !current.isEmpty && current.utf8.count + item.utf8.count > 7000 {
                payloads.append("\(instance)|\(current)")
                current = ""
            }
            current += current.isEmpty ? item : ";\(item)"
        }
        if !current.isEmpty { payloads.append("\(instance)|\(current)") }
        return payloads
    }

    /// What a transaction that revokes or deletes credentials announces: `INSTANCE|credentials`.
    static func credentialsAnnouncement(from instance: String) -> String { "\(instance)|credentials" }

    /// True for another instance's (or `notty admin`'s) credentials announcement.
    static func isCredentialsAnnouncement(_ payload: String, ignoring instance: String) -> Bool {
        payload.hasSuffix("|credentials") && payload != credentialsAnnouncement(from: instance)
    }

    /// Inside a transaction that revokes or deletes credentials: tells the other instances to
    /// forget what they cache (delivered only if it commits).
    private func announceCredentialsChange(_ connection: PostgresConnection) async throws {
        try await connection.exec("SELECT pg_notify(\(Self.channel), \(Self.credentialsAnnouncement(from: instanceId)))", logger: logger)
    }

    /// The cursors in another instance's announcement; `nil` for this instance's own or a malformed one.
    static func cursors(inAnnouncement payload: String, ignoring instance: String) -> [String: Int64]? {
        guard let bar = payload.firstIndex(of: "|"), payload[..<bar] != instance else { return nil }
        var cursors: [String: Int64] = [:]
        for item in payload[payload.index(after: bar)...].split(separator: ";") {
            guard let colon = item.lastIndex(of: ":"), let seq = Int64(item[item.index(after: colon)...]) else { return nil }
            cursors[String(item[..<colon])] = seq
        }
        return cursors.isEmpty ? nil : cursors
    }

    private func startListening() {
        let task = Task { [weak self] in
            var listenedBefore = false
            var pause = Duration.milliseconds(200)
            while !Task.isCancelled, let storage = self {
                do {
                    try await storage.client.withConnection { connection in
                        try await connection.listen(on: Self.channel) { notices in
                            if listenedBefore {
                                // Announcements made while this instance was not listening are lost:
                                // have the service re-check every connected user and forget the
                                // credentials it caches (a revocation may be among them).
                                storage.logger.notice("listening to other instances again")
                                storage.onCredentialsChange.handler?()
                                storage.onResync.handler?()
                            }
                            listenedBefore = true
                            pause = .milliseconds(200)
                            for try await notice in notices {
                                if Self.isCredentialsAnnouncement(notice.payload, ignoring: storage.instanceId) {
                                    storage.onCredentialsChange.handler?()
                                } else if let cursors = Self.cursors(inAnnouncement: notice.payload, ignoring: storage.instanceId) {
                                    storage.onChange.handler?(cursors)
                                }
                            }
                        }
                    }
                } catch {
                    if Task.isCancelled { return }
                    storage.logger.warning("not listening to other instances' changes; retrying", metadata: ["error": "\(error)"])
                }
                try? await Task.sleep(for: pause)
                pause = min(pause * 2, .seconds(5))
            }
        }
        tasks.withLock { $0.insert(task, at: 0) }
    }

    // MARK: - Accounts

    public func createUser(_ user: UserRecord) async throws {
        try await execute(
            "INSERT INTO users (id, user_name, display_name, password_hash) VALUES (\(user.id), \(user.userName), \(user.displayName), \(user.passwordHash))")
    }

    public func deleteUser(name: String) async throws -> Bool {
        try await deleteAccount(table: "users", idColumn: "id", nameColumn: "user_name", name: name)
    }

    /// Deletes a user or an app found by its (case-insensitive) name, with its tokens.
    private func deleteAccount(table: String, idColumn: String, nameColumn: String, name: String) async throws -> Bool {
        try await transaction { connection in
            let ids = try await connection.query(
                "SELECT \(unescaped: idColumn) FROM \(unescaped: table) WHERE lower(\(unescaped: nameColumn)) = lower(\(name)) FOR UPDATE",
                logger: self.logger
            ).collect(String.self)
            guard let id = ids.first else { return false }
            try await connection.exec("DELETE FROM tokens WHERE subject = \(id)", logger: self.logger)
            try await connection.exec("DELETE FROM \(unescaped: table) WHERE \(unescaped: idColumn) = \(id)", logger: self.logger)
            try await self.announceCredentialsChange(connection)
            return true
        }
    }

    private static let userColumns = "id, user_name, display_name, password_hash"

    public func user(name: String) async throws -> UserRecord? {
        try await run { connection in
            try await connection.query("SELECT \(unescaped: Self.userColumns) FROM users WHERE lower(user_name) = lower(\(name))", logger: self.logger)
                .collect((String, String, String, String).self).first.map(UserRecord.init)
        }
    }

    public func user(id: String) async throws -> UserRecord? {
        try await run { connection in
            try await connection.query("SELECT \(unescaped: Self.userColumns) FROM users WHERE id = \(id)", logger: self.logger)
                .collect((String, String, String, String).self).first.map(UserRecord.init)
        }
    }

    public func createApp(_ app: AppRecord) async throws {
        try await execute(
            "INSERT INTO apps (client_id, host_name, secret_hash) VALUES (\(app.clientId), \(app.hostName), \(app.secretHash))")
    }

    public func deleteApp(hostName: String) async throws -> Bool {
        try await deleteAccount(table: "apps", idColumn: "client_id", nameColumn: "host_name", name: hostName)
    }

    public func app(clientId: String) async throws -> AppRecord? {
        try await run { connection in
            try await connection.query("SELECT client_id, host_name, secret_hash FROM apps WHERE client_id = \(clientId)", logger: self.logger)
                .collect((String, String, String).self).first.map(AppRecord.init)
        }
    }

    public func app(hostName: String) async throws -> AppRecord? {
        try await run { connection in
            try await connection.query("SELECT client_id, host_name, secret_hash FROM apps WHERE lower(host_name) = lower(\(hostName))", logger: self.logger)
                .collect((String, String, String).self).first.map(AppRecord.init)
        }
    }

    // MARK: - Tokens

    public func insertTokens(_ tokens: [TokenRecord]) async throws {
        try await transaction { connection in try await Self.insert(tokens, connection, self.logger) }
    }

    private static func insert(_ tokens: [TokenRecord], _ connection: PostgresConnection, _ logger: Logger) async throws {
        for token in tokens {
            try await connection.exec(
                """
                INSERT INTO tokens (hash, kind, subject, expires, revoked, device_id)
                VALUES (\(token.hash), \(token.kind.rawValue), \(token.subject), \(ISOTime.millis(token.expiresAt)), \(token.revoked), \(token.deviceId))
                """,
                logger: logger)
        }
    }

    public func token(hash: String) async throws -> TokenRecord? {
        try await run { connection in
            try await connection.query("SELECT hash, kind, subject, expires, revoked, device_id FROM tokens WHERE hash = \(hash)", logger: self.logger)
                .collect((String, String, String, Int64, Bool, String?).self).first.map { row in
                    TokenRecord(
                        hash: row.0, kind: TokenRecord.Kind(rawValue: row.1) ?? .userAccess, subject: row.2, expiresAt: ISOTime.date(millis: row.3),
                        revoked: row.4, deviceId: row.5)
                }
        }
    }

    public func rotateToken(oldHash: String, replacements: [TokenRecord], now: Date) async throws -> Bool {
        try await transaction { connection in
            let revoked = try await connection.query(
                "UPDATE tokens SET revoked = true WHERE hash = \(oldHash) AND NOT revoked AND expires > \(ISOTime.millis(now)) RETURNING hash",
                logger: self.logger
            ).collect(String.self)
            guard revoked.count == 1 else { return false }
            try await Self.insert(replacements, connection, self.logger)
            return true
        }
    }

    public func revokeTokens(hashes: [String]) async throws {
        try await transaction { connection in
            try await connection.exec("UPDATE tokens SET revoked = true WHERE hash = ANY(\(hashes))", logger: self.logger)
            try await self.announceCredentialsChange(connection)
        }
    }

    // MARK: - Subscriptions

    public func insertSubscription(_ s: SubscriptionRecord) async throws {
        try await execute(
                """
                INSERT INTO subscriptions (id, user_id, host_name, device_id, device_name, platform, created, expires, revoked, last_seen,
                                           webhook_hash, webhook_secret)
                VALUES (\(s.id), \(s.userId), \(s.targetHostName), \(s.deviceId), \(s.deviceName), \(s.platform),
                        \(ISOTime.millis(s.createdAt)), \(ISOTime.millis(s.expiresAt)), \(s.revoked), \(s.lastSeen.map(ISOTime.millis)),
                        \(s.webhookHash), \(s.webhookSecret))
                """)
    }

    private static let subscriptionColumns = "id, user_id, host_name, device_id, device_name, platform, created, expires, revoked, last_seen, webhook_hash, webhook_secret"
    private typealias SubscriptionRow = (String, String, String?, String, String?, String?, Int64, Int64, Bool, Int64?, String?, String?)

    private static func subscription(_ r: SubscriptionRow) -> SubscriptionRecord {
        SubscriptionRecord(
            id: r.0, userId: r.1, targetHostName: r.2, deviceId: r.3, deviceName: r.4, platform: r.5,
            createdAt: ISOTime.date(millis: r.6), expiresAt: ISOTime.date(millis: r.7), revoked: r.8, lastSeen: r.9.map(ISOTime.date(millis:)),
            webhookHash: r.10, webhookSecret: r.11)
    }

    public func subscription(id: String) async throws -> SubscriptionRecord? {
        try await run { connection in
            try await connection.query("SELECT \(unescaped: Self.subscriptionColumns) FROM subscriptions WHERE id = \(id)", logger: self.logger)
                .collect(SubscriptionRow.self).first.map(Self.subscription)
        }
    }

    public func subscription(webhookHash hash: String) async throws -> SubscriptionRecord? {
        try await run { connection in
            try await connection.query("SELECT \(unescaped: Self.subscriptionColumns) FROM subscriptions WHERE webhook_hash = \(hash)", logger: self.logger)
                .collect(SubscriptionRow.self).first.map(Self.subscription)
        }
    }

    public func subscriptions(userId: String) async throws -> [SubscriptionRecord] {
        try await run { connection in
            try await connection.query(
                "SELECT \(unescaped: Self.subscriptionColumns) FROM subscriptions WHERE user_id = \(userId) AND NOT revoked ORDER BY created",
                logger: self.logger
            ).collect(SubscriptionRow.self).map(Self.subscription)
        }
    }

    public func revokeSubscription(id: String, userId: String) async throws -> Bool {
        try await transaction { connection in
            let revoked = try await connection.query(
                "UPDATE subscriptions SET revoked = true WHERE id = \(id) AND user_id = \(userId) AND NOT revoked RETURNING host_name, device_id",
                logger: self.logger
            ).collect((String?, String).self)
            guard let (host, device) = revoked.first else { return false }
            if host == nil {
                try await connection.exec(
                    "UPDATE tokens SET revoked = true WHERE device_id = \(device) AND subject = \(userId) AND NOT revoked", logger: self.logger)
            }
            try await self.announceCredentialsChange(connection)
            return true
        }
    }

    public func touchDevice(deviceId: String, userId: String, at: Date) async throws {
        try await execute(
            "UPDATE subscriptions SET last_seen = \(ISOTime.millis(at)) WHERE device_id = \(deviceId) AND user_id = \(userId) AND host_name IS NULL AND NOT revoked")
    }

    // MARK: - Notification rows

    private static func stored(_ row: PostgresRow) throws -> StoredNotification {
        let r = row.makeRandomAccess()
        return try NotificationColumns(
            id: r[0].decode(String.self), userId: r[1].decode(String.self), hostName: r[2].decode(String.self),
            appNotificationId: r[3].decode(String.self), groupName: r[4].decode(String?.self), priority: r[5].decode(String.self),
            rawContent: r[6].decode(String?.self), hasVisual: r[7].decode(Bool.self), title: r[8].decode(String?.self),
            body: r[9].decode(String?.self), displayTTL: r[10].decode(Int64?.self), expires: r[11].decode(Int64.self),
            created: r[12].decode(Int64.self), modified: r[13].decode(Int64.self), deleted: r[14].decode(Bool.self),
            readState: r[15].decode(String.self), readAt: r[16].decode(Int64.self), actionState: r[17].decode(String.self),
            snoozedUntil: r[18].decode(Int64?.self), actionAt: r[19].decode(Int64.self), targetPolicy: r[20].decode(String?.self),
            fallbackPolicy: r[21].decode(String?.self), launchUrl: r[22].decode(String?.self), seq: r[23].decode(Int64.self)
        ).stored
    }

    private func fetchStored(_ connection: PostgresConnection, _ query: PostgresQuery) async throws -> [StoredNotification] {
        var rows: [StoredNotification] = []
        for try await row in try await connection.query(query, logger: logger) { rows.append(try Self.stored(row)) }
        return rows
    }

    private static let columns = NotificationColumns.list
    private static let updateAll = NotificationColumns.names.dropFirst().map { "\($0) = EXCLUDED.\($0)" }.joined(separator: ", ")

    /// Writes a row whole (insert, or replace by id).
    private func save(_ s: StoredNotification, _ connection: PostgresConnection) async throws {
        let c = NotificationColumns(s)
        try await connection.exec(
            """
            INSERT INTO notifications (\(unescaped: Self.columns)) VALUES (\(c.id), \(c.userId), \(c.hostName), \(c.appNotificationId),
                \(c.groupName), \(c.priority), \(c.rawContent), \(c.hasVisual), \(c.title), \(c.body), \(c.displayTTL), \(c.expires),
                \(c.created), \(c.modified), \(c.deleted), \(c.readState), \(c.readAt), \(c.actionState), \(c.snoozedUntil),
                \(c.actionAt), \(c.targetPolicy), \(c.fallbackPolicy), \(c.launchUrl), \(c.seq))
            ON CONFLICT (id) DO UPDATE SET \(unescaped: Self.updateAll)
            """,
            logger: logger)
    }

    private func activeRow(_ connection: PostgresConnection, userId: String, hostName: String, appNotificationId: String) async throws -> StoredNotification? {
        try await fetchStored(connection, """
            SELECT \(unescaped: Self.columns) FROM notifications
            WHERE user_id = \(userId) AND lower(host_name) = lower(\(hostName)) AND app_notification_id = \(appNotificationId) AND NOT deleted
            """).first
    }

    // MARK: - Notification writes

    public func publish(_ input: PublishInput) async throws -> UserNotification {
        try await publish(batch: [input])[0]
    }

    public func publish(batch inputs: [PublishInput]) async throws -> [UserNotification] {
        guard let user = inputs.first?.userId else { return [] }
        return try await groupedFeedWrite(user: user, positions: 2 * inputs.count) { connection, context in
            var published: [UserNotification] = []
            for input in inputs {
                let active = try await self.activeRow(
                    connection, userId: input.userId, hostName: input.hostName, appNotificationId: input.request.appNotificationId)
                let rows = NotificationRules.publishRows(input, active: active, newId: Identifiers.notification()) { context.nextSeq(for: input.userId) }
                for row in rows { try await self.save(row, connection) }
                published.append(rows[rows.count - 1].notification)
            }
            return published
        }
    }

    public func deleteByApp(userId: String, hostName: String, appNotificationId: String, now: Date) async throws -> Bool {
        try await groupedFeedWrite(user: userId, positions: 1) { connection, context in
            guard let row = try await self.activeRow(connection, userId: userId, hostName: hostName, appNotificationId: appNotificationId) else {
                return false
            }
            try await self.save(NotificationRules.deleted(row, now: now, seq: context.nextSeq(for: userId)), connection)
            return row.notification.expirationDateTime > now
        }
    }

    public func mutate(userId: String, mutations: [Mutation], now: Date) async throws -> [MutationResult] {
        try await groupedFeedWrite(user: userId, positions: mutations.count) { connection, context in
            let ids = Array(Set(mutations.map(\.id)))
            let mutationIds = mutations.compactMap(\.mutationId)
            var rows: [String: StoredNotification] = [:]
            for row in try await self.fetchStored(connection, """
                SELECT \(unescaped: Self.columns) FROM notifications WHERE user_id = \(userId) AND id = ANY(\(ids)) FOR UPDATE
                """) {
                rows[row.notification.id] = row
            }
            var prior: [String: Int] = [:]
            if !mutationIds.isEmpty {
                for (mutationId, status) in try await connection.query(
                    "SELECT mutation_id, status FROM mutations WHERE user_id = \(userId) AND mutation_id = ANY(\(mutationIds))", logger: self.logger
                ).collect((String, Int32).self) {
                    prior[mutationId] = Int(status)
                }
            }
            let buffer = BufferedRowStore(rows: rows, priorMutations: prior)
            let results = try mutations.map { mutation in
                try MutationApplier.apply(mutation, userId: userId, now: now, context: context, store: buffer)
            }
            for id in buffer.savedOrder { if let row = buffer.rows[id] { try await self.save(row, connection) } }
            for record in buffer.recorded {
                try await connection.exec(
                    """
                    INSERT INTO mutations (user_id, mutation_id, notification_id, status, created)
                    VALUES (\(userId), \(record.mutationId), \(record.notificationId), \(Int32(record.status)), \(ISOTime.millis(now)))
                    ON CONFLICT DO NOTHING
                    """,
                    logger: self.logger)
            }
            return results
        }
    }

    public func expire(now: Date) async throws -> Int {
        let nowMillis = ISOTime.millis(now)
        // Whose notifications have expired, and how many (at most 5,000 a sweep).
        let due = try await run { connection in
            try await connection.query(
                """
                SELECT user_id, count(*) FROM notifications WHERE NOT deleted AND expires <= \(nowMillis)
                GROUP BY user_id ORDER BY user_id LIMIT 500
                """,
                logger: self.logger
            ).collect((String, Int64).self)
        }
        guard !due.isEmpty else { return 0 }
        let users = due.map(\.0)
        let limit = Int(min(due.reduce(0) { $0 + $1.1 }, 5000))
        return try await feedWrite(users: users, positions: limit) { connection, context in
            // Read again under the lock; no more rows than positions were reserved.
            let rows = try await self.fetchStored(connection, """
                SELECT \(unescaped: Self.columns) FROM notifications
                WHERE NOT deleted AND expires <= \(nowMillis) AND user_id = ANY(\(users)) ORDER BY expires LIMIT \(Int64(limit))
                """)
            for row in rows {
                try await self.save(NotificationRules.deleted(row, now: now, seq: context.nextSeq(for: row.userId)), connection)
            }
            return rows.count
        }
    }

    public func purgeHistory(before: Date) async throws {
        let cutoff = ISOTime.millis(before)
        try await transaction { connection in
            try await connection.exec(
                """
                UPDATE users SET purged_through = greatest(purged_through, gone.newest)
                FROM (SELECT user_id, max(seq) AS newest FROM notifications WHERE deleted AND modified < \(cutoff) GROUP BY user_id) AS gone
                WHERE users.id = gone.user_id
                """,
                logger: self.logger)
            try await connection.exec("DELETE FROM notifications WHERE deleted AND modified < \(cutoff)", logger: self.logger)
            try await connection.exec("DELETE FROM mutations WHERE created < \(cutoff)", logger: self.logger)
            try await connection.exec("DELETE FROM tokens WHERE expires < \(cutoff)", logger: self.logger)
        }
    }

    // MARK: - Notification reads

    public func notification(id: String, userId: String) async throws -> UserNotification? {
        try await run { connection in
            try await self.fetchStored(connection, "SELECT \(unescaped: Self.columns) FROM notifications WHERE id = \(id) AND user_id = \(userId)")
                .first?.notification
        }
    }

    public func changes(userId: String, since: Int64, limit: Int) async throws -> ChangeFeedPage? {
        try await run { connection in
            let purged: Int64 = try await connection.query("SELECT purged_through FROM users WHERE id = \(userId)", logger: self.logger)
                .collect(Int64.self).first ?? 0
            if since > 0 && since < purged { return nil }
            let rows = try await self.fetchStored(connection, """
                SELECT \(unescaped: Self.columns) FROM notifications WHERE user_id = \(userId) AND seq > \(since) ORDER BY seq LIMIT \(Int64(limit + 1))
                """)
            let page = rows.prefix(limit)
            return ChangeFeedPage(changes: page.map(\.notification), lastSeq: page.last?.seq ?? max(since, purged), hasMore: rows.count > limit)
        }
    }

    public func latestSeq(userId: String) async throws -> Int64 {
        try await run { connection in
            try await connection.query(
                """
                SELECT greatest(coalesce((SELECT max(seq) FROM notifications WHERE user_id = \(userId)), 0),
                                coalesce((SELECT purged_through FROM users WHERE id = \(userId)), 0))
                """,
                logger: self.logger
            ).collect(Int64.self).first ?? 0
        }
    }

    public func highestSeq() async throws -> Int64 {
        try await run { connection in
            try await connection.query("SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM notty_seq", logger: self.logger)
                .collect(Int64.self).first ?? 0
        }
    }

    public func list(userId: String, view: NotificationView, top: Int, skip: Int, now: Date) async throws -> [UserNotification] {
        var binds = PostgresBindings()
        binds.append(userId)
        binds.append(ISOTime.millis(now))
        binds.append(Int64(top))
        binds.append(Int64(skip))
        let query = PostgresQuery(unsafeSQL: """
            SELECT \(Self.columns) FROM notifications WHERE user_id = $1 AND NOT deleted AND expires > $2 AND \(view.sqlCondition(now: "$2"))
            ORDER BY created DESC, id DESC LIMIT $3 OFFSET $4
            """, binds: binds)
        return try await run { connection in try await self.fetchStored(connection, query).map(\.notification) }
    }

    public func counts(userId: String, now: Date) async throws -> ViewCounts {
        let nowMillis = ISOTime.millis(now)
        return try await run { connection in
            // Each view's count with the one SQL form of the view rule ($2 is now).
            let views: [NotificationView] = [.unread, .read, .activated, .dismissed, .snoozed]
            var binds = PostgresBindings()
            binds.append(userId)
            binds.append(nowMillis)
            let query = PostgresQuery(unsafeSQL: """
                SELECT count(*), \(views.map { "count(*) FILTER (WHERE \($0.sqlCondition(now: "$2")))" }.joined(separator: ", "))
                FROM notifications WHERE user_id = $1 AND NOT deleted AND expires > $2
                """, binds: binds)
            let row: (Int64, Int64, Int64, Int64, Int64, Int64) = try await connection.query(query, logger: self.logger)
                .collect((Int64, Int64, Int64, Int64, Int64, Int64).self).first ?? (0, 0, 0, 0, 0, 0)
            var counts = ViewCounts()
            (counts.all, counts.unread, counts.read, counts.activated, counts.dismissed, counts.snoozed) =
                (Int(row.0), Int(row.1), Int(row.2), Int(row.3), Int(row.4), Int(row.5))
            return counts
        }
    }
}

/// The rows of one mutation batch, read up front, for ``MutationApplier`` (which is synchronous);
/// what it saves and records is written back afterwards.
private final class BufferedRowStore: MutationRowStore {
    private(set) var rows: [String: StoredNotification]
    private var priorMutations: [String: Int]
    private(set) var savedOrder: [String] = []
    private(set) var recorded: [(mutationId: String, notificationId: String, status: Int)] = []

    init(rows: [String: StoredNotification], priorMutations: [String: Int]) {
        self.rows = rows
        self.priorMutations = priorMutations
    }

    func row(id: String, userId: String) throws -> StoredNotification? {
        rows[id].flatMap { $0.userId == userId ? $0 : nil }
    }

    func save(_ row: StoredNotification) throws {
        if !savedOrder.contains(row.notification.id) { savedOrder.append(row.notification.id) }
        rows[row.notification.id] = row
    }

    func priorMutation(userId: String, mutationId: String) throws -> Int? {
        priorMutations[mutationId]
    }

    func recordMutation(userId: String, mutationId: String, notificationId: String, status: Int, now: Date) throws {
        guard priorMutations[mutationId] == nil else { return }
        priorMutations[mutationId] = status
        recorded.append((mutationId, notificationId, status))
    }
}

extension PostgresConnection {
    /// Runs a statement whose rows (if any) are not wanted, and reads them to the end.
    func exec(_ query: PostgresQuery, logger: Logger) async throws {
        for try await _ in try await self.query(query, logger: logger) {}
    }
}

extension PostgresRowSequence {
    /// Every row decoded as the given column type, or tuple of them.
    func collect<each Column: PostgresDecodable & Sendable>(_ types: (repeat each Column).Type) async throws -> [(repeat each Column)] {
        var values: [(repeat each Column)] = []
        for try await value in decode(types) { values.append(value) }
        return values
    }
}
