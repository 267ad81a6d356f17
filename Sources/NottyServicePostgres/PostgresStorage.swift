import Foundation
import Logging
import NottyCore
import NottyService
import NottyStorageSupport
import PostgresNIO
import Synchronization

/// ``ServiceStorage`` on PostgreSQL through PostgresNIO's connection pool, for one or
/// several `notty serve` instances sharing one database.
///
/// - A user's change feed is in commit order on every instance: each write transaction first
///   takes the feed locks of the users it writes for (``FeedLock``), then reserves positions
///   from one sequence. Positions are global, so a cursor means the same on every instance.
/// - Every committed change is announced with `NOTIFY notty_changes` inside its transaction
///   (so only committed changes are announced). Each instance listens and rings its own
///   connected devices; after the listening connection is lost and regained, the service is
///   told to re-check every connected user (``setResyncHandler(_:)``), so no ring is lost.
/// - A call that cannot reach the database within ``timeout`` throws
///   ``StorageError/unavailable(_:)`` (the client's `503`); the pool reconnects on its own
///   once PostgreSQL is back.
public final class PostgresStorage: ServiceStorage {
    public let url: PostgresURL
    let client: PostgresClient
    let logger: Logger
    let tasks = Mutex<[Task<Void, Never>]>([])
    /// Whether every row has its search `words` (``startSearchIndexing()``).
    let searchIndexed = Atomic<Bool>(false)
    /// The search index's most common words and how often each is in a row (PostgreSQL's own
    /// statistics of `words`), and when they were read (``PostgresStorage/commonWords(_:)``).
    let commonWordsRead = Mutex<(words: [String: Double], at: ContinuousClock.Instant)?>(nil)
    let onChange = HandlerSlot<@Sendable ([String: Int64]) -> Void>()
    let onResync = HandlerSlot<@Sendable () -> Void>()
    let onCredentialsChange = HandlerSlot<@Sendable () -> Void>()
    /// Tells this instance's own announcements apart from other instances'.
    let instanceId = String(UUID().uuidString.prefix(8)).lowercased()
    /// How long a call may wait for the database before it is reported unavailable.
    let timeout: Duration
    /// Set for a second when a call times out: calls meanwhile are refused at once.
    let unavailableUntil = Mutex<ContinuousClock.Instant?>(nil)
    static let channel = "notty_changes"

    /// Connects (the pool connects lazily), migrates and starts listening for other instances' changes.
    public static func connect(url: PostgresURL, logger: Logger = Logger(label: "notty.postgres"), timeout: Duration = .seconds(5)) async throws
        -> PostgresStorage
    {
        let storage = PostgresStorage(url: url, logger: logger, timeout: timeout)
        do {
            try await storage.migrate()
        } catch {
            try? await storage.close()
            throw error
        }
        storage.startListening()
        storage.startSearchIndexing()
        return storage
    }

    init(url: PostgresURL, logger: Logger, timeout: Duration) {
        self.url = url
        self.logger = logger
        self.timeout = timeout
        var configuration = url.clientConfiguration
        configuration.options.maximumConnections = 32
        configuration.options.minimumConnections = 2
        configuration.options.connectTimeout = .seconds(3)
        configuration.options.keepAliveBehavior = .init(frequency: .seconds(15))
        // The pool reports every failed connection attempt; while PostgreSQL is away that is a
        // line each second, so only warnings and worse from it (notty's own lines say what matters).
        var poolLogger = logger
        poolLogger.logLevel = max(logger.logLevel, .warning)
        client = PostgresClient(configuration: configuration, backgroundLogger: poolLogger)
        let client = client
        tasks.withLock { $0.append(Task { await client.run() }) }
        startDraining()
    }

    func execute(_ query: PostgresQuery) async throws {
        try await run { connection in try await connection.exec(query, logger: self.logger) }
    }

    public func ping() async throws {
        try await execute("SELECT 1")
    }

    public func setChangeHandler(_ handler: @escaping @Sendable ([String: Int64]) -> Void) {
        onChange.set(handler)
    }

    public func setResyncHandler(_ handler: @escaping @Sendable () -> Void) {
        onResync.set(handler)
    }

    public func setCredentialsChangeHandler(_ handler: @escaping @Sendable () -> Void) {
        onCredentialsChange.set(handler)
    }

    /// Stops listening and closes the pool's connections, waiting at most ``closePatience`` for
    /// them: a pool that does not finish shutting down (PostgresNIO 1.33 can keep trying to
    /// connect) must not keep `notty serve` from exiting. What is left then is logged.
    public func close() async throws {
        let running = tasks.withLock { tasks -> [Task<Void, Never>] in
            defer { tasks = [] }
            return tasks
        }
        drainWakeups.continuation.finish()
        for task in running { task.cancel() }
        let ended =
            await Self.answer(within: Self.closePatience) { () -> Bool in
                for task in running { await task.value }
                return true
            } ?? false
        if !ended {
            logger.warning(
                "PostgreSQL connections still open \(Self.closePatience) after close; left to the process's end", metadata: ["url": "\(url)"])
        }
    }

    /// How long ``close()`` waits for the listener and the pool.
    static let closePatience = Duration.seconds(10)

    // MARK: - Running calls

    /// What `work` answers, or nil when `limit` passes first: the caller is answered then,
    /// and `work` is left to end by itself (a task group would wait for it). The timer ends
    /// with the answer (it slept out its whole limit after every call before).
    static func answer<T: Sendable>(within limit: Duration, _ work: @escaping @Sendable () async -> T) async -> T? {
        await withCheckedContinuation { (continuation: CheckedContinuation<T?, Never>) in
            let first = FirstAnswer(continuation)
            let timer = Task {
                try? await Task.sleep(for: limit)
                first.resume(nil)
            }
            Task {
                first.resume(await work())
                timer.cancel()
            }
        }
    }

    /// Runs `body` on a pooled connection; any failure to reach the database, or no answer
    /// within ``timeout``, becomes ``StorageError/unavailable(_:)``.
    func run<T: Sendable>(
        timeout: Duration? = nil, _ body: @escaping @Sendable (PostgresConnection) async throws -> T
    ) async throws -> T {
        do {
            return try await withTimeout(timeout ?? self.timeout, body)
        } catch {
            throw Self.storageError(error, url: url)
        }
    }

    /// `body` on a pooled connection, or ``StorageError/unavailable(_:)`` after `timeout`;
    /// other errors as thrown.
    ///
    /// The caller is answered at the deadline whatever `body` is doing: `body` runs in a task
    /// of its own, cancelled then and left to end by itself. (A task group would wait for it:
    /// a lease that waits for a connection while PostgreSQL is away, or a query on a
    /// connection whose server went away, held every caller, and the write queue behind them,
    /// past any timeout.)
    func withTimeout<T: Sendable>(
        _ timeout: Duration, _ body: @escaping @Sendable (PostgresConnection) async throws -> T
    ) async throws -> T {
        // Just after a call timed out, the next ones are refused at once rather than each
        // waiting its own timeout: a request that makes three calls is answered in one
        // timeout, not three (PostgreSQL away: 503 within 10 s).
        if let until = unavailableUntil.withLock({ $0 }), ContinuousClock.now < until {
            throw StorageError.unavailable("PostgreSQL at \(url) did not answer within \(timeout) a moment ago")
        }
        let client = client
        // A call its caller gave up on (told "unavailable: nothing was written, try again")
        // starts nothing once it has a connection, and a transaction of it rolls back instead
        // of committing (``transaction(timeout:_:)``): a client that tries again then writes
        // once, not twice (a publish made new again, escalated again).
        let work = Task {
            try await client.withConnection { connection in
                try Task.checkCancellation()
                return try await body(connection)
            }
        }
        let outcome = await Self.answer(within: timeout) { () -> Result<T, any Error> in
            do { return .success(try await work.value) } catch { return .failure(error) }
        }
        guard let outcome else {
            work.cancel()
            unavailableUntil.withLock { $0 = ContinuousClock.now + .seconds(1) }
            throw StorageError.unavailable("PostgreSQL at \(url) did not answer within \(timeout)")
        }
        return try outcome.get()
    }

    /// Any failure as the ``StorageError`` the service understands.
    static func storageError(_ error: any Error, url: PostgresURL) -> StorageError {
        switch error {
        case let error as StorageError:
            return error
        case let error as PSQLError:
            if let state = error.serverInfo?[.sqlState], state == "23505" {
                return StorageError.conflict(error.serverInfo?[.message] ?? "unique violation")
            }
            return StorageError.unavailable("PostgreSQL at \(url): \(describe(error))")
        default:
            return StorageError.unavailable("PostgreSQL at \(url): \(error)")
        }
    }

    static func describe(_ error: PSQLError) -> String {
        if let message = error.serverInfo?[.message] {
            return "\(message) (SQLSTATE \(error.serverInfo?[.sqlState] ?? "?"))"
        }
        return "\(error.code)"
    }

    /// Runs `body` in one transaction. A deadlock or serialization failure (which PostgreSQL
    /// rolls back whole) is retried a few times.
    func transaction<T: Sendable>(
        timeout: Duration? = nil, _ body: @escaping @Sendable (PostgresConnection) async throws -> T
    ) async throws -> T {
        var attempt = 0
        while true {
            do {
                return try await withTimeout(timeout ?? self.timeout) { connection in
                    try await connection.exec("BEGIN", logger: self.logger)
                    do {
                        let value = try await body(connection)
                        // Its caller was answered "unavailable" already: what it wrote must not stay.
                        try Task.checkCancellation()
                        try await connection.exec("COMMIT", logger: self.logger)
                        return value
                    } catch {
                        try? await connection.exec("ROLLBACK", logger: self.logger)
                        throw error
                    }
                }
            } catch let error as PSQLError where attempt < 3 && ["40P01", "40001"].contains(error.serverInfo?[.sqlState] ?? "") {
                attempt += 1
            } catch let refusal as ServiceError {
                // The service's own refusal from inside the transaction (rolled back): as thrown.
                throw refusal
            } catch {
                throw Self.storageError(error, url: url)
            }
        }
    }

    /// The group-commit queue of feed writes (see PostgresWrites.swift).
    let queue = GroupCommitQueue<FeedJob>(maxBatch: 500)
    /// Wakes the drainer, a task of this storage's own (``startDraining()``), when the queue had
    /// been idle; finished by ``close()``.
    let drainWakeups = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
}

/// A continuation resumed by whichever of several tasks answers first (the others are ignored).
final class FirstAnswer<Value: Sendable>: Sendable {
    private let continuation: Mutex<CheckedContinuation<Value, Never>?>

    init(_ continuation: CheckedContinuation<Value, Never>) { self.continuation = Mutex(continuation) }

    func resume(_ value: Value) {
        continuation.withLock { $0.take() }?.resume(returning: value)
    }
}
