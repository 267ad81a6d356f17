import Foundation
import Logging
import NottyCore
import PostgresNIO
import Synchronization

/// Writes to users' change feeds: row locks in id order, positions from one sequence, the
/// notices of what committed, and the group commit that batches concurrent writes.
extension PostgresStorage {
    func lockFeeds(of users: [String], positions: Int, _ connection: PostgresConnection) async throws -> WriteContext {
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
    func announce(_ context: WriteContext, _ connection: PostgresConnection) async throws {
        for payload in Self.announcements(context.changedUsers, from: instanceId) {
            try await connection.exec("SELECT pg_notify(\(Self.channel), \(payload))", logger: logger)
        }
    }

    /// A write of `users`' feeds in a transaction of its own: locks them, reserves
    /// `positions`, runs `body`, announces the change and, once committed, tells this instance.
    func feedWrite<T: Sendable>(
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
    struct FeedJob: Sendable {
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
    func groupedFeedWrite<T: Sendable>(
        user: String, positions: Int, _ body: @escaping @Sendable (PostgresConnection, WriteContext) async throws -> T
    ) async throws -> T {
        let outcome = JobOutcome<T>()
        let logger = logger
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let job = FeedJob(
                user: user, positions: positions,
                run: { connection, context in
                    do {
                        try await connection.exec("SAVEPOINT feed_write", logger: logger)
                        let value = try await body(connection, context)
                        try await connection.exec("RELEASE SAVEPOINT feed_write", logger: logger)
                        outcome.set(.success(value))
                    } catch {
                        // If even this fails the connection is gone, and so is the whole batch.
                        try? await connection.exec("ROLLBACK TO SAVEPOINT feed_write", logger: logger)
                        outcome.set(.failure(error))
                    }
                },
                finish: { error in
                    if let error { continuation.resume(throwing: error) } else { continuation.resume() }
                })
            if queue.append(job) { Task { await self.drain() } }
        }
        return try outcome.result(missing: StorageError.unavailable("a write did not run"))
            .mapError { Self.storageError($0, url: url) }.get()
    }

    func drain() async {
        while true {
            let jobs = queue.nextBatch()
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
}
