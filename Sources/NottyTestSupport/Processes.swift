import Foundation
import NottyPOSIX

@_exported import func NottyPOSIX.offThePool

/// Paths of the repository and of the built `notty` (and `notty-server`) next to the running test bundle.
public enum Repository {
    public static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    public static var nottyBinary: URL {
        URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent().appendingPathComponent("notty")
    }

    /// The built `notty-server` (what `notty serve`, `notty admin` and `notty demo` run).
    public static var nottyServerBinary: URL {
        nottyBinary.deletingLastPathComponent().appendingPathComponent("notty-server")
    }

    /// Runs a command to completion, returning status and output (stdout and stderr together).
    /// The waiting happens on a thread of its own (``offThePool(_:)``).
    public static func run(_ arguments: [String], environment: [String: String] = [:], limit: TimeInterval = commandLimit) async throws -> (
        status: Int32, output: String
    ) {
        try await offThePool { try runWaiting(arguments, environment: environment, limit: limit) }
    }

    /// ``run(_:environment:)`` holding the calling thread until the command ends: for code
    /// that is not a test task (a benchmark's timed block, a set-up already off the pool).
    public static func runWaiting(_ arguments: [String], environment: [String: String] = [:], limit: TimeInterval = commandLimit) throws -> (
        status: Int32, output: String
    ) {
        let ended = try runToEnd(
            "/usr/bin/env", arguments, environment: ProcessInfo.processInfo.environment.merging(environment) { $1 },
            directory: root, name: arguments.joined(separator: " "), sameStream: true, limit: limit)
        return (ended.status, String(decoding: ended.out, as: UTF8.self))
    }

    /// A fresh temporary directory.
    public static func temporaryDirectory(_ prefix: String) -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString.prefix(8))")
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }
}

/// The real `notty` run as one device (its own `NOTTY_HOME`).
public struct NottyCLI: Sendable {
    public let home: URL
    /// The `notty` to run: the one built beside the running program unless given (benchmarks
    /// alternate two builds).
    public let binary: URL

    public init(home: URL, binary: URL = Repository.nottyBinary) {
        self.home = home
        self.binary = binary
    }

    public struct Result: Sendable {
        public var status: Int32
        public var out: String
        public var err: String
    }

    /// `notty login URL --user alice --password-stdin [--device NAME]`: the sign-in every test
    /// and benchmark starts with (the services they start make `alice` with password `s3cret-pw`).
    public static func loginArguments(_ url: String, device: String?) -> [String] {
        ["login", url, "--user", "alice", "--password-stdin"] + (device.map { ["--device", $0] } ?? [])
    }

    /// Signs this device in to `url` as `alice`; throws with notty's message when it cannot.
    public func login(_ url: String, device: String? = nil) async throws {
        let result = try await run(Self.loginArguments(url, device: device), input: "s3cret-pw\n")
        guard result.status == 0 else { throw SupportError("login \(device ?? "") to \(url) failed: \(result.err)") }
    }

    /// ``login(_:device:)`` holding the calling thread (a benchmark's timed block).
    public func loginWaiting(_ url: String, device: String? = nil) throws {
        let result = try runWaiting(Self.loginArguments(url, device: device), input: "s3cret-pw\n")
        guard result.status == 0 else { throw SupportError("login \(device ?? "") to \(url) failed: \(result.err)") }
    }

    /// Runs `notty arguments…` to completion with `input` on stdin, waiting on a thread of its
    /// own (``offThePool(_:)``).
    @discardableResult
    public func run(_ arguments: [String], input: String? = nil, environment: [String: String] = [:]) async throws -> Result {
        try await offThePool { try runWaiting(arguments, input: input, environment: environment) }
    }

    /// ``run(_:input:environment:)`` holding the calling thread until `notty` ends: for a
    /// benchmark's timed block.
    @discardableResult
    public func runWaiting(_ arguments: [String], input: String? = nil, environment: [String: String] = [:]) throws -> Result {
        let ended = try runToEnd(
            binary.path, arguments,
            environment: ProcessInfo.processInfo.environment.merging(["NOTTY_HOME": home.path]) { $1 }.merging(environment) { $1 },
            name: "notty " + arguments.joined(separator: " "), input: Data((input ?? "").utf8))
        return Result(status: ended.status, out: String(decoding: ended.out, as: UTF8.self), err: String(decoding: ended.err, as: UTF8.self))
    }

    /// Starts `notty arguments…` in the background with stdout and stderr going to `log`;
    /// `terminationHandler` (see ``startLogged(_:_:log:environment:terminationHandler:)``) runs when it ends.
    public func start(
        _ arguments: [String], log: URL, environment: [String: String] = [:],
        terminationHandler: (@Sendable (ChildProcess.Termination) -> Void)? = nil
    ) throws -> ChildProcess {
        try startLogged(
            binary.path, arguments, log: log, environment: ["NOTTY_HOME": home.path].merging(environment) { $1 },
            terminationHandler: terminationHandler)
    }
}

/// How long a command a test runs may take before it is killed and the test fails with its
/// output: a hung child must fail its test, never hold up the whole run (Swift Testing's time
/// limits cannot end a thread that waits for a process).
public let commandLimit: TimeInterval = 300

/// Runs `path arguments…` with exactly `environment`, in `directory` when given, with `input`
/// on its stdin, to its end, at most `limit` seconds: its exit status (128 + the signal when a
/// signal ended it) and what it wrote (stderr in `out` too when `sameStream`). Both pipes are
/// read at once, so a chatty stderr cannot block the child. Throws, naming the command
/// (`name`), when it outlives the limit (it is killed) or, once it has ended, leaves its output
/// open to a child of its own for `grace` seconds.
///
/// Started with ``spawn(_:_:environment:newSession:files:)`` and reaped with `waitpid`, not
/// with Foundation's `Process`: that one reports an exit only once every process that inherited
/// its private socket has ended, so a child's own child (a daemon it starts) would hold it.
public func runToEnd(
    _ path: String, _ arguments: [String], environment: [String: String], directory: URL? = nil, name: String,
    input: Data = Data(), sameStream: Bool = false,
    limit: TimeInterval = commandLimit, grace: TimeInterval = 30
) throws -> (status: Int32, out: Data, err: Data) {
    func makePipe() throws -> (read: Int32, write: Int32) {
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else { throw SupportError("pipe: \(String(cString: strerror(errno)))") }
        for fd in ends { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }  // other tests' children (their spawn closes them anyway)
        return (ends[0], ends[1])
    }
    let out = try makePipe(), err = sameStream ? out : try makePipe(), stdin = try makePipe()
    let pid: pid_t
    do {
        pid = try spawn(path, arguments, environment: environment) { actions in
            posix_spawn_file_actions_adddup2(&actions, stdin.read, 0)
            posix_spawn_file_actions_adddup2(&actions, out.write, 1)
            posix_spawn_file_actions_adddup2(&actions, err.write, 2)
            if let directory { _ = addChangeDirectory?(&actions, directory.path) }
        }
    } catch {
        for fd in Set([out.read, out.write, err.read, err.write, stdin.read, stdin.write]) { close(fd) }
        throw error
    }
    for fd in Set([out.write, err.write, stdin.read]) { close(fd) }
    let outData = OneShot<Data>(), errData = OneShot<Data>(), exited = OneShot<Int32>()
    Thread {
        outData.set(readToEnd(out.read))
        close(out.read)
    }.start()
    if !sameStream {
        Thread {
            errData.set(readToEnd(err.read))
            close(err.read)
        }.start()
    }
    Thread {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0, errno == EINTR {}
        exited.set(status & 0x7f == 0 ? (status >> 8) & 0xff : 128 + status & 0x7f)
    }.start()
    let writer = FileHandle(fileDescriptor: stdin.write, closeOnDealloc: true)
    try? writer.write(contentsOf: input)  // a child that exits without reading it closes the pipe: nothing to tell
    try? writer.close()
    guard let status = exited.wait(until: Date().addingTimeInterval(limit)) else {
        kill(pid, SIGKILL)
        _ = exited.wait(until: Date().addingTimeInterval(10))
        let partial = outData.wait(until: Date().addingTimeInterval(5)).map { String(decoding: $0, as: UTF8.self) } ?? "(still open)"
        throw SupportError("\(name) did not end within \(Int(limit)) s and was killed; its output: \(partial)")
    }
    // Ended: its pipes close with it unless a child of its own still holds them.
    let closed = Date().addingTimeInterval(grace)
    guard let outBytes = outData.wait(until: closed), let errBytes = sameStream ? Data() : errData.wait(until: closed) else {
        throw SupportError("\(name) ended (status \(status)) but a process it started still holds its output open")
    }
    return (status, outBytes, errBytes)
}

/// Starts `path arguments…` in the background, stdin empty, stdout and stderr going to `log`
/// (made anew), with this process's environment plus `environment`. `terminationHandler`, when
/// given, runs once it has ended (on its reaper's thread; set before it runs, so it cannot miss
/// an early exit).
public func startLogged(
    _ path: String, _ arguments: [String], log: URL, environment: [String: String],
    terminationHandler: (@Sendable (ChildProcess.Termination) -> Void)? = nil
) throws -> ChildProcess {
    // A regular file, made anew (createFile replaces what is there: never a device such as /dev/null).
    if let type = try? FileManager.default.attributesOfItem(atPath: log.path)[.type] as? FileAttributeType, type != .typeRegular {
        throw SupportError("startLogged logs to a regular file, not \(log.path)")
    }
    _ = FileManager.default.createFile(atPath: log.path, contents: nil)
    let handle = try FileHandle(forWritingTo: log)
    defer { try? handle.close() }
    return try ChildProcess.start(
        path, arguments, environment: ProcessInfo.processInfo.environment.merging(environment) { $1 }, stdin: .null,
        stdout: .descriptor(handle.fileDescriptor), stderr: .descriptor(handle.fileDescriptor), onExit: terminationHandler)
}

/// A real `notty serve` on 127.0.0.1 with a free port, a user `alice` (password `s3cret-pw`) and an
/// app `ci.example.com`; always stopped by ``stop()``.
// @unchecked: `process` and `port` change on a restart, which a test makes from one task
public final class ServeProcess: @unchecked Sendable {
    public let admin: NottyCLI
    public let log: URL
    /// For `notty serve` and `notty admin` (e.g. `NOTTY_POSTGRES_URL`).
    public let environment: [String: String]
    public private(set) var process: ChildProcess?
    public private(set) var port = 0
    /// `https` when the service was started with `--tls-cert`/`--tls-key`.
    public private(set) var scheme = "http"
    public let clientId: String
    public let clientSecret: String
    /// The service's log so far (its last `limit` characters), for a failing test to show.
    public func logText(last limit: Int = 20_000) -> String {
        String(String(decoding: (try? Data(contentsOf: log)) ?? Data(), as: UTF8.self).suffix(limit))
    }

    public var url: String { "\(scheme)://127.0.0.1:\(port)" }
    /// The service's secret key file: `NOTTY_SECRET_KEY_FILE`, else `secret.key` beside its store.
    public var secretKeyFile: String { environment["NOTTY_SECRET_KEY_FILE"] ?? admin.home.appendingPathComponent("secret.key").path }

    /// Creates the user and the app, then starts the service (`binary`: `notty`, or a script
    /// that runs it somewhere else, such as in a private network namespace).
    public convenience init(
        directory: URL, environment: [String: String] = [:], extraArguments: [String] = [],
        binary: URL = Repository.nottyBinary
    ) async throws {
        let admin = NottyCLI(home: directory.appendingPathComponent("server"), binary: binary)
        let user = try await admin.run(["admin", "user", "add", "alice"], input: "s3cret-pw\n", environment: environment)
        guard user.status == 0 else { throw SupportError("admin user add failed: \(user.err)") }
        let app = try await admin.run(["admin", "app", "add", "ci.example.com", "--json"], environment: environment)
        guard app.status == 0, let object = try? JSONSerialization.jsonObject(with: Data(app.out.utf8)) as? [String: String],
            let id = object["client_id"], let secret = object["client_secret"]
        else { throw SupportError("admin app add --json exited \(app.status) with stdout \"\(app.out)\" and stderr \"\(app.err)\"") }
        try await self.init(
            directory: directory, environment: environment, clientId: id, clientSecret: secret, extraArguments: extraArguments,
            binary: binary)
    }

    /// Another instance on `other`'s storage (its `environment` names a shared PostgreSQL).
    /// The two share the secret key too (`NOTTY_SECRET_KEY_FILE`: the first's).
    public convenience init(sharingStorageOf other: ServeProcess, directory: URL, extraArguments: [String] = []) async throws {
        var environment = other.environment
        environment["NOTTY_SECRET_KEY_FILE"] = other.secretKeyFile
        try await self.init(
            directory: directory, environment: environment, clientId: other.clientId, clientSecret: other.clientSecret,
            extraArguments: extraArguments)
    }

    private init(
        directory: URL, environment: [String: String], clientId: String, clientSecret: String, extraArguments: [String],
        binary: URL = Repository.nottyBinary
    ) async throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        admin = NottyCLI(home: directory.appendingPathComponent("server"), binary: binary)
        log = directory.appendingPathComponent("serve.log")
        self.environment = environment
        self.clientId = clientId
        self.clientSecret = clientSecret
        try await start(port: 0, extraArguments: extraArguments)
    }

    /// Starts (or restarts, on the same port when `port` is given) the service.
    public func start(port wanted: Int? = nil, extraArguments: [String] = []) async throws {
        // Woken by each write to the log's directory (inotify), not by a timer; a wait ends after
        // a second so that a service that died is noticed.
        let watch = DirectoryWatch(directory: log.deletingLastPathComponent().path)
        defer { watch?.stop() }
        let process = try admin.start(
            ["serve", "--port", String(wanted ?? port), "--log-level", "notice"] + extraArguments, log: log, environment: environment)
        self.process = process
        let deadline = ContinuousClock.now + .seconds(20)
        while ContinuousClock.now < deadline {
            let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
            if let range = text.range(of: #"url=https?://127\.0\.0\.1:\d+"#, options: [.regularExpression, .backwards]),
                let found = Int(text[range].split(separator: ":").last!), process.isRunning
            {
                port = found
                scheme = text[range].hasPrefix("url=https") ? "https" : "http"
                return
            }
            guard process.isRunning else { break }
            if let watch {
                _ = try await offThePool { watch.wait(timeoutMilliseconds: 1000) }
            } else {
                try await Task.sleep(for: .milliseconds(50))  // no inotify here: look again
            }
        }
        throw SupportError("notty serve did not start: \((try? String(contentsOf: log, encoding: .utf8)) ?? "")")
    }

    /// SIGKILL: no chance to finish anything.
    public func sigkill() {
        guard let process, process.isRunning else { return }
        process.signal(SIGKILL)
        process.wait()
    }

    /// SIGTERM, then waits (at most 10 s, then SIGKILL) without holding a thread of Swift's
    /// pool: woken by the process's end itself. What a test calls before it looks at what the
    /// service left, or restarts it.
    public func stop() async {
        guard let process, process.isRunning else { return }
        await terminate(process)
    }

    /// The same for a `defer` or `deinit`, which cannot wait asynchronously: it blocks its
    /// thread until the process ends (milliseconds after SIGTERM; 10 s at most).
    public func stop() {
        guard let process, process.isRunning else { return }
        terminate(process)
    }

    deinit { stop() }
}

/// A test set-up failure.
public struct SupportError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// Stops `process`: SIGTERM, then SIGKILL when it has not ended within `grace` seconds (a
/// process that ignores SIGTERM must fail its test, not hang the run). True when SIGTERM did it.
@discardableResult
public func terminate(_ process: ChildProcess, grace: TimeInterval = 10) -> Bool {
    guard process.isRunning else { return true }
    process.signal(SIGTERM)
    if process.wait(until: Date().addingTimeInterval(grace)) != nil { return true }
    process.signal(SIGKILL)
    process.wait()
    return false
}

/// ``terminate(_:grace:)`` without blocking a thread of Swift's pool: woken by the process's
/// end, or by the grace running out (then SIGKILL). True when SIGTERM did it.
@discardableResult
public func terminate(_ process: ChildProcess, grace: Duration = .seconds(10)) async -> Bool {
    guard process.isRunning else { return true }
    process.signal(SIGTERM)
    return await withTaskGroup(of: Bool.self) { group in
        group.addTask {
            _ = await process.exited()
            return true
        }
        group.addTask {
            try? await Task.sleep(for: grace)
            return false
        }
        let first = await group.next() ?? true
        if !first { process.signal(SIGKILL) }
        group.cancelAll()
        _ = await process.exited()
        return first
    }
}

/// Polls `condition` every `pause` (20 ms) until it holds or `timeout` passes.
public func eventually(
    timeout: Duration = .seconds(5), every pause: Duration = .milliseconds(20), _ condition: () async throws -> Bool
) async rethrows -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if try await condition() { return true }
        try? await Task.sleep(for: pause)
    }
    return try await condition()
}

/// A client asking again: `attempt` until what it answers is no longer `again` (a `503` with
/// Retry-After, say) or `timeout` passes, a `pause` between tries. Answers the last answer.
public func retrying<T>(
    for timeout: Duration, every pause: Duration = .milliseconds(200), _ attempt: () async throws -> T, while again: (T) -> Bool
) async rethrows -> T {
    let deadline = ContinuousClock.now + timeout
    var answer = try await attempt()
    while again(answer) && ContinuousClock.now < deadline {
        try? await Task.sleep(for: pause)
        answer = try await attempt()
    }
    return answer
}

/// Starts `path` with posix_spawn (NottyPOSIX's ``spawnProgram``): exactly `environment`,
/// standard files as `files` sets them up and no other descriptor of this process, no blocked
/// signals and default dispositions (a child must not inherit a Dispatch worker's blocked
/// signals, or SIGTERM cannot stop it), in a new session when `newSession` (a terminal it then
/// opens becomes its controlling terminal).
///
/// Descriptors 3 and up are closed in the child: tests run in parallel, and a child (a tmux
/// server lives for its whole test) that inherited another test's file open for writing would
/// make every later `exec` of that file fail with ETXTBSY.
public func spawn(
    _ path: String, _ arguments: [String], environment: [String: String], newSession: Bool = false,
    files: (inout posix_spawn_file_actions_t) -> Void
) throws -> pid_t {
    try spawnProgram(path, arguments, environment: environment, newSession: newSession, files: files)
}

/// Writes `text` to `url` as a program (mode 0755) through a descriptor opened close-on-exec.
///
/// A test that writes a script and then has it run must not use Foundation's atomic write:
/// its temporary file is opened without `O_CLOEXEC`, so a child that another test spawns at
/// that moment can keep the script open for writing, and `exec` of it then fails with ETXTBSY
/// ("text file busy"): a browser or dmenu stand-in that silently never runs.
public func writeProgram(_ text: String, to url: URL) throws {
    let descriptor = open(url.path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o755)
    guard descriptor >= 0 else { throw SupportError("open \(url.path): \(String(cString: strerror(errno)))") }
    defer { close(descriptor) }
    let bytes = Array(text.utf8)
    var written = 0
    while written < bytes.count {
        let count = bytes[written...].withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        if count < 0, errno == EINTR { continue }
        guard count > 0 else { throw SupportError("write \(url.path): \(String(cString: strerror(errno)))") }
        written += count
    }
    guard fchmod(descriptor, 0o755) == 0 else { throw SupportError("chmod \(url.path): \(String(cString: strerror(errno)))") }
}

/// A figure or finding from a test, on stderr: `swift test` passes that on at once, while a
/// test's buffered stdout may only appear after the runner's summary.
public func report(_ line: String) {
    FileHandle.standardError.write(Data((line + "\n").utf8))
}

/// A value one thread sets once and others wait for, asleep (a condition variable, no polling).
final class OneShot<Value: Sendable>: @unchecked Sendable {  // @unchecked: its state is guarded by an NSCondition, which Mutex cannot wait on
    private let condition = NSCondition()
    private var value: Value?

    func set(_ newValue: Value) {
        condition.lock()
        value = newValue
        condition.broadcast()
        condition.unlock()
    }

    /// The value once set; nil when `deadline` (if any) passes first.
    func wait(until deadline: Date? = nil) -> Value? {
        condition.lock()
        defer { condition.unlock() }
        while value == nil {
            if let deadline {
                if !condition.wait(until: deadline) { break }
            } else {
                condition.wait()
            }
        }
        return value
    }
}

/// A value shared between tasks behind a lock.
public final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: Value
    public init(_ value: Value) { stored = value }
    public var value: Value { lock.withLock { stored } }
    @discardableResult
    public func update<T>(_ body: (inout Value) -> T) -> T { lock.withLock { body(&stored) } }
}
