import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Waits for a file in one directory to be written (inotify): how a device's processes learn
/// that another one committed to the store (SQLite writes its `-wal` file, or the database
/// file itself) without waking to look. ``stop()`` ends a wait from another thread.
public final class DirectoryWatch: Sendable {
    /// What ended a wait.
    public enum Wake: Sendable, Equatable { case changed, timedOut, stopped }

    private let descriptor: Int32
    private let wake: WakeUp
    private let stopped = Atomic<Bool>(false)

    /// A watch of `directory`; nil where inotify is not available (not Linux, no descriptors
    /// left, a file system without it): the caller looks from time to time instead.
    public init?(directory: String) {
        #if canImport(Glibc)
        let descriptor = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard descriptor >= 0 else { return nil }
        let mask = UInt32(IN_MODIFY | IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE | IN_DELETE)
        guard inotify_add_watch(descriptor, directory, mask) >= 0, let wake = WakeUp() else {
            close(descriptor)
            return nil
        }
        self.descriptor = descriptor
        self.wake = wake
        #else
        return nil
        #endif
    }

    deinit { close(descriptor) }

    /// Waits up to `timeoutMilliseconds` (-1: without end) for a file of the directory to be
    /// written, created, moved in or removed; the events that came are read (one wake for a
    /// burst of them).
    public func wait(timeoutMilliseconds: Int32) -> Wake {
        if stopped.load(ordering: .acquiring) { return .stopped }
        var entries = [
            pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0),
            pollfd(fd: wake.descriptor, events: Int16(POLLIN), revents: 0),
        ]
        while true {
            let ready = poll(&entries, 2, timeoutMilliseconds)
            if ready < 0, errno == EINTR { continue }
            if stopped.load(ordering: .acquiring) { return .stopped }
            guard ready > 0 else { return .timedOut }
            drain()
            return .changed
        }
    }

    /// Ends the current wait and every later one.
    public func stop() {
        stopped.store(true, ordering: .releasing)
        wake.signal()
    }

    private func drain() {
        var buffer = [UInt8](repeating: 0, count: 4096)
        while buffer.withUnsafeMutableBytes({ read(descriptor, $0.baseAddress, $0.count) }) > 0 {}
    }
}
