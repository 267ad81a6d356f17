import Foundation

// MARK: - Helpers

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

func raiseFileLimit() {
    var limit = rlimit()
    getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    limit.rlim_cur = min(limit.rlim_max, 65_536)
    setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
}

extension Duration {
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}

