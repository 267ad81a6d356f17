import Foundation

/// Runs `body`, which blocks (SQLite, a child process, its pipes), on a thread of its own and
/// awaits its result.
///
/// Swift's cooperative pool has one thread per core: 2 here and in CI. Blocking work on one of
/// its threads holds up every task of the process (in the center, the loop's own work; in the
/// tests, every other test: with dozens starting together a fresh CI run stalled for a minute).
/// So nothing that blocks runs on the pool; it runs here.
public func offThePool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        startOffThePool { continuation.resume(with: Result { try body() }) }
    }
}

/// Starts `body`, which blocks, on a thread of its own, for work nobody awaits (counting a
/// search, catching the search index up).
public func startOffThePool(name: String = "notty-work", _ body: @escaping @Sendable () -> Void) {
    let thread = Thread(block: body)
    thread.name = name
    thread.stackSize = 1 << 20
    thread.start()
}

/// Runs `body`, short blocking or CPU-heavy work (a bcrypt hash, a `getaddrinfo`), on one of
/// Dispatch's threads, off Swift's cooperative pool, and awaits its result. Dispatch bounds its
/// threads, so a burst of them does not start a thread each as ``offThePool(_:)`` does (that
/// one is for work that may block a long time).
public func onDispatch<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        DispatchQueue.global().async { continuation.resume(returning: body()) }
    }
}
