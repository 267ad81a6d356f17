import Foundation
import NottyCore
import NottyStore
import NottyTestSupport

/// A user with a large history on the service, and device B signed in with all of it in its
/// local store: what the client and terminal benchmarks start from. Preparing it measures the
/// initial sync.
struct SyncedDevice {
    let home: URL
    let count: Int
    var cli: NottyCLI { NottyCLI(home: home) }
    var storePath: String { home.appendingPathComponent("store.sqlite").path }

    static func prepare(service: ServiceBench, count: Int) async throws -> SyncedDevice {
        print(
            "notty-bench — real `notty serve` (SQLite) on 127.0.0.1:\(service.port) and real `notty` processes, \(ProcessInfo.processInfo.activeProcessorCount) cores"
        )
        let started = ContinuousClock.now
        try await service.publishHistory(count)
        let rate = Double(count) / (ContinuousClock.now - started).seconds
        print(String(format: "history: %d notifications published (%.0f/s, 64 clients)", count, rate))
        try await service.spreadStates()

        let device = SyncedDevice(home: service.directory.appendingPathComponent("device-b"), count: count)
        let login = try milliseconds {
            try device.cli.loginWaiting(service.base, device: "bench-b")
        }
        // The initial sync alone: an empty store, the device already signed in.
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: device.storePath + suffix) }
        let sync = try milliseconds {
            try device.run(["sync"])
        }
        let stored = try await LocalStore.open(path: device.storePath).perform { try $0.counts() }.all
        guard stored == count else { throw SupportError("device B's store holds \(stored) notifications, expected \(count)") }
        let size = (try? FileManager.default.attributesOfItem(atPath: device.storePath)[.size] as? Int) ?? 0
        print(
            String(
                format: "initial sync of %d notifications into an empty store (`notty sync`, whole process): %.2f s; store %.0f MiB", count,
                sync / 1000, Double(size) / 1_048_576))
        if let keep = ProcessInfo.processInfo.environment["NOTTY_BENCH_KEEP_STORE"] {
            try? FileManager.default.removeItem(atPath: keep)
            try FileManager.default.copyItem(atPath: device.storePath, toPath: keep)
            print("device B's store copied to \(keep)")
        }
        print(String(format: "`notty login` (sign in, register the device, pull the whole history): %.2f s", login / 1000))
        return device
    }

    /// Runs `notty arguments…` as device B (holding this thread: benchmarks time it); fails unless it exits 0.
    func run(_ arguments: [String], input: String? = nil) throws {
        let result = try cli.runWaiting(arguments, input: input)
        guard result.status == 0 else { throw SupportError("notty \(arguments.joined(separator: " ")) failed: \(result.err)") }
    }
}

extension ServiceBench {
    /// Publishes `count` varied notifications (apps' groups, titles, bodies, priorities) from
    /// 64 concurrent clients.
    func publishHistory(_ count: Int) async throws {
        let next = Locked<Int>(0)
        let failures = Locked<Int>(0)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<64 {
                group.addTask {
                    while true {
                        let i = next.update { value -> Int in
                            defer { value += 1 }; return value
                        }
                        guard i < count else { return }
                        let status = try await self.request(
                            .POST, "/beta/me/notifications", token: self.appToken,
                            body: historyBody(i), headers: [("X-UNS-ID", self.unsId)]
                        ).0
                        if status != 201 { failures.update { $0 += 1 } }
                    }
                }
            }
            try await group.waitForAll()
        }
        let failed = failures.value
        guard failed == 0 else { throw SupportError("\(failed) publishes were not acknowledged") }
    }
}

extension ServiceBench {
    /// Gives the history every state, as a user would have left it: of every 20, 6 read,
    /// 2 activated, 4 dismissed, 1 snoozed for a day, the rest unread.
    func spreadStates() async throws {
        let ids = try await feed().ids
        let snoozeEnd = ISOTime.format(Date().addingTimeInterval(86_400))
        var mutations: [String] = []
        for (i, id) in ids.enumerated() {
            let fields: String
            switch i % 20 {
            case 0..<6: fields = #""readState":"Read""#
            case 6..<8: fields = #""readState":"Read","userActionState":"Activated""#
            case 8..<12: fields = #""userActionState":"Dismissed""#
            case 12: fields = #""snoozedUntil":"\#(snoozeEnd)""#
            default: continue
            }
            mutations.append(#"{"id":"\#(id)",\#(fields),"changedAt":\#(ISOTime.millis(Date())),"mutationId":"\#(UUID().uuidString)"}"#)
        }
        try await sendBatches(mutations)
    }

    /// Sends mutations through the batch route, 300 to a request (under the body limit).
    func sendBatches(_ mutations: [String]) async throws {
        var start = 0
        while start < mutations.count {
            let chunk = mutations[start..<min(start + 300, mutations.count)]
            let (status, text) = try await request(
                .POST, "/v1/me/notifications/batch", token: userToken,
                body: #"{"mutations":[\#(chunk.joined(separator: ","))]}"#)
            guard status == 200 else { throw SupportError("batch answered \(status): \(text.prefix(300))") }
            start += chunk.count
        }
    }
}

/// One notification of the benchmark history: CI, deploys, alerts and messages in rotation.
func historyBody(_ i: Int) -> String {
    let kinds = [
        ("CI", "Build #\(i) failed on main", "3 tests failed in NottyStoreTests; first: window(view:) returned 199 rows"),
        ("Deploys", "Deploy \(i) of api to production finished", "42 pods rolled, 0 restarts, took 3m12s"),
        ("Alerts", "Disk 91% full on db-\(i % 17)", "Volume /var/lib/postgresql grew 4 GiB in the last hour"),
        ("Chat", "Message from Ana (#\(i))", "Can you look at the flaky test before the release? 🙏"),
    ]
    let (group, title, body) = kinds[i % kinds.count]
    let priority = i % 10 == 0 ? "High" : "Low"
    return
        #"{"appNotificationId":"h\#(i)","payload":{"visualContent":{"title":"\#(title)","body":"\#(body)"}},"groupName":"\#(group)","priority":"\#(priority)"}"#
}
