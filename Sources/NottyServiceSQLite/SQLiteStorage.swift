import Foundation
import GRDB
import Logging
import NottyCore
import NottySQLite
import NottyService
import NottyStorageSupport
import Synchronization

/// ``ServiceStorage`` on one SQLite file through GRDB: WAL mode, many readers, one
/// writer with group commit (``SQLiteWriter``).
public final class SQLiteStorage: ServiceStorage {
    let pool: DatabasePool
    let writer: SQLiteWriter
    /// Checkpoints the WAL beside the writer instead of in its commits.
    let checkpointer: WALCheckpointer
    /// `PATH-credentials`: touched after every commit that revokes or deletes credentials, so
    /// that a `notty serve` on this file sees `notty admin`'s removals (another process) on its
    /// next request: ``credentialsStamp()`` is one stat(2), not a query.
    let credentialsMark: String
    /// Indexes an earlier store's notifications for search in the background (``SQLiteSearch``).
    private let indexing = Mutex<Task<Void, Never>?>(nil)

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
        config.prepareDatabase { db in try SQLiteSearch.install(db) }
        credentialsMark = path + "-credentials"
        let directory = URL(fileURLWithPath: path).deletingLastPathComponent().path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        pool = try DatabasePool(path: path, configuration: config)
        // WAL (DatabasePool's default) with FULL sync: a commit that was acknowledged survives
        // a crash and a power loss. Group commit keeps this affordable. It is set here, on the
        // writer, and not in `prepareDatabase`: the pool turns WAL on after that hook and sets
        // `synchronous = NORMAL` as it does, which would lose the last commits on power loss.
        try pool.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA synchronous = FULL") }
        let unknown = try pool.read { db in try Self.migrator.appliedIdentifiers(db).subtracting(Self.migrator.migrations) }
        if !unknown.isEmpty { throw NewerStoreError(place: path, unknown: Array(unknown), newestKnown: Self.migrator.migrations.last ?? "") }
        if let lastMigration { try Self.migrator.migrate(pool, upTo: lastMigration) } else { try Self.migrator.migrate(pool) }
        if lastMigration == nil { try pool.write { db in try SQLiteSearch.checkFolding(db) } }
        let seq = try pool.read { db in try Self.seq(db) }
        writer = SQLiteWriter(pool: pool, committedSeq: seq)
        checkpointer = WALCheckpointer(path: path)
        pool.writeWithoutTransaction { [checkpointer] db in checkpointer.install(on: db) }
        startIndexing()
    }

    /// Indexes the rows below the search index's mark, a few thousand a transaction through the
    /// writer (publishes go on between them), its progress in the log.
    private func startIndexing() {
        guard let rows = try? pool.read({ db in try SQLiteSearch.unindexed(db) }), rows > 0 else { return }
        let logger = Logger(label: "notty.search")
        logger.info("indexing \(rows) earlier notifications for search in the background")
        let task = Task { [writer] in
            var done = 0
            var reported = 0
            while !Task.isCancelled {
                guard let more = try? await writer.write(savepoint: false, { db, _ in try SQLiteSearch.backfill(db) }) else {
                    logger.error("indexing for search stopped on an error; it goes on at the next start")
                    return
                }
                done = min(rows, done + SQLiteSearch.backfillRows)
                if !more {
                    logger.info("search index complete: \(rows) earlier notifications indexed")
                    return
                }
                if done * 10 / rows > reported {
                    reported = done * 10 / rows
                    logger.info("indexing for search: \(done) of \(rows) (\(reported * 10)%)")
                }
            }
        }
        indexing.withLock { $0 = task }
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
        if let task = indexing.withLock({ $0 }) {
            task.cancel()
            await task.value
        }
        try await pool.writeWithoutTransaction { [checkpointer] db in checkpointer.uninstall(from: db) }
        await checkpointer.finished()
        try pool.close()
    }

    func read<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        do {
            return try await pool.read(body)
        } catch let error as DatabaseError {
            throw StorageError.unavailable("SQLite: \(error)")
        }
    }

    func write<T: Sendable>(savepoint: Bool = true, _ body: @escaping @Sendable (Database, WriteContext) throws -> T) async throws -> T {
        do {
            return try await writer.write(savepoint: savepoint, body)
        } catch let error as DatabaseError {
            if error.resultCode == .SQLITE_CONSTRAINT { throw StorageError.conflict(error.message ?? "constraint") }
            throw StorageError.unavailable("SQLite: \(error)")
        }
    }
}

// MARK: - The change counter, for `restore` too

extension SQLiteStorage {
    /// The store's change counter: the newest cursor it has handed out.
    static func seq(_ db: Database) throws -> Int64 {
        try Int64.fetchOne(db, sql: "SELECT value FROM meta WHERE key = 'seq'") ?? 0
    }

    /// Makes every cursor up to `newest` stale (a restored store's): each user's purge mark and
    /// the counter move past it, so a device holding one is answered `410 Gone` and resyncs once
    /// (PROTOCOL.md §2.3), and new changes are counted from above it.
    static func startCursors(after newest: Int64, _ db: Database) throws {
        try db.execute(sql: "UPDATE users SET purged_through = max(purged_through, ?)", arguments: [newest + 1])
        try db.execute(
            sql: "INSERT INTO meta (key, value) VALUES ('seq', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value", arguments: [newest + 1])
    }
}
