import Foundation
import Synchronization

/// The connected devices of every user, and the bell that tells them of a change.
///
/// A ring carries only the user's newest cursor. Each connection keeps just the newest
/// pending ring (older ones are implied by it), so a slow device never makes the service
/// buffer without bound, and it always learns of the latest state.
public final class DoorbellHub: Sendable {
    private struct Entry: Sendable {
        let continuation: AsyncStream<Int64>.Continuation
        /// Told of each ``tick()`` too (ntfy streams, which send keepalives).
        let ticks: Bool
    }

    private let connections = Mutex<[String: [UUID: Entry]]>([:])

    public init() {}

    /// What a ring carries for ``tick()`` instead of a cursor.
    public static let tickValue: Int64 = -1

    /// Registers a device of `userId`; the stream yields the user's newest cursor on every change
    /// (and, with `ticks`, ``tickValue`` on every ``tick()``: one clock for every stream's
    /// keepalive instead of a timer each).
    public func connect(userId: String, ticks: Bool = false) -> (id: UUID, rings: AsyncStream<Int64>) {
        let id = UUID()
        let (stream, continuation) = AsyncStream<Int64>.makeStream(bufferingPolicy: .bufferingNewest(1))
        connections.withLock { $0[userId, default: [:]][id] = Entry(continuation: continuation, ticks: ticks) }
        return (id, stream)
    }

    /// Wakes every connection that asked for ticks. (A tick may take the place of a ring not yet
    /// read, so a woken stream checks the feed as for a ring.)
    public func tick() {
        let targets = connections.withLock { all in all.values.flatMap { $0.values.filter(\.ticks).map(\.continuation) } }
        for continuation in targets { continuation.yield(Self.tickValue) }
    }

    public func disconnect(userId: String, id: UUID) {
        let continuation = connections.withLock { all -> AsyncStream<Int64>.Continuation? in
            let removed = all[userId]?.removeValue(forKey: id)
            if all[userId]?.isEmpty == true { all[userId] = nil }
            return removed?.continuation
        }
        continuation?.finish()
    }

    /// Tells every connected device of each user that their feed moved.
    public func ring(_ cursors: [String: Int64]) {
        let targets = connections.withLock { all in
            cursors.compactMap { userId, cursor in all[userId].map { ($0.values.map(\.continuation), cursor) } }
        }
        for (continuations, cursor) in targets {
            for continuation in continuations { continuation.yield(cursor) }
        }
    }

    /// The users with at least one connected device.
    public var connectedUserIds: [String] {
        connections.withLock { Array($0.keys) }
    }

    /// How many devices are connected now.
    public var connectionCount: Int {
        connections.withLock { $0.values.reduce(0) { $0 + $1.count } }
    }

    /// Ends every connection's stream (shutdown).
    public func closeAll() {
        let all = connections.withLock { all -> [AsyncStream<Int64>.Continuation] in
            defer { all = [:] }
            return all.values.flatMap { $0.values.map(\.continuation) }
        }
        for continuation in all { continuation.finish() }
    }
}
