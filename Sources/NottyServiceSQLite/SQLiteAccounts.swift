import Foundation
import GRDB
import NottyCore
import NottyRecords
import NottyService

/// Failed sign-ins, users, apps and tokens.
extension SQLiteStorage {
    static func guessRecord(_ row: Row) -> GuessRecord {
        GuessRecord(
            key: row["key"], failures: row["failures"], windowStart: ISOTime.date(millis: row["window_start"]),
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
                sql: "INSERT INTO users (id, user_name, display_name, password_hash, disabled, created) VALUES (?, ?, ?, ?, ?, ?)",
                arguments: [user.id, user.userName, user.displayName, user.passwordHash, user.disabled, user.created.map(ISOTime.millis)])
        }
    }

    /// The credentials mark's modification time in nanoseconds (0 before the first revocation).
    public func credentialsStamp() -> Int64 {
        var info = stat()
        guard stat(credentialsMark, &info) == 0 else { return 0 }
        return Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec)
    }

    /// After a commit that revoked or deleted credentials: every process on this file is told.
    func markCredentialsChanged() {
        let text = String(ISOTime.millis(Date())) + " " + String(UInt64.random(in: 0...UInt64.max))
        if !FileManager.default.createFile(atPath: credentialsMark, contents: Data(text.utf8)) {
            // This process has emptied its own caches already; others keep theirs up to 5 s.
            FileHandle.standardError.write(
                Data(
                    "notty: cannot write \(credentialsMark): other processes on this database learn of the revocation within 5 s instead of at once\n"
                        .utf8))
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

    static func user(_ row: Row) -> UserRecord {
        UserRecord(
            id: row["id"], userName: row["user_name"], displayName: row["display_name"], passwordHash: row["password_hash"],
            disabled: row["disabled"] ?? false, created: (row["created"] as Int64?).map(ISOTime.date(millis:)))
    }

    public func allUsers() async throws -> [UserRecord] {
        try await read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM users WHERE id NOT LIKE 'team-%' ORDER BY user_name", arguments: []).map(Self.user)
        }
    }

    public func updateAccount(userId: String, passwordHash: String?, disabled: Bool?, signOut: SignOut) async throws -> Bool {
        defer { markCredentialsChanged() }
        return try await write { db, _ in
            guard try Int.fetchOne(db, sql: "SELECT 1 FROM users WHERE id = ?", arguments: [userId]) != nil else { return false }
            if let passwordHash { try db.execute(sql: "UPDATE users SET password_hash = ? WHERE id = ?", arguments: [passwordHash, userId]) }
            if let disabled { try db.execute(sql: "UPDATE users SET disabled = ? WHERE id = ?", arguments: [disabled, userId]) }
            let keep: String?
            switch signOut {
            case .nobody: return true
            case .everywhere: keep = nil
            case .allBut(let deviceId): keep = deviceId
            }
            try db.execute(
                sql: "UPDATE tokens SET revoked = 1 WHERE subject = ? AND revoked = 0 AND (? IS NULL OR device_id IS NULL OR device_id <> ?)",
                arguments: [userId, keep, keep])
            try db.execute(
                sql: "UPDATE subscriptions SET revoked = 1 WHERE user_id = ? AND host_name IS NULL AND revoked = 0 AND (? IS NULL OR device_id <> ?)",
                arguments: [userId, keep, keep])
            try db.execute(
                sql: "DELETE FROM webpush_subscriptions WHERE user_id = ? AND (? IS NULL OR device_id IS NULL OR device_id <> ?)",
                arguments: [userId, keep, keep])
            return true
        }
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

    static func app(_ row: Row) -> AppRecord {
        AppRecord(clientId: row["client_id"], hostName: row["host_name"], secretHash: row["secret_hash"])
    }

    // MARK: - Tokens

    public func insertTokens(_ tokens: [TokenRecord]) async throws {
        try await write { db, _ in try Self.insert(tokens, db) }
    }

    static func insert(_ tokens: [TokenRecord], _ db: Database) throws {
        for token in tokens {
            try db.execute(
                sql: "INSERT INTO tokens (hash, kind, subject, expires, revoked, device_id) VALUES (?, ?, ?, ?, ?, ?)",
                arguments: [token.hash, token.kind.rawValue, token.subject, ISOTime.millis(token.expiresAt), token.revoked, token.deviceId])
        }
    }

    public func token(hash: String) async throws -> TokenRecord? {
        try await read { db in
            let sql = """
                SELECT tokens.*, coalesce(users.disabled, 0) AS subject_disabled FROM tokens LEFT JOIN users ON users.id = tokens.subject
                WHERE tokens.hash = ?
                """
            return try Row.fetchOne(db, sql: sql, arguments: [hash]).map { row in
                TokenRecord(
                    hash: row["hash"], kind: TokenRecord.Kind(rawValue: row["kind"]) ?? .userAccess, subject: row["subject"],
                    expiresAt: ISOTime.date(millis: row["expires"]), revoked: row["revoked"], deviceId: row["device_id"],
                    subjectDisabled: row["subject_disabled"])
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
}
