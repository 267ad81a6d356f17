import Foundation
import GRDB
import GRDBSQLite
import Synchronization

/// Checkpoints a SQLite store's write-ahead log on a connection and a thread of its own, so
/// that no commit waits for one (the service's store and a device's).
///
/// Left to itself, SQLite checkpoints on the committing connection once the log holds 1,000
/// pages (`wal_autocheckpoint`): the commit that crosses the mark copies them into the
/// database file and syncs it before it returns. That is a few milliseconds on a publish or a
/// PATCH every 70 or so PATCHes (each writes about 15 pages: the row, its indexes, the feed
/// position), and it was the tail of a dismiss's answer; on a device, of applying a change.
/// Here the writer's WAL hook, which replaces the automatic checkpoint, only asks; a passive
/// checkpoint (the same kind SQLite runs itself) copies what no reader still needs, without
/// blocking the writer or readers.
/// Under writes that never pause these cannot finish, and SQLite starts the log over only
/// after a finished one: at four times the mark (`valve`) the committing writer checkpoints
/// itself, as before, so the log stays bounded.
/// Committed data is what a checkpoint copies, so durability is the same.
public final class WALCheckpointer: Sendable {
    /// The log's size, in pages, at which a checkpoint is asked for (SQLite's default).
    public static let pages: Int32 = 1000
    /// The log's size at which the writer checkpoints after all, in its commit.
    public static let valve: Int32 = 4 * pages

    private let path: String
    /// Its own connection, opened at the first checkpoint (a short-lived command never needs one).
    private let connection = Mutex<DatabaseQueue?>(nil)
    private let queue = DispatchQueue(label: "notty.sqlite.checkpoint", qos: .utility)
    private let asked = Atomic<Bool>(false)
    private let hook: HookContext
    private let runs = Atomic<Int>(0)
    /// Checkpoints run so far.
    public var runCount: Int { runs.load(ordering: .relaxed) }

    /// What the hook is given: a weak reference, so that a pool outliving its checkpointer
    /// only stops asking. Released by `uninstall`.
    private final class HookContext: @unchecked Sendable {
        weak var checkpointer: WALCheckpointer?  // set once, before the hook is installed
    }

    public init(path: String) {
        self.path = path
        hook = HookContext()
        hook.checkpointer = self
    }

    /// Puts the hook on the writer's connection (turning SQLite's own checkpoints off there).
    public func install(on db: Database) {
        sqlite3_wal_hook(
            db.sqliteConnection,
            { context, connection, _, pages in
                if pages >= WALCheckpointer.valve {
                    // The checkpoints beside the writer have fallen behind (they cannot finish
                    // while commits keep coming, and only a finished one lets SQLite start the log
                    // over): this commit checkpoints, as SQLite's own hook would have.
                    sqlite3_wal_checkpoint_v2(connection, nil, SQLITE_CHECKPOINT_PASSIVE, nil, nil)
                } else if pages >= WALCheckpointer.pages, let context {
                    Unmanaged<HookContext>.fromOpaque(context).takeUnretainedValue().checkpointer?.ask()
                }
                return SQLITE_OK
            }, Unmanaged.passRetained(hook).toOpaque())
    }

    /// Takes the hook off the writer's connection again (SQLite checkpoints by itself there).
    public func uninstall(from db: Database) {
        sqlite3_wal_autocheckpoint(db.sqliteConnection, WALCheckpointer.pages)
        Unmanaged.passUnretained(hook).release()
    }

    /// Asks for a checkpoint; one runs at a time, and asks meanwhile are one.
    func ask() {
        guard asked.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged else { return }
        queue.async { [self] in
            asked.store(false, ordering: .releasing)
            // A failure (the file gone, the disk full) is left to the next ask, as SQLite
            // leaves a failed automatic checkpoint.
            try? checkpointConnection().writeWithoutTransaction { db in _ = try db.checkpoint(.passive) }
            runs.add(1, ordering: .relaxed)
        }
    }

    /// Copies the whole log into the database and empties it (a `TRUNCATE` checkpoint, waiting
    /// for readers as a write would), after the asked-for checkpoints under way: after a bulk
    /// write, so that the next process to open the database alone does not read the whole log
    /// to rebuild its index (4,000 reads, 16 MB, after a first sync of 100,000). The emptied
    /// log keeps its first `reserve` bytes on disk, zeros, which SQLite reads as no log at all:
    /// opening the database writes the log's header there, so it needs no new disk space (a
    /// device's store can still be read on a full disk; a change needs more, and says so).
    /// Blocks; a failure is left to the next checkpoint, as in ``ask()``.
    public func emptyLog(reserve: Int = 4096) {
        queue.sync { [self] in
            let emptied = try? checkpointConnection().writeWithoutTransaction { db in try db.checkpoint(.truncate) }
            runs.add(1, ordering: .relaxed)
            guard emptied != nil else { return }
            // Allocating leaves what a writer may have written since as it is.
            let log = open(path + "-wal", O_WRONLY | O_CLOEXEC)
            guard log >= 0 else { return }
            _ = posix_fallocate(log, 0, off_t(reserve))
            close(log)
        }
    }

    private func checkpointConnection() throws -> DatabaseQueue {
        try connection.withLock { connection in
            if let connection { return connection }
            var config = Configuration()
            config.busyMode = .timeout(30)
            let opened = try DatabaseQueue(path: path, configuration: config)
            connection = opened
            return opened
        }
    }

    /// Returns once a checkpoint asked for has finished (tests, and closing).
    public func finished() async {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in queue.async { done.resume() } }
    }
}
