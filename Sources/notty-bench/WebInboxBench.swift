import Foundation
import NottyCore
import NottyService
import NottyTestSupport

/// The web inbox's first list (PROTOCOL.md §14) with 100,000 notifications: `scripts/web-first-list`
/// signs in through the page in headless Chromium and times the sign-in answer → the first row
/// on screen; `scripts/web-dismiss-gone` times a device's dismiss → its row gone from the list.
struct WebInboxBench {
    let service: ServiceBench
    let count: Int
    let rounds: Int
    /// How many dismissals are timed.
    var dismissals = 200

    func run() async throws {
        print(
            "notty-bench webinbox — real `notty serve` (SQLite, WAL, synchronous=FULL), \(count) notifications of alice's, headless Chromium on loopback, \(ProcessInfo.processInfo.activeProcessorCount) cores"
        )
        let storage = try await service.openStorage()
        guard let alice = try await storage.user(name: "alice") else { throw SupportError("no alice") }
        try await fillFeed(storage, owner: alice.id, count: count)
        try await storage.close()
        await service.serve.stop()
        try await service.serve.start(port: service.port, extraArguments: ServiceBench.unlimited)
        let (status, output) = try await Repository.run([
            Repository.root.appendingPathComponent("scripts/web-first-list").path, service.base, "alice", "s3cret-pw", String(rounds),
        ])
        guard status == 0 else { throw SupportError("web-first-list failed: \(output)") }
        for line in output.split(separator: "\n") { print("  \(line)") }

        // A device's dismiss → gone from the browser's list (the doorbell, the list fetched again).
        let (gone, answer) = try await Repository.run([
            Repository.root.appendingPathComponent("scripts/web-dismiss-gone").path, service.base, "alice", "s3cret-pw", service.userToken,
            String(dismissals),
        ])
        guard gone == 0, let line = answer.split(separator: "\n").last, case .object(let object)? = JSONValue(jsonText: String(line)),
            case .array(let values)? = object["rounds"]
        else { throw SupportError("web-dismiss-gone failed: \(answer)") }
        let times = values.compactMap { value -> Double? in if case .number(let n) = value { n } else { nil } }
        print(
            String(
                format: "  a device's dismiss → gone from the browser's list (%d dismissals): p50 %.1f ms, p99 %.1f ms, max %.1f ms",
                times.count, percentile(times, 50), percentile(times, 99), times.max() ?? .nan))
    }
}
