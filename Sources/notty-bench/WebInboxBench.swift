import Foundation
import NottyCore
import NottyService
import NottyTestSupport

/// The web inbox's first list (PROTOCOL.md §14) with 100,000 notifications: `scripts/web-first-list`
/// signs in through the page in headless Chromium and times the sign-in answer → the first row
/// on screen.
struct WebInboxBench {
    let service: ServiceBench
    let count: Int
    let rounds: Int

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
            Repository.root.appendingPathComponent("scripts/web-first-list").path, service.base, "alice", "pw", String(rounds),
        ])
        guard status == 0 else { throw SupportError("web-first-list failed: \(output)") }
        for line in output.split(separator: "\n") { print("  \(line)") }
    }
}
