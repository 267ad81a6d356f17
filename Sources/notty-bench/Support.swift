import Foundation

// MARK: - Helpers

/// The `notty` built next to this benchmark.
let nottyBinary = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent().appendingPathComponent("notty")

struct BenchError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

func runToEnd(_ binary: URL, _ arguments: [String], env: [String: String], input: String?) throws -> String {
    let process = Process()
    process.executableURL = binary
    process.arguments = arguments
    process.environment = ProcessInfo.processInfo.environment.merging(env) { $1 }
    let output = Pipe(), stdin = Pipe()
    process.standardOutput = output
    process.standardInput = stdin
    try process.run()
    if let input { stdin.fileHandleForWriting.write(Data(input.utf8)) }
    try stdin.fileHandleForWriting.close()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else { throw BenchError("\(arguments.joined(separator: " ")) failed") }
    return String(decoding: data, as: UTF8.self)
}

func percentile(_ values: [Double], _ p: Double) -> Double {
    guard !values.isEmpty else { return .nan }
    let sorted = values.sorted()
    return sorted[min(sorted.count - 1, Int((p / 100) * Double(sorted.count)))]
}

/// "p50 x ms, p99 y ms, max z ms" of millisecond samples.
func summary(_ milliseconds: [Double]) -> String {
    String(format: "p50 %.2f ms, p99 %.2f ms, max %.2f ms (%d samples)",
           percentile(milliseconds, 50), percentile(milliseconds, 99), milliseconds.max() ?? .nan, milliseconds.count)
}

/// Runs `body` and returns how long it took, in milliseconds.
func milliseconds(_ body: () throws -> Void) rethrows -> Double {
    let start = ContinuousClock.now
    try body()
    return (ContinuousClock.now - start).seconds * 1000
}

func residentBytes(pid: Int32) -> Int {
    guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return 0 }
    for line in status.split(separator: "\n") where line.hasPrefix("VmRSS:") {
        return (Int(line.split(separator: " ").dropFirst().first ?? "0") ?? 0) * 1024
    }
    return 0
}

func raiseFileLimit() {
    var limit = rlimit()
    getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    limit.rlim_cur = min(limit.rlim_max, 65_536)
    setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
}

extension Duration {
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}

/// A value shared between concurrent benchmark tasks.
final class Shared<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value
    init(_ value: Value) { self.value = value }
    @discardableResult
    func update<T>(_ body: (inout Value) -> T) -> T { lock.withLock { body(&value) } }
}
