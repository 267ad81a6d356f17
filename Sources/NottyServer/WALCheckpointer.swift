import Foundation
import GRDB
import GRDBSQLite
import Synchronization

/// Checkpoints a SQLite store's write-ahead log on a connection and a thread of its own, so
/// that no commit waits for one.
///
/// Left to itself, SQLite checkpoints on the committing connection once the log holds 1,000
/// pages (`wal_autocheckpoint`): the commit that crosses the mark copies them into the
/// database file and syncs it before it returns. That is a few milliseconds on a publish or a
/// PATCH every 70 or so PATCHes (each writes about 15 pages: the row, its indexes, the feed
/// position), and it was the tail of a dismiss's answer. Here the writer's WAL hook, which
/// replaces the automatic checkpoint, only asks; a passive checkpoint (the same kind SQLite
/// runs itself) copies what no reader still needs, without blocking the writer or readers.
/// Committed data is what a checkpoint copies, so durability is the same.
final class WALCheckpointer: Sendable {
    /// The log's size, in pages, at which a checkpoint is asked for (SQLite's default).
    static let pages: Int32 = 1000

    private let connection: DatabaseQueue
    private let queue = DispatchQueue(label: "notty.sqlite.checkpoint", qos: .utility)
    private let asked = Atomic<Bool>(false)
    private let hook: HookContext
    /// Checkpoints run so far (tests).
    let runs = Atomic<Int>(0)

    /// What the hook is given: a weak reference, so that a pool outliving its checkpointer
    /// only stops asking. Released by `uninstall`.
    private final class HookContext: @unchecked Sendable {
        weak var checkpointer: WALCheckpointer?  // set once, before the hook is installed
    }

    init(path: String) throws {
        var config = Configuration()
        config.busyMode = .timeout(30)
        connection = try DatabaseQueue(path: path, configuration: config)
        hook = HookContext()
        hook.checkpointer = self
    }

    /// Puts the hook on the writer's connection (turning SQLite's own checkpoints off there).
    func install(on db: Database) {
        sqlite3_wal_hook(db.sqliteConnection, { context, _, _, pages in
            if pages >= WALCheckpointer.pages, let context {
                Unmanaged<HookContext>.fromOpaque(context).takeUnretainedValue().checkpointer?.ask()
            }
            return SQLITE_OK
        }, Unmanaged.passRetained(hook).toOpaque())
    }

    /// Takes the hook off the writer's connection again (SQLite checkpoints by itself there).
    func uninstall(from db: Database) {
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
            try? connection.writeWithoutTransaction { db in
                // Under steady writes a passive checkpoint never catches up with the log's end,
                // and SQLite starts the log over only after one has: past three times the mark,
                // a restarting checkpoint waits for a gap between the writer's transactions
                // (holding the next one back while it copies, as SQLite's own checkpoint does),
                // so that the log stays bounded.
                if try db.checkpoint(.passive).walFrameCount >= 3 * Int(WALCheckpointer.pages) {
                    try db.checkpoint(.restart)
                }
            }
            runs.add(1, ordering: .relaxed)
        }
    }

    /// Returns once a checkpoint asked for has finished (tests, and closing).
    func finished() async {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in queue.async { done.resume() } }
    }
}
