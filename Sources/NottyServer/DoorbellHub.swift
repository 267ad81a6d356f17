import Foundation
import Synchronization

/// The connected devices of every user, and the bell that tells them of a change.
///
/// A ring carries only the user's newest cursor. Each connection keeps just the newest
/// pending ring (older ones are implied by it), so a slow device never makes the service
/// buffer without bound, and it always learns of the latest state.
public final class DoorbellHub: Sendable {
    private let connections = Mutex<[String: [UUID: AsyncStream<Int64>.Continuation]]>([:])

    public init() {}

    /// Registers a device of `userId`; the stream yields the user's newest cursor on every change.
    public func connect(userId: String) -> (id: UUID, rings: AsyncStream<Int64>) {
        let id = UUID()
        let (stream, continuation) = AsyncStream<Int64>.makeStream(bufferingPolicy: .bufferingNewest(1))
        connections.withLock { $0[userId, default: [:]][id] = continuation }
        return (id, stream)
    }

    public func disconnect(userId: String, id: UUID) {
        let continuation = connections.withLock { all -> AsyncStream<Int64>.Continuation? in
            let removed = all[userId]?.removeValue(forKey: id)
            if all[userId]?.isEmpty == true { all[userId] = nil }
            return removed
        }
        continuation?.finish()
    }

    /// Tells every connected device of each user that their feed moved.
    public func ring(_ cursors: [String: Int64]) {
        let targets = connections.withLock { all in
            cursors.compactMap { userId, cursor in all[userId].map { (Array($0.values), cursor) } }
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
            return all.values.flatMap(\.values)
        }
        for continuation in all { continuation.finish() }
    }
}
