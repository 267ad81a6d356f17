import Foundation
import GRDB
import NottyService
import NottyStorageSupport
import Synchronization

/// The single writer of a SQLite store, with group commit.
///
/// Every write is a closure queued here. One thread takes everything queued, runs each
/// closure in its own savepoint (unless it writes with one statement and opts out) inside one
/// `BEGIN IMMEDIATE` transaction, commits once, and
/// only then reports each result. A burst of publishes therefore costs one fsync, not one
/// each, and since only this thread ever writes, SQLite never answers "database is locked".
final class SQLiteWriter: Sendable {
    private struct Job: Sendable {
        let run: @Sendable (Database, WriteContext) -> Void
        let finish: @Sendable (Error?) -> Void
    }

    private let pool: DatabasePool
    private let queue = GroupCommitQueue<Job>(maxBatch: 2000)
    private let committed: Mutex<Int64>
    private let dispatch = DispatchQueue(label: "notty.sqlite.writer", qos: .userInitiated)
    private let onCommit = HandlerSlot<@Sendable ([String: Int64]) -> Void>()

    init(pool: DatabasePool, committedSeq: Int64) {
        self.pool = pool
        self.committed = Mutex(committedSeq)
    }

    /// The last change-feed position committed (only the drainer moves it).
    var committedSeq: Int64 { committed.withLock { $0 } }

    func setChangeHandler(_ handler: @escaping @Sendable ([String: Int64]) -> Void) {
        onCommit.set(handler)
    }

    /// Runs `work` in the next batch transaction and returns its result once committed.
    ///
    /// `work` runs in a savepoint of its own, so that when it throws, what it wrote is undone
    /// and the rest of the batch commits. A job that writes with one statement, which SQLite
    /// applies whole or not at all, may pass `savepoint: false` and save the two statements.
    func write<T: Sendable>(savepoint: Bool = true, _ work: @escaping @Sendable (Database, WriteContext) throws -> T) async throws -> T {
        let outcome = JobOutcome<T>()
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, Error>) in
            let job = Job(
                run: { db, context in
                    outcome.set(Result { try savepoint ? db.resultInSavepoint { try work(db, context) } : work(db, context) })
                },
                finish: { commitError in
                    if let commitError { continuation.resume(throwing: commitError) } else { continuation.resume() }
                })
            if queue.append(job) { dispatch.async { self.drain() } }
        }
        return try outcome.result(missing: StorageError.unavailable("write did not run")).get()
    }

    private func drain() {
        while true {
            let jobs = queue.nextBatch()
            if jobs.isEmpty { return }
            let startSeq = committedSeq
            let context = WriteContext(seq: startSeq)
            var commitError: Error?
            do {
                try pool.writeWithoutTransaction { db in
                    try db.inTransaction(.immediate) {
                        for job in jobs { job.run(db, context) }
                        context.shareWithMembers(try SQLiteStorage.membersOfChangedTeams(db, context))
                        if context.seq != startSeq {
                            try db.execute(sql: "UPDATE meta SET value = ? WHERE key = 'seq'", arguments: [context.seq])
                        }
                        return .commit
                    }
                }
            } catch {
                commitError = StorageError.unavailable("SQLite: \(error)")
            }
            if commitError == nil {
                committed.withLock { $0 = context.seq }
            }
            // The change handler (the latest cursors, the doorbells) runs before any writer
            // returns: a caller that reads the latest cursor after its write must see it.
            if commitError == nil, !context.changedUsers.isEmpty, let handler = onCommit.handler {
                handler(context.changedUsers)
            }
            for job in jobs { job.finish(commitError) }
        }
    }
}

extension Database {
    /// `body`'s result, with what it wrote undone when it throws (the transaction goes on).
    func resultInSavepoint<T>(_ body: () throws -> T) throws -> T {
        var value: T?
        try inSavepoint {
            value = try body()
            return .commit
        }
        return value!
    }
}
