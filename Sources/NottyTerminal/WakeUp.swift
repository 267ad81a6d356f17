import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Ends a `Terminal.readKey` wait from another thread: the reading thread also waits on this
/// pipe, and ``signal()`` writes a byte to it. A program that learns of work from other threads
/// (a store change, the sync status) can then wait for keys as long as it likes instead of
/// waking every few milliseconds to look.
public final class WakeUp: Sendable {
    let readEnd: Int32
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
        (readEnd, writeEnd) = (ends[0], ends[1])
    }

    deinit {
        close(readEnd)
        close(writeEnd)
    }

    /// Ends the current or the next wait. Never blocks: when the pipe is full a wake-up is
    /// already pending.
    public func signal() {
        var byte: UInt8 = 1
        _ = write(writeEnd, &byte, 1)
    }

    /// Empties the pipe; answers whether a wake-up was pending.
    @discardableResult
    public func drain() -> Bool {
        var buffer = [UInt8](repeating: 0, count: 64)
        var any = false
        while true {
            let count = buffer.withUnsafeMutableBytes { read(readEnd, $0.baseAddress, $0.count) }
            if count > 0 { any = true; continue }
            if count < 0, errno == EINTR { continue }
            return any
        }
    }
}
