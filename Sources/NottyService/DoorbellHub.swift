import Foundation
import Synchronization

/// What the hub tells one connected device: a ring (the user's newest cursor, or
/// ``DoorbellHub/tickValue``) and, when the service stops, a hang-up. Called from any thread; a
/// listener hands the call to whatever owns the connection (an event loop, a stream).
public protocol DoorbellListener: Sendable {
    func ring(_ value: Int64)
    func hangUp()
}

/// The connected devices of every user, and the bell that tells them of a change.
///
/// A ring carries only the user's newest cursor: a listener may keep just the newest one not
/// yet sent (older ones are implied by it), so a slow device never makes the service buffer
/// without bound, and it always learns of the latest state.
public final class DoorbellHub: Sendable {
    private struct Entry: Sendable {
        let listener: any DoorbellListener
        /// Told of each ``tick()`` too (ntfy streams, which send keepalives).
        let ticks: Bool
        /// The token it was opened with, when it was one (a doorbell's): what revokes it.
        let credential: StreamCredential?
    }

    /// The token a connection was opened with (PROTOCOL.md §15: revoked, expired or disabled, its
    /// connections are closed within a second).
    public struct StreamCredential: Sendable, Hashable {
        /// The token's hash, as stored.
        public var tokenHash: String
        public var expires: Date
        public init(tokenHash: String, expires: Date) {
            self.tokenHash = tokenHash
            self.expires = expires
        }
    }

    private let connections = Mutex<[String: [UUID: Entry]]>([:])

    public init() {}

    /// What a ring carries for ``tick()`` instead of a cursor.
    public static let tickValue: Int64 = -1

    /// Registers a device of `userId`: `listener` hears the user's newest cursor on every change
    /// (and, with `ticks`, ``tickValue`` on every ``tick()``: one clock for every stream's
    /// keepalive instead of a timer each) until ``disconnect(userId:id:)``.
    public func connect(userId: String, ticks: Bool = false, credential: StreamCredential? = nil, listener: any DoorbellListener) -> UUID {
        let id = UUID()
        connections.withLock { $0[userId, default: [:]][id] = Entry(listener: listener, ticks: ticks, credential: credential) }
        return id
    }

    /// The tokens open connections were made with, each once.
    public var openCredentials: Set<StreamCredential> {
        connections.withLock { all in Set(all.values.flatMap { $0.values.compactMap(\.credential) }) }
    }

    /// Hangs up on every connection opened with a credential `ended` says is over (revoked,
    /// expired, its user disabled), and forgets them; how many.
    @discardableResult
    public func hangUp(where ended: (StreamCredential) -> Bool) -> Int {
        let gone = connections.withLock { all -> [any DoorbellListener] in
            var gone: [any DoorbellListener] = []
            for (userId, entries) in all {
                for (id, entry) in entries {
                    guard let credential = entry.credential, ended(credential) else { continue }
                    gone.append(entry.listener)
                    all[userId]?.removeValue(forKey: id)
                }
                if all[userId]?.isEmpty == true { all[userId] = nil }
            }
            return gone
        }
        for listener in gone { listener.hangUp() }
        return gone.count
    }

    /// Registers a device of `userId` whose task reads the rings as a stream (which keeps only
    /// the newest ring not yet read, and ends when the service stops or the device disconnects).
    public func connect(userId: String, ticks: Bool = false) -> (id: UUID, rings: AsyncStream<Int64>) {
        let (stream, continuation) = AsyncStream<Int64>.makeStream(bufferingPolicy: .bufferingNewest(1))
        return (connect(userId: userId, ticks: ticks, listener: StreamListener(continuation: continuation)), stream)
    }

    /// Wakes every connection that asked for ticks. (A tick may take the place of a ring not yet
    /// read, so a woken stream checks the feed as for a ring.)
    public func tick() {
        let targets = connections.withLock { all in all.values.flatMap { $0.values.filter(\.ticks).map(\.listener) } }
        for listener in targets { listener.ring(Self.tickValue) }
    }

    public func disconnect(userId: String, id: UUID) {
        let listener = connections.withLock { all -> (any DoorbellListener)? in
            let removed = all[userId]?.removeValue(forKey: id)
            if all[userId]?.isEmpty == true { all[userId] = nil }
            return removed?.listener
        }
        (listener as? StreamListener)?.continuation.finish()
    }

    /// Tells every connected device of each user that their feed moved.
    public func ring(_ cursors: [String: Int64]) {
        let targets = connections.withLock { all in
            cursors.compactMap { userId, cursor in all[userId].map { ($0.values.map(\.listener), cursor) } }
        }
        for (listeners, cursor) in targets {
            for listener in listeners { listener.ring(cursor) }
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

    /// Hangs up on every connection (shutdown).
    public func closeAll() {
        let all = connections.withLock { all -> [any DoorbellListener] in
            defer { all = [:] }
            return all.values.flatMap { $0.values.map(\.listener) }
        }
        for listener in all { listener.hangUp() }
    }
}

/// A connection read by a task as an `AsyncStream` of rings.
private struct StreamListener: DoorbellListener {
    let continuation: AsyncStream<Int64>.Continuation
    func ring(_ value: Int64) { continuation.yield(value) }
    func hangUp() { continuation.finish() }
}
