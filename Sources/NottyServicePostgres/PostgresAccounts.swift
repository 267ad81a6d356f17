import Foundation
import Logging
import NottyCore
import NottyRecords
import NottySecrets
import NottyService
import PostgresNIO
import Synchronization

/// Users, apps, tokens, failed sign-ins and subscriptions on PostgreSQL.
extension PostgresStorage {
    public func createUser(_ user: UserRecord) async throws {
        try await execute(
            """
            INSERT INTO users (id, user_name, display_name, password_hash, disabled, created)
            VALUES (\(user.id), \(user.userName), \(user.displayName), \(user.passwordHash), \(user.disabled), \(user.created.map(ISOTime.millis)))
            """
        )
    }

    public func deleteUser(name: String) async throws -> Bool {
        try await deleteAccount(table: "users", idColumn: "id", nameColumn: "user_name", name: name, feedLock: true)
    }

    /// Deletes a user or an app found by its (case-insensitive) name, with its tokens; a user
    /// under its feed lock, taken first as every feed write does (``FeedLock``).
    func deleteAccount(table: String, idColumn: String, nameColumn: String, name: String, feedLock: Bool = false) async throws -> Bool {
        try await transaction { connection in
            if feedLock {
                let ids = try await connection.query(
                    "SELECT \(unescaped: idColumn) FROM \(unescaped: table) WHERE lower(\(unescaped: nameColumn)) = lower(\(name))",
                    logger: self.logger
                ).collect(String.self)
                _ = try await self.lockFeeds(of: ids, positions: 0, connection)
            }
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

    static let userColumns = "id, user_name, display_name, password_hash, disabled, created"
    typealias UserRow = (String, String, String, String, Bool, Int64?)

    static func user(_ row: UserRow) -> UserRecord {
        UserRecord(
            id: row.0, userName: row.1, displayName: row.2, passwordHash: row.3, disabled: row.4, created: row.5.map(ISOTime.date(millis:)))
    }

    public func user(name: String) async throws -> UserRecord? {
        try await run { connection in
            try await connection.query(
                "SELECT \(unescaped: Self.userColumns) FROM users WHERE lower(user_name) = lower(\(name))", logger: self.logger
            )
            .collect(UserRow.self).first.map(Self.user)
        }
    }

    public func user(id: String) async throws -> UserRecord? {
        try await run { connection in
            try await connection.query("SELECT \(unescaped: Self.userColumns) FROM users WHERE id = \(id)", logger: self.logger)
                .collect(UserRow.self).first.map(Self.user)
        }
    }

    public func allUsers() async throws -> [UserRecord] {
        try await run { connection in
            try await connection.query(
                "SELECT \(unescaped: Self.userColumns) FROM users WHERE id NOT LIKE 'team-%' ORDER BY user_name", logger: self.logger
            ).collect(UserRow.self).map(Self.user)
        }
    }

    public func updateAccount(userId: String, passwordHash: String?, disabled: Bool?, signOut: SignOut) async throws -> Bool {
        try await transaction { connection in
            let found = try await connection.query("SELECT id FROM users WHERE id = \(userId) FOR UPDATE", logger: self.logger).collect(String.self)
            guard !found.isEmpty else { return false }
            if let passwordHash {
                try await connection.exec("UPDATE users SET password_hash = \(passwordHash) WHERE id = \(userId)", logger: self.logger)
            }
            if let disabled { try await connection.exec("UPDATE users SET disabled = \(disabled) WHERE id = \(userId)", logger: self.logger) }
            let keep: String?
            switch signOut {
            case .nobody:
                try await self.announceCredentialsChange(connection)
                return true
            case .everywhere: keep = nil
            case .allBut(let deviceId): keep = deviceId
            }
            try await connection.exec(
                """
                UPDATE tokens SET revoked = true WHERE subject = \(userId) AND NOT revoked
                AND (\(keep)::text IS NULL OR device_id IS NULL OR device_id <> \(keep))
                """, logger: self.logger)
            try await connection.exec(
                """
                UPDATE subscriptions SET revoked = true WHERE user_id = \(userId) AND host_name IS NULL AND NOT revoked
                AND (\(keep)::text IS NULL OR device_id <> \(keep))
                """, logger: self.logger)
            try await connection.exec(
                """
                DELETE FROM webpush_subscriptions WHERE user_id = \(userId)
                AND (\(keep)::text IS NULL OR device_id IS NULL OR device_id <> \(keep))
                """, logger: self.logger)
            try await self.announceCredentialsChange(connection)
            return true
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
            try await connection.query(
                "SELECT client_id, host_name, secret_hash FROM apps WHERE lower(host_name) = lower(\(hostName))", logger: self.logger
            )
            .collect((String, String, String).self).first.map(AppRecord.init)
        }
    }

    // MARK: - Tokens

    public func insertTokens(_ tokens: [TokenRecord]) async throws {
        try await transaction { connection in try await Self.insert(tokens, connection, self.logger) }
    }

    static func insert(_ tokens: [TokenRecord], _ connection: PostgresConnection, _ logger: Logger) async throws {
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
            try await connection.query(
                """
                SELECT t.hash, t.kind, t.subject, t.expires, t.revoked, t.device_id, coalesce(u.disabled, false)
                FROM tokens t LEFT JOIN users u ON u.id = t.subject WHERE t.hash = \(hash)
                """, logger: self.logger
            )
            .collect((String, String, String, Int64, Bool, String?, Bool).self).first.map { row in
                TokenRecord(
                    hash: row.0, kind: TokenRecord.Kind(rawValue: row.1) ?? .userAccess, subject: row.2, expiresAt: ISOTime.date(millis: row.3),
                    revoked: row.4, deviceId: row.5, subjectDisabled: row.6)
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

    // MARK: - Failed sign-ins

    static func guessRecord(_ row: (String, Int, Int64, Int64?, Int)) -> GuessRecord {
        GuessRecord(
            key: row.0, failures: row.1, windowStart: ISOTime.date(millis: row.2), lockedUntil: row.3.map(ISOTime.date(millis:)), strikes: row.4)
    }

    public func guesses(keys: [String]) async throws -> [GuessRecord] {
        try await run { connection in
            try await connection.query(
                "SELECT key, failures, window_start, locked_until, strikes FROM guesses WHERE key = ANY(\(keys)) ORDER BY key", logger: self.logger
            )
            .collect((String, Int, Int64, Int64?, Int).self).map(Self.guessRecord)
        }
    }

    public func updateGuesses(keys: [String], _ update: @escaping @Sendable (String, GuessRecord?) -> GuessRecord?) async throws {
        try await transaction { connection in
            for key in keys.sorted() {  // one order for every instance: no deadlock
                // The row, locked (made first when there is none) so that instances take turns.
                try await connection.exec(
                    "INSERT INTO guesses (key, failures, window_start, locked_until, strikes) VALUES (\(key), 0, 0, NULL, 0) ON CONFLICT (key) DO NOTHING",
                    logger: self.logger)
                let row = try await connection.query(
                    "SELECT key, failures, window_start, locked_until, strikes FROM guesses WHERE key = \(key) FOR UPDATE", logger: self.logger
                )
                .collect((String, Int, Int64, Int64?, Int).self).first
                // A row made just now (window 0) is no record yet.
                let current = row.flatMap { $0.2 == 0 && $0.1 == 0 && $0.4 == 0 ? nil : Self.guessRecord($0) }
                if let next = update(key, current) {
                    let until = next.lockedUntil.map(ISOTime.millis)
                    try await connection.exec(
                        "UPDATE guesses SET failures = \(next.failures), window_start = \(ISOTime.millis(next.windowStart)), locked_until = \(until), strikes = \(next.strikes) WHERE key = \(key)",
                        logger: self.logger)
                } else {
                    try await connection.exec("DELETE FROM guesses WHERE key = \(key)", logger: self.logger)
                }
            }
        }
    }

    public func allGuesses() async throws -> [GuessRecord] {
        try await run { connection in
            try await connection.query("SELECT key, failures, window_start, locked_until, strikes FROM guesses ORDER BY key", logger: self.logger)
                .collect((String, Int, Int64, Int64?, Int).self).map(Self.guessRecord)
        }
    }

    public func forgetGuesses(keys: [String]?) async throws -> Int {
        try await run { connection in
            let rows: [Int]
            if let keys {
                rows = try await connection.query(
                    "WITH gone AS (DELETE FROM guesses WHERE key = ANY(\(keys)) RETURNING 1) SELECT count(*)::int FROM gone", logger: self.logger
                ).collect(Int.self)
            } else {
                rows = try await connection.query(
                    "WITH gone AS (DELETE FROM guesses RETURNING 1) SELECT count(*)::int FROM gone", logger: self.logger
                ).collect(Int.self)
            }
            return rows.first ?? 0
        }
    }

    // MARK: - Subscriptions

    public func insertSubscription(_ s: SubscriptionRecord) async throws {
        try await execute(
            """
            INSERT INTO subscriptions (id, user_id, host_name, device_id, device_name, platform, created, expires, revoked, last_seen,
                                       webhook_hash, webhook_secret, alertmanager_url, upstream_id)
            VALUES (\(s.id), \(s.userId), \(s.targetHostName), \(s.deviceId), \(s.deviceName), \(s.platform),
                    \(ISOTime.millis(s.createdAt)), \(ISOTime.millis(s.expiresAt)), \(s.revoked), \(s.lastSeen.map(ISOTime.millis)),
                    \(s.webhookHash), \(s.webhookSecret?.stored), \(s.alertmanagerURL?.stored), \(s.upstreamId))
            """)
    }

    static let subscriptionColumns =
        "id, user_id, host_name, device_id, device_name, platform, created, expires, revoked, last_seen, webhook_hash, webhook_secret, alertmanager_url, upstream_id"
    typealias SubscriptionRow = (String, String, String?, String, String?, String?, Int64, Int64, Bool, Int64?, String?, String?, String?, String?)

    static func subscription(_ r: SubscriptionRow) -> SubscriptionRecord {
        SubscriptionRecord(
            id: r.0, userId: r.1, targetHostName: r.2, deviceId: r.3, deviceName: r.4, platform: r.5,
            createdAt: ISOTime.date(millis: r.6), expiresAt: ISOTime.date(millis: r.7), revoked: r.8, lastSeen: r.9.map(ISOTime.date(millis:)),
            webhookHash: r.10, webhookSecret: r.11.map(Sealed.init(stored:)), alertmanagerURL: r.12.map(Sealed.init(stored:)), upstreamId: r.13)
    }

    public func subscription(id: String) async throws -> SubscriptionRecord? {
        try await run { connection in
            for try await row in try await connection.execute(SubscriptionById(id: id), logger: self.logger) { return Self.subscription(row) }
            return nil
        }
    }

    /// What every publish reads (through a short cache): prepared, so planned once a connection.
    struct SubscriptionById: PostgresPreparedStatement {
        static let sql = "SELECT \(PostgresStorage.subscriptionColumns) FROM subscriptions WHERE id = $1::text"
        typealias Row = SubscriptionRow
        let id: String

        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 1)
            bindings.append(id)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> SubscriptionRow { try row.decode(SubscriptionRow.self) }
    }

    public func subscription(webhookHash hash: String) async throws -> SubscriptionRecord? {
        try await run { connection in
            try await connection.query(
                "SELECT \(unescaped: Self.subscriptionColumns) FROM subscriptions WHERE webhook_hash = \(hash)", logger: self.logger
            )
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
                // A browser's Web Push subscriptions end with its device (PROTOCOL.md §14).
                try await connection.exec(
                    "DELETE FROM webpush_subscriptions WHERE device_id = \(device) AND user_id = \(userId)", logger: self.logger)
            }
            try await self.announceCredentialsChange(connection)
            return true
        }
    }

    public func setUpstreamId(subscriptionId: String, upstreamId: String) async throws {
        try await execute("UPDATE subscriptions SET upstream_id = \(upstreamId) WHERE id = \(subscriptionId)")
    }

    public func touchDevice(deviceId: String, userId: String, at: Date) async throws {
        try await execute(
            "UPDATE subscriptions SET last_seen = \(ISOTime.millis(at)) WHERE device_id = \(deviceId) AND user_id = \(userId) AND host_name IS NULL AND NOT revoked"
        )
    }
}
