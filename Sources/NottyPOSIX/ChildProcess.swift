import Foundation
import Synchronization

/// A program started with `posix_spawn` and reaped by a thread of its own: what notty runs
/// (links, `--exec` and escalation commands, the demo's service, `swift build`) and what its
/// tests run. Not Foundation's `Process`: on Linux its `run()` reads each entry of
/// `/proc/self/fd` as a whole 256-byte `d_name`, past the end of glibc's buffer, and crashes
/// now and then when the next page is unmapped (swift-corelibs-foundation#5472; seen here in the
/// test suite, which starts thousands). The child gets default signal handling and an empty
/// signal mask (notty blocks SIGINT and SIGTERM in its threads) and no descriptor of this
/// process but the three it is given.
public final class ChildProcess: Sendable {
    /// What one of the child's standard streams is.
    public enum Stream: Sendable {
        /// This process's own.
        case inherit
        /// `/dev/null`.
        case null
        /// This descriptor (still this process's to close).
        case descriptor(Int32)
    }

    /// How it ended: an exit status, or the signal that killed it.
    public struct Termination: Sendable, Equatable {
        public var status: Int32
        public var signalled: Bool
        /// Whose it is.
        public var pid: pid_t

        /// The shell's way of saying it: the exit status, or 128 + the signal.
        public var code: Int32 { signalled ? 128 + status : status }
    }

    public let pid: pid_t
    private let ended = Mutex<(termination: Termination?, handlers: [@Sendable (Termination) -> Void])>((nil, []))
    private let condition = ConditionBox()

    private init(pid: pid_t) { self.pid = pid }

    /// Starts `path` with `arguments`. `environment` nil: this process's. `processGroup`: in a
    /// group of its own (its pid), so that `kill(-pid, …)` reaches what it starts; `session`: a
    /// session of its own (no controlling terminal). Throws with the reason when it cannot start.
    public static func start(
        _ path: String, _ arguments: [String], environment: [String: String]? = nil, directory: String? = nil,
        stdin: Stream = .null, stdout: Stream = .inherit, stderr: Stream = .inherit, processGroup: Bool = false, session: Bool = false,
        onExit: (@Sendable (Termination) -> Void)? = nil
    ) throws -> ChildProcess {
        let pid = try spawnProgram(
            path, arguments, environment: environment ?? ProcessInfo.processInfo.environment, processGroup: processGroup, newSession: session
        ) { actions in
            for (stream, target) in [(stdin, Int32(0)), (stdout, 1), (stderr, 2)] {
                switch stream {
                case .inherit: break
                case .null: posix_spawn_file_actions_addopen(&actions, target, "/dev/null", target == 0 ? O_RDONLY : O_WRONLY, 0)
                case .descriptor(let fd): posix_spawn_file_actions_adddup2(&actions, fd, target)
                }
            }
            if let directory { _ = addChangeDirectory?(&actions, directory) }
        }
        let child = ChildProcess(pid: pid)
        if let onExit { child.ended.withLock { $0.handlers.append(onExit) } }
        // The handlers run on this thread (a command's outcome read and recorded): the default stack.
        Thread { child.reap() }.start()
        return child
    }

    private func reap() {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            guard errno == EINTR else {
                status = 0x7f00  // not ours to wait for (cannot happen): say it ended
                break
            }
        }
        let termination =
            status & 0x7f == 0
            ? Termination(status: (status >> 8) & 0xff, signalled: false, pid: pid) : Termination(status: status & 0x7f, signalled: true, pid: pid)
        let handlers = ended.withLock { state in
            state.termination = termination
            defer { state.handlers = [] }
            return state.handlers
        }
        condition.broadcast()
        for handler in handlers { handler(termination) }
    }

    /// How it ended, nil while it runs.
    public var termination: Termination? { ended.withLock { $0.termination } }

    public var isRunning: Bool { termination == nil }

    /// Waits (blocking this thread) until it has ended.
    @discardableResult
    public func wait() -> Termination {
        condition.wait { self.termination }
    }

    /// Waits until it has ended or `deadline` passed: nil then.
    public func wait(until deadline: Date) -> Termination? {
        condition.wait(until: deadline) { self.termination }
    }

    /// Waits without blocking a thread of Swift's pool.
    public func exited() async -> Termination {
        await withCheckedContinuation { continuation in
            let already = ended.withLock { state -> Termination? in
                if state.termination == nil { state.handlers.append { continuation.resume(returning: $0) } }
                return state.termination
            }
            if let already { continuation.resume(returning: already) }
        }
    }

    /// Sends `signal` (SIGTERM by default) while it runs; to its whole group with `group`.
    public func signal(_ signal: Int32 = SIGTERM, group: Bool = false) {
        guard isRunning else { return }
        kill(group ? -pid : pid, signal)
    }
}

/// `posix_spawn` (`posix_spawnp` for a bare name) of `path arguments…` with exactly
/// `environment`: default signal handling, an empty signal mask, no descriptor of this process
/// past 2 but what `files` adds. Answers the child's pid.
public func spawnProgram(
    _ path: String, _ arguments: [String], environment: [String: String], processGroup: Bool = false, newSession: Bool = false,
    files: (inout posix_spawn_file_actions_t) -> Void
) throws -> pid_t {
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    files(&actions)
    _ = addCloseFrom?(&actions, 3)  // glibc 2.34 and later (Debian 12 has 2.36); older: nothing
    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    var noSignals = sigset_t()
    sigemptyset(&noSignals)
    var allSignals = sigset_t()
    sigfillset(&allSignals)
    posix_spawnattr_setsigmask(&attributes, &noSignals)
    posix_spawnattr_setsigdefault(&attributes, &allSignals)
    var flags = Int32(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF)
    if processGroup {
        posix_spawnattr_setpgroup(&attributes, 0)
        flags |= Int32(POSIX_SPAWN_SETPGROUP)
    }
    if newSession { flags |= 0x80 }  // POSIX_SPAWN_SETSID (glibc), not exported to Swift
    posix_spawnattr_setflags(&attributes, Int16(flags))
    let argv = ([path] + arguments).map { strdup($0) } + [nil]
    let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
    defer {
        for pointer in argv { free(pointer) }
        for pointer in envp { free(pointer) }
    }
    var pid = pid_t()
    let result =
        path.contains("/") ? posix_spawn(&pid, path, &actions, &attributes, argv, envp) : posix_spawnp(&pid, path, &actions, &attributes, argv, envp)
    guard result == 0 else { throw ChildProcessError(path: path, code: result) }
    return pid
}

/// Why a program could not be started.
public struct ChildProcessError: Error, CustomStringConvertible {
    public let path: String
    public let code: Int32
    public var description: String { "cannot run \(path): \(String(cString: strerror(code)))" }
}

/// A condition variable with its mutex, for waiting on a value. `@unchecked Sendable`:
/// `NSCondition` is not marked Sendable, and every use here holds its lock (the value read
/// under it is the caller's, itself behind the same lock).
final class ConditionBox: @unchecked Sendable {
    private let condition = NSCondition()

    func broadcast() {
        condition.lock()
        condition.broadcast()
        condition.unlock()
    }

    func wait<T>(_ value: () -> T?) -> T {
        condition.lock()
        defer { condition.unlock() }
        while true {
            if let value = value() { return value }
            condition.wait()
        }
    }

    func wait<T>(until deadline: Date, _ value: () -> T?) -> T? {
        condition.lock()
        defer { condition.unlock() }
        while true {
            if let value = value() { return value }
            if !condition.wait(until: deadline) { return value() }
        }
    }
}

/// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34 and later) and
/// `posix_spawn_file_actions_addchdir_np` (2.29 and later), which Swift's Glibc module does not
/// declare; found at run time.
private let addCloseFrom: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32)? = {
    guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np") else { return nil }
    return unsafeBitCast(symbol, to: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32).self)
}()

public let addChangeDirectory: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, UnsafePointer<CChar>) -> Int32)? = {
    guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addchdir_np") else { return nil }
    return unsafeBitCast(symbol, to: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, UnsafePointer<CChar>) -> Int32).self)
}()

/// Everything left to read from `fd`, to its end of file (a read a signal interrupts is made
/// again: Foundation's `readDataToEndOfFile` stops the program then). Does not close it.
public func readToEnd(_ fd: Int32) -> Data {
    var data = Data()
    var buffer = [UInt8](repeating: 0, count: 64 << 10)
    while true {
        let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if count > 0 {
            data.append(contentsOf: buffer[0..<count])
        } else if count == 0 || errno != EINTR {
            return data
        }
    }
}
