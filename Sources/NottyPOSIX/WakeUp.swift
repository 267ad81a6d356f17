import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The one self-pipe of notty: a thread that waits in poll(2) on ``descriptor`` (beside a tty,
/// a socket) is woken from another thread, or from a signal handler, by ``signal(_:)``, which
/// writes a byte. `Terminal.readKey` waits on one, so the center learns of a store change or
/// the sync status without waking every few milliseconds to look; the desktop's bus thread
/// on another; the termination-signal stream (``Signals``) reads signal numbers from a third.
public final class WakeUp: Sendable {
    /// The end to poll for reading.
    public let descriptor: Int32
    private let writeEnd: Int32

    /// A new pipe, both ends non-blocking and close-on-exec; nil when none can be made (out of
    /// descriptors): the caller then waits in short slices as before.
    public init?() {
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else { return nil }
        for end in ends {
            _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK)
            _ = fcntl(end, F_SETFD, FD_CLOEXEC)
        }
        (descriptor, writeEnd) = (ends[0], ends[1])
    }

    deinit {
        close(descriptor)
        close(writeEnd)
    }

    /// Ends the current or the next wait. Never blocks: when the pipe is full a wake-up is
    /// already pending. Async-signal-safe (one write(2)): `byte` may carry a signal's number.
    public func signal(_ byte: UInt8 = 1) {
        var byte = byte
        _ = write(writeEnd, &byte, 1)
    }

    /// Waits up to `timeoutMilliseconds` (-1: forever) for a wake-up; answers whether one came
    /// (it stays pending: ``drain()`` or ``take()`` reads it).
    public func wait(timeoutMilliseconds: Int32 = -1) -> Bool {
        var entry = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        while true {
            let ready = poll(&entry, 1, timeoutMilliseconds)
            if ready < 0, errno == EINTR { continue }
            return ready > 0
        }
    }

    /// The bytes pending, in order (empty when none).
    public func take() -> [UInt8] {
        var taken: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 64)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count > 0 { taken += buffer[0..<count]; continue }
            if count < 0, errno == EINTR { continue }
            return taken
        }
    }

    /// Empties the pipe; answers whether a wake-up was pending.
    @discardableResult
    public func drain() -> Bool {
        !take().isEmpty
    }
}
