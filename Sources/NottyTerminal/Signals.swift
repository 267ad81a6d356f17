import CNcursesw
import Foundation
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
}

/// Ends curses mode (`endwin`) if it is on. Idempotent; called from `stop()`, `atexit` and
/// signal handlers.
func restoreTerminalFromAnywhere() {
    if cursesActive.exchange(false, ordering: .sequentiallyConsistent) {
        endwin()
    }
}

func installAtExitRestore() {
    guard !atExitInstalled.exchange(true, ordering: .sequentiallyConsistent) else { return }
    atexit { restoreTerminalFromAnywhere() }
}

// MARK: - Signal handlers

/// The actions that were in place before `installCrashHandlers()`, indexed by signal number;
/// written before each handler is installed, only read afterwards (from the handler).
nonisolated(unsafe) private let previousActions: UnsafeMutablePointer<sigaction> = {
    let actions = UnsafeMutablePointer<sigaction>.allocate(capacity: signalSlots)
    actions.initialize(repeating: sigaction(), count: signalSlots)
    return actions
}()
private let signalSlots = 65

/// Crash: restore the terminal, put back the previous action (Swift's backtracer, or the
/// default) and re-raise, so the crash report lands on a sane terminal.
private let crashHandler: @convention(c) (Int32) -> Void = { number in
    restoreTerminalFromAnywhere()
    if number >= 0, number < signalSlots {
        var previous = previousActions[Int(number)]
        sigaction(number, &previous, nil)
    } else {
        _ = signal(number, SIG_DFL)
    }
    raise(number)
}

/// Termination: restore the terminal, then die of the signal with its default action.
private let terminationHandler: @convention(c) (Int32) -> Void = { number in
    restoreTerminalFromAnywhere()
    _ = signal(number, SIG_DFL)
    raise(number)
}

private func install(_ handler: @convention(c) (Int32) -> Void, for signal: Int32, keepingIgnored: Bool) {
    guard signal >= 0, signal < signalSlots else { return }
    _ = previousActions  // initialise before any handler can read it
    var action = sigaction()
    action.sa_flags = Int32(SA_RESTART)
    #if canImport(Glibc)
    action.__sigaction_handler.sa_handler = handler
    #else
    action.__sigaction_u.__sa_handler = handler
    #endif
    sigemptyset(&action.sa_mask)
    var previous = sigaction()
    sigaction(signal, &action, &previous)
    if keepingIgnored, isIgnored(previous) {
        // Started with the signal ignored (nohup, background job): leave it so.
        sigaction(signal, &previous, nil)
        return
    }
    previousActions[Int(signal)] = previous
}

private func isIgnored(_ action: sigaction) -> Bool {
    #if canImport(Glibc)
    let handler = action.__sigaction_handler.sa_handler
    #else
    let handler = action.__sigaction_u.__sa_handler
    #endif
    guard let handler else { return false }
    return unsafeBitCast(handler, to: Int.self) == unsafeBitCast(SIG_IGN, to: Int.self)
        && action.sa_flags & Int32(SA_SIGINFO) == 0
}

extension Terminal {
    /// The signals `installCrashHandlers()` covers.
    public static let crashSignals: [Int32] = [SIGSEGV, SIGBUS, SIGILL, SIGABRT, SIGFPE, SIGTRAP]

    /// On SIGSEGV, SIGBUS, SIGILL, SIGABRT, SIGFPE and SIGTRAP (Swift traps): `endwin`, then the
    /// previous action (Swift's backtracer or the default) runs by re-raising. Call once, early.
    public static func installCrashHandlers() {
        for signal in crashSignals {
            install(crashHandler, for: signal, keepingIgnored: false)
        }
    }

    /// The signals a shell may handle itself for a clean quit, or hand to `installTerminationHandlers`.
    public static let terminationSignalNumbers: [Int32] = [SIGTERM, SIGINT, SIGHUP, SIGQUIT]

    /// The simple choice for SIGTERM, SIGINT, SIGHUP, SIGQUIT: restore the terminal, then die of
    /// the signal (`signal(sig, SIG_DFL); raise(sig)`), so the parent sees the usual exit status.
    /// A signal that was ignored at launch (e.g. SIGHUP under `nohup`) stays ignored.
    /// Do not combine with `terminationSignals()` for the same signals.
    public static func installTerminationHandlers(_ signals: [Int32] = terminationSignalNumbers) {
        for signal in signals {
            install(terminationHandler, for: signal, keepingIgnored: true)
        }
    }

    /// The clean-quit choice: the given signals no longer kill the process; each arrival is
    /// yielded here instead, for the shell to merge into its event loop, save what it must,
    /// call `stop()` and exit. Ending the stream (cancelling its consumer) puts back the
    /// default actions. One stream at a time (a new call replaces the previous stream).
    /// Do not combine with `installTerminationHandlers()` for the same signals.
    ///
    /// Implemented with a self-pipe (the handler only `write`s the signal number) read by one
    /// background thread: Dispatch signal sources do not see signals on Linux once they are
    /// set to SIG_IGN, and without it the default action would kill the process.
    public static func terminationSignals(_ signals: [Int32] = [SIGTERM, SIGINT, SIGHUP]) -> AsyncStream<Int32> {
        let (stream, continuation) = AsyncStream.makeStream(of: Int32.self, bufferingPolicy: .bufferingNewest(8))
        startSignalReader()
        signalContinuation.withLock { $0 = continuation }
        for number in signals {
            install(forwardingHandler, for: number, keepingIgnored: false)
        }
        continuation.onTermination = { _ in
            for number in signals {
                _ = signal(number, SIG_DFL)
            }
        }
        return stream
    }
}

// MARK: - Self-pipe for terminationSignals()

private let signalPipe: (read: Int32, write: Int32) = {
    var descriptors: [Int32] = [-1, -1]
    guard pipe(&descriptors) == 0 else { return (-1, -1) }
    for descriptor in descriptors {
        _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
    }
    // A full pipe must never block the handler.
    _ = fcntl(descriptors[1], F_SETFL, fcntl(descriptors[1], F_GETFL) | O_NONBLOCK)
    return (descriptors[0], descriptors[1])
}()
private let signalContinuation = Mutex<AsyncStream<Int32>.Continuation?>(nil)
private let signalReaderStarted = Atomic<Bool>(false)

private let forwardingHandler: @convention(c) (Int32) -> Void = { number in
    var byte = UInt8(truncatingIfNeeded: number)
    _ = write(signalPipe.write, &byte, 1)
}

private func startSignalReader() {
    _ = signalPipe
    guard !signalReaderStarted.exchange(true, ordering: .sequentiallyConsistent) else { return }
    let thread = Thread {
        var bytes = [UInt8](repeating: 0, count: 16)
        while true {
            let count = read(signalPipe.read, &bytes, bytes.count)
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { return }
            signalContinuation.withLock { continuation in
                for byte in bytes[0..<count] {
                    continuation?.yield(Int32(byte))
                }
            }
        }
    }
    thread.name = "notty-signals"
    thread.start()
}
