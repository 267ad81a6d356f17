import CNcursesw
import Foundation
import NottyPOSIX
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// MARK: - The one restore used by every exit path

/// True between `start()` and the first restore. Atomic so that signal handlers, `atexit`
/// and `stop()` end curses mode exactly once.
private let cursesActive = Atomic<Bool>(false)
private let atExitInstalled = Atomic<Bool>(false)

func markCursesActive() {
    cursesActive.store(true, ordering: .sequentiallyConsistent)
    // Every crash and termination handler of ``Signals`` restores the terminal first.
    Signals.setCleanup { restoreTerminalFromAnywhere() }
}

/// Ends curses mode (`endwin`) if it is on. Idempotent; called from `stop()`, `atexit` and
/// the signal handlers of ``Signals``.
func restoreTerminalFromAnywhere() {
    if cursesActive.exchange(false, ordering: .sequentiallyConsistent) {
        endwin()
    }
}

func installAtExitRestore() {
    guard !atExitInstalled.exchange(true, ordering: .sequentiallyConsistent) else { return }
    atexit { restoreTerminalFromAnywhere() }
}
