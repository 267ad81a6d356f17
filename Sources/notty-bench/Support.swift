// swift-format-ignore-file: AmbiguousTrailingClosureOverload

import Foundation
import HTTPTypes
import HummingbirdWSClient
import Logging
import NottyCore
import NottyService
import NottyTestSupport

// MARK: - Helpers

func percentile(_ values: [Double], _ p: Double) -> Double {
    guard !values.isEmpty else { return .nan }
    let sorted = values.sorted()
    return sorted[min(sorted.count - 1, Int((p / 100) * Double(sorted.count)))]
}

/// "p50 x ms, p99 y ms, max z ms" of millisecond samples.
func summary(_ milliseconds: [Double]) -> String {
    String(
        format: "p50 %.2f ms, p99 %.2f ms, max %.2f ms (%d samples)",
        percentile(milliseconds, 50), percentile(milliseconds, 99), milliseconds.max() ?? .nan, milliseconds.count)
}

/// The three largest samples, slowest first ("4.1, 2.3, 1.9").
func slowest(_ milliseconds: [Double]) -> String {
    milliseconds.sorted(by: >).prefix(3).map { String(format: "%.2f", $0) }.joined(separator: ", ")
}

/// Runs `body` and returns how long it took, in milliseconds.
func milliseconds(_ body: () throws -> Void) rethrows -> Double {
    let start = ContinuousClock.now
    try body()
    return (ContinuousClock.now - start).seconds * 1000
}

/// ``milliseconds(_:)`` of work that awaits.
func milliseconds(_ body: () async throws -> Void) async rethrows -> Double {
    let start = ContinuousClock.now
    try await body()
    return (ContinuousClock.now - start).seconds * 1000
}

/// A process's resident memory now and at its peak (VmRSS, VmHWM), in bytes.
func memory(pid: pid_t) -> (resident: Int, peak: Int) {
    guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return (0, 0) }
    var resident = 0, peak = 0
    let detail = ProcessInfo.processInfo.environment["BENCH_MEMORY_DETAIL"] != nil
    for line in status.split(separator: "\n") {
        let value = (Int(line.split(separator: " ").dropFirst().first ?? "0") ?? 0) * 1024
        if line.hasPrefix("VmRSS:") { resident = value }
        if line.hasPrefix("VmHWM:") { peak = value }
        if detail, line.hasPrefix("Rss") { print("    \(line)") }
    }
    return (resident, peak)
}

/// CPU time (user + system) a process has used so far, in seconds; 0 when it is gone.
func cpuSeconds(pid: pid_t) -> Double {
    guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8), let close = stat.lastIndex(of: ")") else { return 0 }
    // After "pid (comm)": state is field 3, utime field 14 and stime field 15.
    let fields = stat[stat.index(after: close)...].split(separator: " ")
    guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
    return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
}

/// CPU time used so far by every process on this machine named `name` (e.g. all of
/// PostgreSQL's: the postmaster and its backends), and how many there are.
func cpuSeconds(processesNamed name: String) -> (seconds: Double, processes: Int) {
    let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
    var total = 0.0, count = 0
    for entry in entries {
        guard let pid = pid_t(entry),
            let comm = try? String(contentsOfFile: "/proc/\(entry)/comm", encoding: .utf8),
            comm.trimmingCharacters(in: .whitespacesAndNewlines) == name
        else { continue }
        total += cpuSeconds(pid: pid)
        count += 1
    }
    return (total, count)
}

func raiseFileLimit() {
    var limit = rlimit()
    getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    limit.rlim_cur = min(limit.rlim_max, 65_536)
    setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
}

/// Looks every 200 µs until `probe` answers, for at most `timeout` (a benchmark's timing loop:
/// the probe is a cheap read of a file or a store).
func waitFor<T>(_ timeout: Duration, _ probe: () throws -> T?) async throws -> T {
    let start = ContinuousClock.now
    while ContinuousClock.now - start < timeout {
        if let value = try probe() { return value }
        try await Task.sleep(for: .microseconds(200))
    }
    throw SupportError("timed out after \(timeout)")
}

/// A device on the doorbell of the service on `port`, signed in with `token`: a stream with an
/// element for each frame it is sent, and the task to cancel when done.
func doorbellDevice(port: Int, token: String) -> (rings: AsyncStream<Void>, task: Task<Void, any Error>) {
    let rings = AsyncStream<Void>.makeStream()
    let task = Task {
        var headers = HTTPFields()
        headers[.authorization] = "Bearer \(token)"
        try await WebSocketClient.connect(
            url: "ws://127.0.0.1:\(port)/v1/me/push", configuration: .init(additionalHeaders: headers), logger: Logger(label: "bench")
        ) { inbound, _, _ in
            for try await message in inbound.messages(maxSize: 1 << 20) {
                if case .text = message { rings.continuation.yield() }
            }
        }
    }
    return (rings.stream, task)
}

/// Writes `count` notifications of ci.example.com into `owner`'s feed (a team's with `team`)
/// through the storage API, 1,000 to a batch: a feed of a given size in seconds.
func fillFeed(_ storage: any ServiceStorage, owner: String, count: Int, team: String? = nil) async throws {
    let now = Date()
    for start in stride(from: 0, to: count, by: 1000) {
        let inputs = try (start..<min(count, start + 1000)).map { i in
            let request = try PublishRequest(
                body: Data(#"{"appNotificationId":"n-\#(i)","payload":{"visualContent":{"title":"Feed \#(i)","body":"b"}}}"#.utf8))
            var input = PublishInput(
                userId: owner, hostName: "ci.example.com", request: request, expiration: now + 86_400 * 30, now: now, secrets: .ephemeral())
            input.team = team
            return input
        }
        _ = try await storage.publish(batch: inputs)
    }
}

/// Runs `path arguments…` to its end with its output thrown away: its wall time in
/// milliseconds, the spawn included. A status other than 0 ends the benchmark.
@discardableResult
func wallTime(_ path: String, _ arguments: [String], environment: [String: String] = ProcessInfo.processInfo.environment) throws -> Double {
    var status: Int32 = 0
    let elapsed = try milliseconds {
        let pid = try NottyTestSupport.spawn(path, arguments, environment: environment) { actions in
            posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        }
        waitpid(pid, &status, 0)
    }
    guard status == 0 else { throw SupportError("\(path) \(arguments.joined(separator: " ")) ended with \(status)") }
    return elapsed
}

/// The center's first full frame: `notty tui` of `binary` started in a 120×40 terminal with
/// `home`, timed from its spawn to a screen with `newest` (the newest Unread title) and the
/// account on it; `atFrame` is handed its pid then, before it is stopped.
func firstFrame(_ binary: URL, home: URL, newest: String, atFrame: (pid_t) -> Void = { _ in }) throws -> Double {
    let terminal = try PseudoTerminal(columns: 120, rows: 40)
    let start = ContinuousClock.now
    let center = try terminal.spawn(binary.path, ["tui"], environment: ["NOTTY_HOME": home.path, "TERM": "xterm-256color"])
    let first = try terminal.readUntil(timeout: .seconds(10)) { $0.contains(newest) && $0.contains("alice@") }
    atFrame(center)
    kill(center, SIGTERM)
    var status: Int32 = 0
    waitpid(center, &status, 0)
    return (first - start).seconds * 1000
}
