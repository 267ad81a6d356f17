import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What notty does with signals: crashes and terminations that run one clean-up first (the
/// terminal's restore), or terminations turned into a stream for a clean quit.
public enum Signals {
    /// The signals ``installCrashHandlers()`` covers.
    public static let crashSignals: [Int32] = [SIGSEGV, SIGBUS, SIGILL, SIGABRT, SIGFPE, SIGTRAP]
    /// The signals a program may handle itself for a clean quit, or hand to ``installTerminationHandlers(_:)``.
    public static let terminationSignalNumbers: [Int32] = [SIGTERM, SIGINT, SIGHUP, SIGQUIT]

    /// Runs first in every crash and termination handler: must be async-signal-safe and
    /// idempotent (the terminal's `endwin` once). Set before a handler can run it.
    public static func setCleanup(_ cleanup: @escaping @convention(c) () -> Void) {
        cleanupSlot.store(unsafeBitCast(cleanup, to: Int.self), ordering: .sequentiallyConsistent)
    }

    /// On SIGSEGV, SIGBUS, SIGILL, SIGABRT, SIGFPE and SIGTRAP (Swift traps): the clean-up, then
    /// the previous action (Swift's backtracer or the default) runs by re-raising, so the crash
    /// report lands on a sane terminal. Call once, early.
    public static func installCrashHandlers() {
        for signal in crashSignals {
            install(crashHandler, for: signal, keepingIgnored: false)
        }
    }

    /// The simple choice for SIGTERM, SIGINT, SIGHUP, SIGQUIT: the clean-up, then die of the
    /// signal (`signal(sig, SIG_DFL); raise(sig)`), so the parent sees the usual exit status.
    /// A signal that was ignored at launch (e.g. SIGHUP under `nohup`) stays ignored.
    /// Do not combine with ``terminationSignals(_:)`` for the same signals.
    public static func installTerminationHandlers(_ signals: [Int32] = terminationSignalNumbers) {
        for signal in signals {
            install(terminationHandler, for: signal, keepingIgnored: true)
        }
    }

    /// The clean-quit choice: the given signals no longer kill the process; each arrival is
    /// yielded here instead, for the program to merge into its loop, save what it must and
    /// exit. Ending the stream (cancelling its consumer) puts back the default actions. One
    /// stream at a time (a new call replaces the previous stream).
    /// Do not combine with ``installTerminationHandlers(_:)`` for the same signals.
    ///
    /// The handler only writes the signal's number to a ``WakeUp``, read by one background
    /// thread: Dispatch signal sources do not see signals on Linux once they are set to
    /// SIG_IGN, and without a handler the default action would kill the process.
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

// MARK: - Handlers

private let cleanupSlot = Atomic<Int>(0)

private func runCleanup() {
    let address = cleanupSlot.load(ordering: .sequentiallyConsistent)
    guard address != 0 else { return }
    unsafeBitCast(address, to: (@convention(c) () -> Void).self)()
}

/// The actions that were in place before a handler was installed, indexed by signal number;
/// written before each handler is installed, only read afterwards (from the handler).
nonisolated(unsafe) private let previousActions: UnsafeMutablePointer<sigaction> = {
    let actions = UnsafeMutablePointer<sigaction>.allocate(capacity: signalSlots)
    actions.initialize(repeating: sigaction(), count: signalSlots)
    return actions
}()
private let signalSlots = 65

/// Crash: clean up, put back the previous action (Swift's backtracer, or the default) and
/// re-raise.
private let crashHandler: @convention(c) (Int32) -> Void = { number in
    runCleanup()
    if number >= 0, number < signalSlots {
        var previous = previousActions[Int(number)]
        sigaction(number, &previous, nil)
    } else {
        _ = signal(number, SIG_DFL)
    }
    raise(number)
}

/// Termination: clean up, then die of the signal with its default action.
private let terminationHandler: @convention(c) (Int32) -> Void = { number in
    runCleanup()
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

// MARK: - The termination stream's wake-up

/// Where the forwarding handler writes signal numbers (nil: out of descriptors, and signals
/// are then not forwarded).
private let signalWakeUp = WakeUp()
private let signalContinuation = Mutex<AsyncStream<Int32>.Continuation?>(nil)
private let signalReaderStarted = Atomic<Bool>(false)

private let forwardingHandler: @convention(c) (Int32) -> Void = { number in
    signalWakeUp?.signal(UInt8(truncatingIfNeeded: number))
}

private func startSignalReader() {
    guard let wakeUp = signalWakeUp, !signalReaderStarted.exchange(true, ordering: .sequentiallyConsistent) else { return }
    let thread = Thread {
        while true {
            guard wakeUp.wait() else { continue }
            let numbers = wakeUp.take()
            signalContinuation.withLock { continuation in
                for byte in numbers {
                    continuation?.yield(Int32(byte))
                }
            }
        }
    }
    thread.name = "notty-signals"
    thread.start()
}
