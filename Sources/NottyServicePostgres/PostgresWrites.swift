import Foundation
import Logging
import NottyCore
import NottyRecords
import NottyService
import NottyStorageSupport
import PostgresNIO
import Synchronization

/// Writes to users' change feeds: row locks in id order, positions from one sequence, the
/// notices of what committed, and the group commit that batches concurrent writes.
extension PostgresStorage {
    /// Takes the feed locks of `users` (``FeedLock``) and reserves `positions` change
    /// positions after them (``FeedStatements/LockAndReserve``).
    func lockFeeds(of users: [String], positions: Int, _ connection: PostgresConnection) async throws -> WriteContext {
        if positions == 0 {
            if !users.isEmpty { _ = try await connection.execute(FeedStatements.Lock(users: users), logger: logger) }
            return WriteContext(reserved: [])
        }
        var reserved: [Int64] = []
        let rows =
            users.isEmpty
            ? try await connection.execute(FeedStatements.Reserve(positions: Int32(positions)), logger: logger)
            : try await connection.execute(FeedStatements.LockAndReserve(users: users, positions: Int32(positions)), logger: logger)
        for try await position in rows { reserved.append(position) }
        return WriteContext(reserved: reserved.sorted())
    }

    /// `count` more positions for a transaction whose users are locked already.
    func reserveMore(_ count: Int, _ context: WriteContext, _ connection: PostgresConnection) async throws {
        var more: [Int64] = []
        for try await position in try await connection.execute(FeedStatements.Reserve(positions: Int32(count)), logger: logger) {
            more.append(position)
        }
        context.reserve(more: more.sorted())
    }

    /// Inside the transaction, before its commit: tells the other instances what moved, with
    /// one statement however many payloads.
    func announce(_ context: WriteContext, _ connection: PostgresConnection) async throws {
        try await shareWithMembers(context, connection)
        let payloads = Self.announcements(context.changedUsers, from: instanceId)
        guard !payloads.isEmpty else { return }
        _ = try await connection.execute(FeedStatements.Announce(channel: Self.channel, payloads: payloads), logger: logger)
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

    /// A device's mutations queued for a batch, and where their results go.
    struct BatchedMutations: Sendable {
        let list: [Mutation]
        let now: Date
        let complete: @Sendable (Result<[MutationResult], any Error>) -> Void
    }

    /// A queued write of one user's feed.
    struct FeedJob: Sendable {
        let user: String
        let positions: Int
        /// New notifications the job publishes, each to be inserted unless the app already has
        /// an active one with its id: the batch inserts those of all its jobs with one statement.
        let fresh: [StoredNotification]
        /// A device's mutations: applied with those of the batch's other such jobs, by a fixed
        /// number of statements, when the batch runs together.
        var mutations: BatchedMutations? = nil
        /// Runs the write (given the rows of `fresh` the batch statement inserted, id → position)
        /// and keeps its outcome; in its own savepoint unless that statement did all of it.
        let run: @Sendable (PostgresConnection, WriteContext, [String: Int64]) async -> Void
        /// Called once the batch committed (`nil`) or failed.
        let finish: @Sendable ((any Error)?) -> Void
        /// For a job that only publishes `fresh`: keeps its outcome once every row of `fresh`
        /// was inserted, with no statement of its own. A batch of such jobs alone is written
        /// whole by one statement (``FeedStatements/PublishTogether``).
        var written: (@Sendable () -> Void)? = nil
    }

    /// Writes of users' feeds are queued and run in batches: one transaction locks every user
    /// of the batch once and reserves its positions (one statement), inserts the new
    /// notifications of all its publishes (one statement), applies the mutations of all its
    /// devices' changes (four statements), runs what is left of each write in its own savepoint
    /// (a failing one is rolled back alone), announces (one statement), and commits once. A
    /// batch of new publishes and state changes is nine round trips whatever its size.
    ///
    /// `written`, for a write that publishes `fresh` (one position each) and nothing else: its
    /// answer when every row of `fresh` was inserted; `body` then does not run.
    func groupedFeedWrite<T: Sendable>(
        user: String, positions: Int, fresh: [StoredNotification] = [], written: (@Sendable () -> T)? = nil,
        _ body: @escaping @Sendable (PostgresConnection, WriteContext, [String: Int64]) async throws -> T
    ) async throws -> T {
        let outcome = JobOutcome<T>()
        let logger = logger
        let freshIds = Set(fresh.map(\.notification.id))
        let answer: (@Sendable () -> Void)? = if let written { { outcome.set(.success(written())) } } else { nil }
        try await submit { finish in
            FeedJob(
                user: user, positions: positions, fresh: fresh,
                run: { connection, context, inserted in
                    if !freshIds.isEmpty && freshIds.isSubset(of: inserted.keys) {
                        // Written already: `written` (else `body`) only answers.
                        if let answer { return answer() }
                        do { outcome.set(.success(try await body(connection, context, inserted))) } catch { outcome.set(.failure(error)) }
                        return
                    }
                    do {
                        try await connection.exec("SAVEPOINT feed_write", logger: logger)
                        let value = try await body(connection, context, inserted)
                        try await connection.exec("RELEASE SAVEPOINT feed_write", logger: logger)
                        outcome.set(.success(value))
                    } catch {
                        // If even this fails the connection is gone, and so is the whole batch.
                        try? await connection.exec("ROLLBACK TO SAVEPOINT feed_write", logger: logger)
                        // Nothing of a failed job stays: not the rows the batch statement wrote
                        // for it either (unless a later write of the batch has moved them on).
                        let written = inserted.filter { freshIds.contains($0.key) }
                        if !written.isEmpty {
                            try? await connection.exec(
                                "DELETE FROM notifications WHERE id = ANY(\(Array(written.keys))) AND seq = ANY(\(Array(written.values)))",
                                logger: logger)
                        }
                        outcome.set(.failure(error))
                    }
                },
                finish: finish,
                written: answer)
        }
        return try outcome.result(missing: StorageError.unavailable("a write did not run"))
            .mapError { Self.storageError($0, url: url) }.get()
    }

    /// A device's mutations of `user`'s notifications, as a queued write: with the other such
    /// writes of its batch when the batch runs together, else alone in its savepoint.
    func groupedMutations(user: String, mutations: [Mutation], now: Date) async throws -> [MutationResult] {
        let outcome = JobOutcome<[MutationResult]>()
        let logger = logger
        let work = BatchedMutations(list: mutations, now: now) { outcome.set($0) }
        try await submit { finish in
            FeedJob(
                user: user, positions: mutations.count, fresh: [], mutations: work,
                run: { connection, context, _ in
                    do {
                        try await connection.exec("SAVEPOINT feed_write", logger: logger)
                        try await self.applyMutations([(user, work)], context, connection)
                        try await connection.exec("RELEASE SAVEPOINT feed_write", logger: logger)
                    } catch {
                        try? await connection.exec("ROLLBACK TO SAVEPOINT feed_write", logger: logger)
                        outcome.set(.failure(error))
                    }
                },
                finish: finish)
        }
        return try outcome.result(missing: StorageError.unavailable("a write did not run"))
            .mapError { Self.storageError($0, url: url) }.get()
    }

    /// Queues the job `make` builds around its `finish` and waits until its batch committed
    /// (or failed: then this throws).
    private func submit(_ make: (@escaping @Sendable ((any Error)?) -> Void) -> FeedJob) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let job = make { error in
                if let error { continuation.resume(throwing: error) } else { continuation.resume() }
            }
            guard queue.append(job) else { return }  // the drainer is at work: it takes this job too
            // Closed: no drainer any more. What is queued fails now rather than waiting for ever.
            if case .terminated = drainWakeups.continuation.yield() { failQueued() }
        }
    }

    /// The drainer: a task of the storage's own (ended by ``close()``) that writes the queue's
    /// batches each time an append finds it idle. Ended, it fails what is still queued.
    func startDraining() {
        let wakeups = drainWakeups.stream
        let task = Task { [weak self] in
            for await _ in wakeups {
                guard let storage = self else { return }
                await storage.drain()
            }
            self?.failQueued()
        }
        tasks.withLock { $0.append(task) }
    }

    /// Fails every queued write: the storage is closed.
    private func failQueued() {
        while case let jobs = queue.nextBatch(), !jobs.isEmpty {
            finish(jobs, changed: [:], failure: StorageError.unavailable("the storage is closed"))
        }
    }

    /// A write of one user's feed that has no new notifications to insert.
    func groupedFeedWrite<T: Sendable>(
        user: String, positions: Int, _ body: @escaping @Sendable (PostgresConnection, WriteContext) async throws -> T
    ) async throws -> T {
        try await groupedFeedWrite(user: user, positions: positions, fresh: []) { connection, context, _ in try await body(connection, context) }
    }

    func drain() async {
        while true {
            var jobs = queue.nextBatch()
            if jobs.isEmpty { return }
            do {
                if let together = try await publishTogether(jobs) {
                    finish(together.written, changed: together.cursors, failure: nil)
                    jobs = together.rest
                }
                if !jobs.isEmpty { finish(jobs, changed: try await writeBatch(jobs), failure: nil) }
            } catch {
                finish(jobs, changed: [:], failure: error)
                // A batch that timed out or lost its connection may have committed all the
                // same (announced to the other instances, not to this one): this instance
                // re-checks its connected users, as after losing its listening connection.
                onResync.handler?()
            }
        }
    }

    /// Tells this instance what `jobs` changed, then their callers how they ended. (Before any
    /// writer returns: a caller that reads the latest cursor after its write must see it, as
    /// with SQLiteWriter.)
    private func finish(_ jobs: [FeedJob], changed: [String: Int64], failure: (any Error)?) {
        if !changed.isEmpty { onChange.handler?(changed) }
        for job in jobs { job.finish(failure) }
    }

    /// What ``publishTogether(_:)`` wrote: each user's new cursor, the jobs it wrote whole
    /// (answered already), and the rest (re-publishes), of which it wrote nothing.
    struct PublishedTogether {
        let cursors: [String: Int64]
        let written: [FeedJob]
        let rest: [FeedJob]
    }

    /// A batch of single new notifications (a publish each, the usual load) is written by one
    /// statement (``FeedStatements/PublishTogether``), rather than by a transaction of five
    /// round trips; nil when the batch has other writes, or when that statement failed (a row
    /// PostgreSQL refuses): then the batch is written the usual way. A publish whose app has an
    /// active notification with its id is not written, and comes back among the `rest`.
    private func publishTogether(_ jobs: [FeedJob]) async throws -> PublishedTogether? {
        guard jobs.allSatisfy({ $0.written != nil && $0.mutations == nil && $0.fresh.count == 1 && $0.positions == 1 }) else { return nil }
        var rows = ColumnArrays()
        for job in jobs { rows.append(NotificationColumns(job.fresh[0])) }
        let statement = FeedStatements.PublishTogether(
            rows: rows, users: Array(Set(jobs.map(\.user))), channel: Self.channel, instance: instanceId)
        let inserted: [(id: String, user: String, seq: Int64)]
        do {
            inserted = try await withTimeout(timeout) { connection in
                var inserted: [(id: String, user: String, seq: Int64)] = []
                for try await row in try await connection.execute(statement, logger: self.logger) { inserted.append(row) }
                return inserted
            }
        } catch let error as PSQLError where error.serverInfo != nil {
            return nil
        } catch {
            throw Self.storageError(error, url: url)
        }
        var cursors: [String: Int64] = [:]
        for row in inserted { cursors[row.user] = max(cursors[row.user] ?? 0, row.seq) }
        let ids = Set(inserted.map(\.id))
        let (written, rest) = jobs.reduce(into: ([FeedJob](), [FeedJob]())) { split, job in
            if ids.contains(job.fresh[0].notification.id) { split.0.append(job) } else { split.1.append(job) }
        }
        for job in written { job.written?() }
        return PublishedTogether(cursors: cursors, written: written, rest: rest)
    }

    /// `jobs` in one transaction: the new rows of their publishes by one statement and their
    /// mutations by four; if one of those fails, once more with each job on its own, so that a
    /// bad row fails only its own job.
    private func writeBatch(_ jobs: [FeedJob]) async throws -> [String: Int64] {
        let togetherFailed = Mutex(false)
        do {
            return try await transaction { connection in
                try await self.writeBatch(jobs, together: true, togetherFailed: togetherFailed, connection)
            }
        } catch  where togetherFailed.withLock({ $0 }) {
            // PostgreSQL rolled the transaction back.
            return try await transaction { connection in
                try await self.writeBatch(jobs, together: false, togetherFailed: togetherFailed, connection)
            }
        }
    }

    /// One batch in its transaction; `together`: the new rows of its publishes in one statement
    /// and its mutations in four, else each job in its own savepoint.
    private func writeBatch(
        _ jobs: [FeedJob], together: Bool, togetherFailed: borrowing Mutex<Bool>, _ connection: PostgresConnection
    ) async throws -> [String: Int64] {
        let context = try await lockFeeds(of: Array(Set(jobs.map(\.user))), positions: jobs.reduce(0) { $0 + $1.positions }, connection)
        var inserted: [String: Int64] = [:]
        if together {
            do {
                inserted = try await insertFresh(jobs.flatMap(\.fresh), context, connection)
                try await applyMutations(jobs.compactMap { job in job.mutations.map { (job.user, $0) } }, context, connection)
            } catch {
                togetherFailed.withLock { $0 = true }
                throw error
            }
        }
        for job in jobs where !(together && job.mutations != nil) { await job.run(connection, context, inserted) }
        try await announce(context, connection)
        return context.changedUsers
    }

    /// Inserts `rows` (each at the next position) unless the app already has an active
    /// notification with the same id; the rows inserted, id → position.
    private func insertFresh(_ rows: [StoredNotification], _ context: WriteContext, _ connection: PostgresConnection) async throws -> [String: Int64]
    {
        guard !rows.isEmpty else { return [:] }
        var columns = ColumnArrays()
        for var row in rows {
            row.seq = context.nextSeq(for: row.userId)
            columns.append(NotificationColumns(row))
        }
        var inserted: [String: Int64] = [:]
        for try await (id, seq) in try await connection.execute(FeedStatements.InsertFresh(rows: columns), logger: logger) {
            inserted[id] = seq
        }
        return inserted
    }
}
