import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdWSClient
import Logging
import NIOCore
import NottyCore
import NottyRecords
import NottySecrets
import NottyService
import NottyTestSupport

/// Teams' figures (PROTOCOL.md §13.1) on one real `notty serve` (SQLite):
/// - the service's CPU per publish to teams of 1, 10 and 100 members against a personal publish;
/// - member A's dismiss → member B's device (rung, pulls, has it) against a device's own
///   dismiss → the same user's other device, in one run, alternated;
/// - a member's whole feed read (an initial sync's service side) of 100,000 notifications half
///   of them the team's, against 100,000 of their own.
struct TeamsBench {
    let service: ServiceBench
    let quick: Bool

    func run() async throws {
        print(
            "notty-bench teams — real `notty serve` (SQLite, WAL, synchronous=FULL), \(ProcessInfo.processInfo.activeProcessorCount) cores"
        )
        let storage = try await service.openStorage()
        guard let alice = try await storage.user(name: "alice") else { throw SupportError("no alice") }
        // Members (bob signs in; the others only belong), written through the storage API.
        let hash = Secrets.hashPassword("s3cret-pw", cost: 4)
        var members: [String] = []
        for n in 0..<100 {
            let user = UserRecord(
                id: UUID().uuidString.lowercased(), userName: n == 0 ? "bob" : "member-\(n)", displayName: "m\(n)", passwordHash: hash)
            try await storage.createUser(user)
            members.append(user.id)
        }
        let bobToken = try await service.token("grant_type=password&username=bob&password=s3cret-pw")
        // Teams of 1, 10 and 100 (alice, then members), each with its subscription for the app.
        var subscriptions: [Int: String] = [0: service.unsId]
        for size in [1, 10, 100] {
            let name = "bench-\(size)"
            try await storage.createTeam(id: Team.idPrefix + name, name: name, ownerId: alice.id, at: Date())
            for member in members.prefix(size - 1) {
                _ = try await storage.setTeamMember(team: name, userId: member, role: .member, at: Date(), limits: TeamLimits())
            }
            let (status, text) = try await service.request(
                .POST, "/v1/me/subscriptions", token: service.userToken, body: #"{"targetHostName":"ci.example.com","team":"\#(name)"}"#)
            guard status == 201, case .object(let o)? = JSONValue(jsonText: text), case .string(let uns)? = o["userNotificationSubscriptionId"] else {
                throw SupportError("team subscription answered \(status): \(text)")
            }
            subscriptions[size] = uns
        }
        try await storage.close()

        // 1. CPU per publish: personal (0) and teams of 1, 10, 100; alternated rounds.
        func rate(_ size: Int, tag: String) async throws -> (HTTPLoad.Result, Double) {
            let cpuBefore = cpuSeconds(processesNamed: "notty-server").seconds
            let result = try await HTTPLoad.run(servers: [service.base], clients: 64, seconds: quick ? 2 : 5, expect: 201) {
                [appToken = service.appToken, unsId = subscriptions[size]!] client, n, host in
                let body = #"{"appNotificationId":"\#(tag)-\#(client)-\#(n % 20)","payload":{"visualContent":{"title":"Disk full \#(n)"}}}"#
                return "POST /beta/me/notifications HTTP/1.1\r\nHost: \(host)\r\nAuthorization: Bearer \(appToken)\r\nX-UNS-ID: \(unsId)\r\n"
                    + "Content-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)"
            }
            let cpu = (cpuSeconds(processesNamed: "notty-server").seconds - cpuBefore) / Double(max(1, result.ok))
            return (result, cpu)
        }
        let sizes = [0, 1, 10, 100]
        for size in sizes { _ = try await rate(size, tag: "warm-\(size)") }
        var cpu: [Int: [Double]] = [:], rates: [Int: [Double]] = [:]
        var failed = 0
        for round in 0..<sizes.count {
            for step in 0..<sizes.count {
                let size = sizes[(round + step) % sizes.count]
                let (result, perPublish) = try await rate(size, tag: "size-\(size)")
                cpu[size, default: []].append(perPublish * 1_000_000)
                rates[size, default: []].append(result.rate)
                failed += result.other
            }
        }
        func mean(_ values: [Double]) -> Double { values.reduce(0, +) / Double(max(1, values.count)) }
        print(String(format: "publishes, 64 clients, %d s each, alternated %d rounds, %d non-201:", quick ? 2 : 5, sizes.count, failed))
        let personal = mean(cpu[0] ?? [])
        for size in sizes {
            let label = size == 0 ? "personal" : "team of \(size)"
            print(
                String(
                    format: "  %@: service CPU %.0f µs a publish (%.2f× personal), %.0f publishes/s", label, mean(cpu[size] ?? []),
                    mean(cpu[size] ?? []) / max(1, personal), mean(rates[size] ?? [])))
        }

        // 2. A's dismiss → B's device, against a device's own dismiss → its other device.
        let samples = quick ? 100 : 400
        let own = try await dismissLatencies(publishTo: subscriptions[0]!, dismisser: service.userToken, watcher: service.userToken, count: samples)
        let team = try await dismissLatencies(publishTo: subscriptions[10]!, dismisser: service.userToken, watcher: bobToken, count: samples)
        print("dismiss → another device's store (rung, pulled, has it), \(samples) one after another, team of 10:")
        print("  a device's own dismiss → the same user's other device: \(summary(own))")
        print("  member A's dismiss → member B's device: \(summary(team))")

        // 3. A member's whole feed: 100,000 of their own, against 50,000 own + 50,000 the team's.
        let count = quick ? 20_000 : 100_000
        try await feedComparison(count: count)
    }

    /// Publishes `count` notifications to `uns` and, one at a time, dismisses each with
    /// `dismisser` while a device of `watcher` is connected to the doorbell: milliseconds from
    /// the dismiss to the watcher's pull that has it.
    func dismissLatencies(publishTo uns: String, dismisser: String, watcher: String, count: Int) async throws -> [Double] {
        var ids: [String] = []
        for n in 0..<count {
            let body = #"{"appNotificationId":"latency-\#(uns.prefix(6))-\#(n)","payload":{"visualContent":{"title":"Check \#(n)"}}}"#
            let (status, text) = try await service.request(
                .POST, "/beta/me/notifications", token: service.appToken, body: body, headers: [("X-UNS-ID", uns)])
            guard status == 201, case .object(let o)? = JSONValue(jsonText: text), case .string(let id)? = o["id"] else {
                throw SupportError("publish answered \(status): \(text)")
            }
            ids.append(id)
        }
        let (rings, device) = doorbellDevice(port: service.port, token: watcher)
        defer { device.cancel() }
        try await Task.sleep(for: .milliseconds(300))
        var cursor = try await service.latestCursor(token: watcher)
        try await Task.sleep(for: .milliseconds(300))
        // Rings already sent (the publishes') are drained: only a ring after the dismiss counts.
        var iterator = rings.makeAsyncIterator()
        var latencies: [Double] = []
        for id in ids {
            let start = ContinuousClock.now
            let (status, _) = try await service.request(
                .PATCH, "/v1/me/notifications/\(id)", token: dismisser, body: #"{"userActionState":"Dismissed"}"#)
            guard status == 200 else { throw SupportError("dismiss answered \(status)") }
            var seen = false
            while !seen {
                _ = await iterator.next()
                let (pulled, text) = try await service.request(.GET, "/v1/me/notifications/changes?since=\(cursor)", token: watcher)
                guard pulled == 200, case .object(let page)? = JSONValue(jsonText: text), case .string(let next)? = page["cursor"],
                    case .array(let changes)? = page["changes"]
                else { throw SupportError("changes answered \(pulled)") }
                cursor = next
                seen = changes.contains { change in
                    guard case .object(let n) = change, case .string(id)? = n["id"], case .string("Dismissed")? = n["userActionState"] else {
                        return false
                    }
                    return true
                }
            }
            latencies.append((ContinuousClock.now - start).seconds * 1000)
        }
        return latencies
    }

    /// Carol reads 100,000 of her own; dave 50,000 of his own and 50,000 of a team's he is in.
    /// Written through the storage API (in batches of 1,000), then read page by page over HTTP.
    func feedComparison(count: Int) async throws {
        let storage = try await service.openStorage()
        let hash = Secrets.hashPassword("s3cret-pw", cost: 4)
        var ids: [String: String] = [:]
        for name in ["carol", "dave"] {
            let user = UserRecord(id: UUID().uuidString.lowercased(), userName: name, displayName: name, passwordHash: hash)
            try await storage.createUser(user)
            ids[name] = user.id
        }
        try await storage.createTeam(id: Team.idPrefix + "half", name: "half", ownerId: ids["dave"]!, at: Date())
        try await fillFeed(storage, owner: ids["carol"]!, count: count)
        try await fillFeed(storage, owner: ids["dave"]!, count: count / 2)
        try await fillFeed(storage, owner: Team.idPrefix + "half", count: count / 2, team: "half")
        try await storage.close()
        // The service reads the store's newest position when it starts: restarted, it knows
        // the rows written beside it (a cursor past what it knows is refused).
        await service.serve.stop()
        try await service.serve.start(port: service.port)
        let tokens = [
            "carol": try await service.token("grant_type=password&username=carol&password=s3cret-pw"),
            "dave": try await service.token("grant_type=password&username=dave&password=s3cret-pw"),
        ]
        func readAll(_ token: String) async throws -> (Double, Int) {
            let start = ContinuousClock.now
            var cursor = "0", rows = 0
            while true {
                let (status, text) = try await service.request(.GET, "/v1/me/notifications/changes?since=\(cursor)&limit=1000", token: token)
                guard status == 200, let page = try? ChangesPage(wire: Data(text.utf8)) else { throw SupportError("changes answered \(status)") }
                rows += page.changes.count
                cursor = page.cursor
                if !page.hasMore { break }
            }
            return ((ContinuousClock.now - start).seconds, rows)
        }
        var times: [String: [Double]] = [:]
        for round in 0..<4 {
            for name in round % 2 == 0 ? ["carol", "dave"] : ["dave", "carol"] {
                let (seconds, rows) = try await readAll(tokens[name]!)
                guard rows == count else { throw SupportError("\(name) read \(rows) of \(count)") }
                times[name, default: []].append(seconds)
            }
        }
        func mean(_ values: [Double]) -> Double { values.reduce(0, +) / Double(max(1, values.count)) }
        let own = mean(times["carol"] ?? []), half = mean(times["dave"] ?? [])
        print(
            String(
                format: "a member's whole feed over HTTP (pages of 1,000; an initial sync's service side), %d notifications, 4 rounds alternated:",
                count))
        print(
            String(
                format: "  all their own %.2f s (%@); half the team's %.2f s (%@): %+.1f%%", own,
                (times["carol"] ?? []).map { String(format: "%.2f", $0) }.joined(separator: "/"), half,
                (times["dave"] ?? []).map { String(format: "%.2f", $0) }.joined(separator: "/"), 100 * (half / own - 1)))
    }
}
