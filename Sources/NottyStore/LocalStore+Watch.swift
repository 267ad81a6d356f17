import Foundation
import GRDB
import NottyPOSIX
import Synchronization

/// The store's revision and its one watcher (the center, `notty poll`): what tells every
/// process of a device that the store changed.
extension LocalStore {
    /// A number that changes whenever any process commits a change to the store (every write
    /// method bumps it in its transaction). Cheap enough to ask several times a second.
    @available(
        *, noasync, message: "blocks on SQLite: call it inside `await store.perform { … }` (a thread of its own), never on Swift's cooperative pool"
    )
    public func revision() throws -> Int64 {
        try database.read { db in try revision(db) }
    }

    func revision(_ db: Database) throws -> Int64 {
        try meta(db, "revision").flatMap(Int64.init) ?? 0
    }

    /// What the store's watchers (the center, `notty poll`) are told.
    public enum Change: Sendable, Equatable {
        /// Some process committed a change (``revision()`` moved).
        case committed
        /// Time alone changed a view: a snooze ended or a notification expired.
        case timed
    }

    /// The one watcher of the store for every process of a device: yields when
    /// ``revision()`` moved (another process, the sync engine, this one) or when a snooze
    /// ended or a notification expired. It waits on the store's directory (inotify: SQLite
    /// writes its `-wal` file, or the database file, in every commit) and on the next timed
    /// change, so it costs nothing while nothing happens; where the directory cannot be
    /// watched it looks every `interval`. Ends when the consumer stops.
    public func changes(fallbackEvery interval: Duration = .milliseconds(200)) -> AsyncStream<Change> {
        AsyncStream { continuation in
            let flag = StopFlag()
            let watch = DirectoryWatch(directory: (path as NSString).deletingLastPathComponent)
            continuation.onTermination = { _ in
                flag.stop()
                watch?.stop()
            }
            let slice = Int32(interval.milliseconds)
            startOffThePool(name: "notty-store-watch") { [self] in
                var revision = (try? self.revision()) ?? 0
                var nextTimed = try? nextTimedChange()
                // Looks left after a write was seen but its commit was not (yet).
                var settling = 0
                while !flag.isStopped {
                    var woken = false
                    if let watch {
                        // Until the next timed change, and at most a minute (a file system
                        // that lost an event is looked at again); shortly while settling.
                        var due = nextTimed.map { Int32(max(0, min(60_000, $0.timeIntervalSinceNow * 1000 + 1))) } ?? 60_000
                        if settling > 0 { due = min(due, 10 << (LocalStore.settleLooks - settling)) }
                        switch watch.wait(timeoutMilliseconds: due) {
                        case .stopped: return continuation.finish()
                        case .changed: woken = true
                        case .timedOut: break
                        }
                    } else {
                        Thread.sleep(forTimeInterval: Double(slice) / 1000)
                    }
                    if flag.isStopped { break }
                    let now = (try? self.revision()) ?? revision
                    let committed = now != revision
                    if committed {
                        revision = now
                        settling = 0
                        nextTimed = try? nextTimedChange()
                        continuation.yield(.committed)
                    } else if woken || settling > 0 {
                        // A commit writes the `-wal` file (the event) before it updates the
                        // shared index in `-shm` (no event: a mapped page) that makes it
                        // visible: on a loaded machine the revision read between the two is
                        // the old one, and nothing else would wake this thread. Look again
                        // after 10, 20, 40 … ms (2.5 s in all).
                        settling = woken ? LocalStore.settleLooks : settling - 1
                    }
                    if !committed, let due = nextTimed, due <= Date() {
                        nextTimed = try? nextTimedChange()
                        continuation.yield(.timed)
                    }
                }
                continuation.finish()
            }
        }
    }

    /// How many times the store's watcher looks again after a write it saw did not show.
    static let settleLooks = 8

    func bumpRevision(_ db: Database) throws {
        try db.execute(
            sql: """
                INSERT INTO meta (key, value) VALUES ('revision', '1')
                ON CONFLICT (key) DO UPDATE SET value = CAST(value AS INTEGER) + 1
                """)
    }
}

/// Tells a watcher's thread to end (set once, from any thread).
final class StopFlag: Sendable {
    private let stopped = Atomic<Bool>(false)
    func stop() { stopped.store(true, ordering: .releasing) }
    var isStopped: Bool { stopped.load(ordering: .acquiring) }
}
