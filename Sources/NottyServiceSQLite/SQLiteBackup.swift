import Foundation
import GRDB
import NottySQLite

#if canImport(Glibc)
import Glibc
#endif

/// What a store file holds, as `notty admin backup` and `restore` report it.
public struct StoreFileSummary: Sendable {
    public var users: Int
    public var notifications: Int
    public var bytes: Int64
    /// The store's change counter (`meta.seq`): every cursor it handed out is at most this.
    public var seq: Int64
}

/// The service's SQLite store copied while it serves (`notty admin backup`), and a copy put
/// back (`notty admin restore`), losing nothing a device holds.
public enum SQLiteBackup {
    public struct Failure: Error, CustomStringConvertible {
        public var description: String
        init(_ description: String) { self.description = description }
    }

    /// A consistent copy of the store at `path` in `destination`, taken in one read transaction
    /// (`VACUUM INTO`: a running service goes on writing), checked (`integrity_check`) before it
    /// gets its name. Never overwrites a file.
    public static func backup(from path: String, to destination: String) throws -> StoreFileSummary {
        guard FileManager.default.fileExists(atPath: path) else { throw Failure("there is no store at \(path) (give the service's --db)") }
        guard !FileManager.default.fileExists(atPath: destination) else {
            throw Failure("\(destination) exists: a backup never overwrites a file, choose another name")
        }
        let partial = destination + ".partial"
        try? FileManager.default.removeItem(atPath: partial)
        do {
            var configuration = Configuration()
            configuration.readonly = true
            let source = try DatabaseQueue(path: path, configuration: configuration)
            try source.inDatabase { db in try db.execute(sql: "VACUUM INTO ?", arguments: [partial]) }
            let summary = try check(partial)
            try syncFile(partial)
            guard rename(partial, destination) == 0 else {
                throw Failure("cannot name the backup \(destination): \(String(cString: strerror(errno)))")
            }
            return summary
        } catch {
            try? FileManager.default.removeItem(atPath: partial)
            throw error
        }
    }

    /// Checks that `file` is a whole store of this build or an older one: SQLite's
    /// `integrity_check`, the tables, the migrations. What it holds.
    public static func check(_ file: String) throws -> StoreFileSummary {
        var configuration = Configuration()
        configuration.readonly = true
        let queue: DatabaseQueue
        do {
            queue = try DatabaseQueue(path: file, configuration: configuration)
        } catch {
            throw Failure("\(file) cannot be opened as a store: \(error)")
        }
        return try queue.read { db in
            let integrity = (try? String.fetchAll(db, sql: "PRAGMA integrity_check")) ?? ["not a database"]
            guard integrity == ["ok"] else {
                throw Failure("\(file) is damaged (SQLite's integrity_check: \(integrity.prefix(3).joined(separator: "; ")))")
            }
            guard try db.tableExists("users"), try db.tableExists("notifications"), try db.tableExists("meta") else {
                throw Failure("\(file) is not a store of notty serve (no users, notifications or meta table)")
            }
            if try SQLiteStorage.migrator.hasBeenSuperseded(db) {
                throw Failure("\(file) was written by a newer notty-server: restore it with that one")
            }
            let bytes = ((try? FileManager.default.attributesOfItem(atPath: file))?[.size] as? NSNumber)?.int64Value ?? 0
            return StoreFileSummary(
                users: try Int.fetchOne(db, sql: "SELECT count(*) FROM users") ?? 0,
                notifications: try Int.fetchOne(db, sql: "SELECT count(*) FROM notifications WHERE deleted = 0") ?? 0,
                bytes: bytes,
                seq: try SQLiteStorage.seq(db))
        }
    }

    /// Puts the backup `file` in place of the store at `path`, refusing while a `notty serve`
    /// uses it (``StoreLock``). The store it replaces is kept beside it
    /// (`PATH.before-restore-TIME`). Every cursor handed out before (by the backup's store or the
    /// replaced one) is answered `410 Gone` by the restored store, so each device resyncs once
    /// (PROTOCOL.md §2.3) and sends what it had not sent; new changes are counted from above them all.
    /// Returns what was restored and where the replaced store went.
    public static func restore(_ file: String, into path: String, now: Date = Date()) throws -> (StoreFileSummary, aside: String?) {
        guard let lock = try StoreLock.exclusive(path) else {
            throw Failure("a notty serve uses \(path): stop it first (systemctl stop notty-server, or SIGTERM), then restore")
        }
        defer { withExtendedLifetime(lock) {} }
        let restored = try check(file)
        // The newest cursor a device may hold: the replaced store's counter (unknown when it
        // cannot be read: then a margin no store reaches).
        var replacedSeq: Int64 = 0
        if FileManager.default.fileExists(atPath: path) {
            replacedSeq = (try? check(path).seq) ?? restored.seq + 1_000_000_000_000
        }
        let gapEnd = max(restored.seq, replacedSeq)
        let staging = path + ".restoring"
        try? FileManager.default.removeItem(atPath: staging)
        do {
            try FileManager.default.copyItem(atPath: file, toPath: staging)
            let queue = try DatabaseQueue(path: staging)
            // Every cursor handed out so far is now below every user's purge mark: each device
            // resyncs once (410, PROTOCOL.md §2.3), keeping the changes it has not sent.
            try queue.write { db in try SQLiteStorage.startCursors(after: gapEnd, db) }
            try queue.close()
            try syncFile(staging)
        } catch {
            try? FileManager.default.removeItem(atPath: staging)
            throw Failure("cannot prepare \(staging): \(error)")
        }
        let aside: String?
        do {
            aside = try DatabaseFiles.setAside(path, label: "restore", now: now)
        } catch {
            throw Failure("\(error)")
        }
        guard rename(staging, path) == 0 else { throw Failure("cannot put the backup at \(path): \(String(cString: strerror(errno)))") }
        return (restored, aside)
    }

    private static func syncFile(_ path: String) throws {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { throw Failure("cannot open \(path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        guard fsync(fd) == 0 else { throw Failure("cannot write \(path) to disk: \(String(cString: strerror(errno)))") }
    }
}

/// Who uses a store file: every `notty serve` on it holds a shared lock of `PATH-lock` (flock)
/// for its whole run, `notty admin restore` an exclusive one. (A lock file beside the store,
/// not the store itself: closing any descriptor of the store would drop SQLite's own locks.)
public final class StoreLock: Sendable {
    private let descriptor: Int32

    private init(descriptor: Int32) { self.descriptor = descriptor }
    deinit { close(descriptor) }

    private static func open(_ path: String) throws -> Int32 {
        let directory = (path as NSString).deletingLastPathComponent
        try? FileManager.default.createDirectory(atPath: directory.isEmpty ? "." : directory, withIntermediateDirectories: true)
        let fd = Glibc.open(path + "-lock", O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw SQLiteBackup.Failure("cannot open \(path)-lock: \(String(cString: strerror(errno)))") }
        return fd
    }

    /// The lock of a service serving `path`; throws while a restore holds it.
    public static func serving(_ path: String) throws -> StoreLock {
        let fd = try open(path)
        guard flock(fd, LOCK_SH | LOCK_NB) == 0 else {
            close(fd)
            throw SQLiteBackup.Failure("\(path) is being restored (notty admin restore): start the service when it is done")
        }
        return StoreLock(descriptor: fd)
    }

    /// The lock of a restore of `path`; nil while a service holds it.
    public static func exclusive(_ path: String) throws -> StoreLock? {
        let fd = try open(path)
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            close(fd)
            return nil
        }
        return StoreLock(descriptor: fd)
    }
}
