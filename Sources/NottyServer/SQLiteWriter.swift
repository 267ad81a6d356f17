import Foundation
import GRDB
import Synchronization

/// The single writer of a SQLite store, with group commit.
///
/// Every write is a closure queued here. One thread takes everything queued, runs each
/// closure in its own savepoint (unless it writes with one statement and opts out) inside one
/// `BEGIN IMMEDIATE` transaction, commits once, and
/// only then reports each result. A burst of publishes therefore costs one fsync, not one
/// each, and since only this thread ever writes, SQLite never answers "database is locked".
final class SQLiteWriter: Sendable {
    private struct Job: @unchecked Sendable {
        let run: (Database, WriteContext) -> Void
        let finish: (Error?) -> Void
    }

    private struct State {
        var pending: [Job] = []
        var draining = false
        var committedSeq: Int64 = 0
    }

    private let pool: DatabasePool
    private let state: Mutex<State>
    private let queue = DispatchQueue(label: "notty.sqlite.writer", qos: .userInitiated)
    private let onCommit = HandlerSlot<@Sendable ([String: Int64]) -> Void>()
    static let maxBatch = 2000

    init(pool: DatabasePool, committedSeq: Int64) {
        self.pool = pool
        self.state = Mutex(State(committedSeq: committedSeq))
    }

    var committedSeq: Int64 { state.withLock { $0.committedSeq } }

    func setChangeHandler(_ handler: @escaping @Sendable ([String: Int64]) -> Void) {
        onCommit.set(handler)
    }

    /// Runs `work` in the next batch transaction and returns its result once committed.
    ///
    /// `work` runs in a savepoint of its own, so that when it throws, what it wrote is undone
    /// and the rest of the batch commits. A job that writes with one statement, which SQLite
    /// applies whole or not at all, may pass `savepoint: false` and save the two statements.
    func write<T: Sendable>(savepoint: Bool = true, _ work: @escaping @Sendable (Database, WriteContext) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, Error>) in
            let outcome = ResultBox<T>()
            let job = Job(
                run: { db, context in
                    do {
                        outcome.result = .success(try savepoint ? db.resultInSavepoint { try work(db, context) } : work(db, context))
                    } catch {
                        outcome.result = .failure(error)
                    }
                },
                finish: { commitError in
                    if let commitError {
                        continuation.resume(throwing: commitError)
                    } else {
                        continuation.resume(with: outcome.result ?? .failure(StorageError.unavailable("write did not run")))
                    }
                })
            let startDrain = state.withLock { state -> Bool in
                state.pending.append(job)
                if state.draining { return false }
                state.draining = true
                return true
            }
            if startDrain { queue.async { self.drain() } }
        }
    }

    private func drain() {
        while true {
            let (jobs, startSeq) = state.withLock { state -> ([Job], Int64) in
                if state.pending.isEmpty {
                    state.draining = false
                    return ([], state.committedSeq)
                }
                let count = min(state.pending.count, Self.maxBatch)
                let jobs = Array(state.pending.prefix(count))
                state.pending.removeFirst(count)
                return (jobs, state.committedSeq)
            }
            if jobs.isEmpty { return }
            let context = WriteContext(seq: startSeq)
            var commitError: Error?
            do {
                try pool.writeWithoutTransaction { db in
                    try db.inTransaction(.immediate) {
                        for job in jobs { job.run(db, context) }
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
                state.withLock { $0.committedSeq = context.seq }
            }
            for job in jobs { job.finish(commitError) }
            if commitError == nil, !context.changedUsers.isEmpty, let handler = onCommit.handler {
                handler(context.changedUsers)
            }
        }
    }
}

private final class ResultBox<T>: @unchecked Sendable {
    var result: Result<T, Error>?
}

/// Holds a callback set after start-up. (Not a `Mutex<closure?>`: reading a closure through
/// `withLock`'s `inout` re-wraps it in reabstraction thunks on every call, and the chain grows
/// without end.)
final class HandlerSlot<Handler>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: Handler?

    func set(_ handler: Handler) {
        lock.withLock { stored = handler }
    }

    var handler: Handler? {
        lock.lock()
        defer { lock.unlock() }
        return stored
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
