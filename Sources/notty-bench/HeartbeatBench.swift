import Foundation
import NottyCore
import NottySecrets
import NottyService
import NottyTestSupport

/// Heartbeats (PROTOCOL.md §16.3) on one real `notty serve` (SQLite): 10,000 heartbeats written
/// into its store beside it (through the storage API, as `notty admin` opens it; the service's
/// 100-a-feed rule is the API's), 1,000 of them due at one moment, then
/// - the lateness: each late notification's `createdDateTime` against its due time;
/// - the service's idle CPU with 10,000 heartbeats waiting against none (the job's look every
///   250 ms reads the due index, not the heartbeats);
/// - pings of the late ones (each dismisses its notification everywhere), 16 at once;
/// - steady: as many again, a tenth of them due each second for 10 s: lateness and CPU a
///   heartbeat, then the same beside the publish route, whose rate is measured alone before.
struct HeartbeatBench {
    let service: ServiceBench

    func run(quick: Bool) async throws {
        let total = quick ? 2_000 : 10_000, burst = quick ? 200 : 1_000, idle = quick ? 4.0 : 10.0
        let pid = service.serve.process?.pid ?? 0
        print(
            "notty-bench heartbeats — real `notty serve` (SQLite, WAL, synchronous=FULL), \(total) heartbeats of one user, \(burst) due at once, \(ProcessInfo.processInfo.activeProcessorCount) cores"
        )
        func idleCPU() async throws -> Double {
            let before = cpuSeconds(pid: pid)
            try await Task.sleep(for: .seconds(idle))
            return (cpuSeconds(pid: pid) - before) / idle * 100
        }
        let baseline = try await idleCPU()

        var storage = try await service.openStorage()
        guard let alice = try await storage.user(name: "alice") else { throw SupportError("no user alice") }
        func write(_ range: Range<Int>, name: String = "job", due: @escaping @Sendable (Int) -> Date) async throws -> [String] {
            let now = Date()
            let storage = storage
            return try await withThrowingTaskGroup(of: [String].self) { group in
                for lane in 0..<32 {
                    group.addTask {
                        var tokens: [String] = []
                        for n in range where n % 32 == lane {
                            let token = Secrets.newToken()
                            let record = HeartbeatRecord(
                                id: "hb-bench-\(name)-\(n)", ownerId: alice.id, name: "\(name)-\(n)", tokenHash: Secrets.tokenHash(token),
                                every: 3600,
                                grace: 0, priority: .low, message: nil, createdBy: alice.id, created: now, due: due(n))
                            guard try await storage.insertHeartbeat(record, limit: .max) == .added else {
                                throw SupportError("heartbeat \(n) not added")
                            }
                            tokens.append(token)
                        }
                        return tokens
                    }
                }
                return try await group.reduce(into: []) { $0 += $1 }
            }
        }
        _ = try await write(burst..<total) { _ in Date().addingTimeInterval(3600) }
        // Due 12 s on, as the API's shortest `every` (10 s) would have them: the service's job
        // looks at the earliest due time every 5 s at the most, and learns of these (written
        // beside it, as another instance would) before they are due.
        let dueAt = ISOTime.truncated(Date().addingTimeInterval(12))
        let lateTokens = try await write(0..<burst) { _ in dueAt }
        try await storage.close()

        /// Pages the change feed on from `cursor` until `take` has taken `expected` of the
        /// heartbeats' notifications (it answers whether it took one), within 2 minutes.
        var cursor = "0"
        func announced(_ expected: Int, _ what: String, take: (UserNotification) -> Bool) async throws {
            var taken = 0
            let deadline = Date().addingTimeInterval(120)
            while taken < expected, Date() < deadline {
                let (status, text) = try await service.request(
                    .GET, "/v1/me/notifications/changes?since=\(cursor)&limit=5000", token: service.userToken)
                guard status == 200 else { throw SupportError("changes answered \(status)") }
                let page = try NottyJSON.decoder.decode(ChangesPage.self, from: Data(text.utf8))
                for change in page.changes where change.targetHostName == Heartbeat.hostName && take(change) { taken += 1 }
                cursor = page.cursor
                if taken < expected && !page.hasMore { try await Task.sleep(for: .milliseconds(100)) }
            }
            guard taken == expected else { throw SupportError("\(taken) of \(expected) \(what) announced in 2 minutes") }
        }

        // Every late one published: lateness against the due time.
        var created: [String: Date] = [:]
        try await announced(burst, "late heartbeats") { created.updateValue($0.createdDateTime, forKey: $0.id) == nil }
        let lateness = created.values.map { $0.timeIntervalSince(dueAt) * 1000 }
        let span = (created.values.max() ?? dueAt).timeIntervalSince(created.values.min() ?? dueAt)
        print(
            "late notifications after their due time: \(summary(lateness)); \(burst) announced within \(String(format: "%.2f", span)) s of each other"
        )

        let waiting = try await idleCPU()
        print(
            String(
                format: "idle notty-server CPU over %.0f s: %.2f%% of a core with %d heartbeats waiting, %.2f%% with none", idle, waiting,
                total - burst, baseline))

        // Pings of the late ones: each records the ping and dismisses its notification.
        let started = Date()
        let failures = try await withThrowingTaskGroup(of: Int.self) { group in
            for lane in 0..<16 {
                group.addTask {
                    var failed = 0
                    for (n, token) in lateTokens.enumerated() where n % 16 == lane {
                        let (status, _) = try await service.request(.GET, "/v1/heartbeats/\(token)", token: "")
                        if status != 200 { failed += 1 }
                    }
                    return failed
                }
            }
            return try await group.reduce(0, +)
        }
        let elapsed = Date().timeIntervalSince(started)
        print(
            String(
                format: "%d pings of late heartbeats (each dismisses its notification), 16 at once: %.0f/s (%d not 200)", burst,
                Double(burst) / elapsed, failures))

        // Steady: `total` more heartbeats, a tenth of them due each second for 10 s, alone and
        // then beside the publish route (measured alone just before).
        func steady(_ name: String, load: Bool) async throws -> (lateness: [Double], cpu: Double, publish: HTTPLoad.Result?) {
            storage = try await service.openStorage()
            let start = ISOTime.truncated(Date().addingTimeInterval(14))
            _ = try await write(0..<total, name: name) { n in start.addingTimeInterval(Double(n % 10)) }
            try await storage.close()
            try await Task.sleep(for: .seconds(max(0, start.timeIntervalSinceNow - 0.5)))
            let before = cpuSeconds(pid: pid), began = Date()
            let publish = load ? try await service.throughput(seconds: 10, tag: "hb-\(name)-") : nil
            var lateness: [Double] = []
            try await announced(total, "steady heartbeats") { change in
                // "NAME-N: no ping for …": due at start + N % 10 seconds.
                guard let title = change.payload.visualContent?.title, title.hasPrefix(name + "-"),
                    let n = Int(title.dropFirst(name.count + 1).prefix { $0.isNumber })
                else { return false }
                lateness.append(change.createdDateTime.timeIntervalSince(start.addingTimeInterval(Double(n % 10))) * 1000)
                return true
            }
            let cpu = cpuSeconds(pid: pid) - before - baseline / 100 * Date().timeIntervalSince(began)
            return (lateness, cpu, publish)
        }
        let alone = try await steady("steady", load: false)
        print(
            "\(total) heartbeats, \(total / 10) due each second for 10 s: lateness \(summary(alone.lateness)); notty-server CPU "
                + String(format: "%.0f µs a heartbeat (over idle)", alone.cpu / Double(total) * 1e6))
        let publishAlone = try await service.throughput(seconds: 10, tag: "hb-alone-")
        let beside = try await steady("beside", load: true)
        let publishBeside = beside.publish?.rate ?? 0
        print(
            "the same beside the publish route (64 clients): lateness \(summary(beside.lateness)); "
                + String(
                    format: "publishes %.0f/s beside, %.0f/s alone (%.0f%%)", publishBeside, publishAlone.rate,
                    100 * publishBeside / max(1, publishAlone.rate)))
    }
}
