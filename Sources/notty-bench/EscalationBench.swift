import Foundation
import Hummingbird
import NIOCore
import NottyCore
import NottyPOSIX
import NottyRecords
import NottyService
import NottyTestSupport

/// Escalation's figures (PROTOCOL.md §11) on one real `notty serve` (SQLite): 10,000 High
/// notifications pending escalation across 1,000 users (each with a rule: after 30 s, to a
/// webhook served by this process), then
/// - the publish rate with 10,000 pending against none (Low publishes to the same users, so
///   that each rate pays for planning the same way and only the pending rows differ);
/// - the due-time lag: a webhook's arrival against the notification's `createdDateTime` + 30 s;
/// - the service's CPU per escalation while they are sent;
/// - dismiss → retraction: a PATCH (Dismissed) to the `handled` event's arrival, one after another.
///
/// With `teams` (`notty-bench oncall`, PROTOCOL.md §13.2) the same figures for teams: 1,000 teams of
/// three with a day rotation each and a policy (after 30 s → `oncall`), every member's contact
/// the webhook, the High notifications published to the teams, and the dismiss → retraction
/// measured on a team's page taken back.
struct EscalationBench {
    let service: ServiceBench
    let users: Int
    let pending: Int
    var teams = false
    let after = 30

    /// What the stand-in webhook received: each event's kind, notification id and arrival.
    final class Receiver: @unchecked Sendable {
        struct Arrival: Sendable {
            var event: String
            var id: String
            var created: Date
            var at: Date
        }
        let arrivals = Locked<[Arrival]>([])
        let stream = AsyncStream<Arrival>.makeStream()

        /// The receiver; `port` is set once it listens.
        func application(port: Locked<Int?>) -> some ApplicationProtocol {
            let router = Router()
            router.post("/hook") { request, _ -> HTTPResponse.Status in
                let body = try await request.body.collect(upTo: 1 << 20)
                let at = Date()
                guard case .object(let object)? = JSONParser.parse(Data(buffer: body)), case .string(let event)? = object["event"],
                    case .object(let n)? = object["notification"], case .string(let id)? = n["id"],
                    case .string(let created)? = n["createdDateTime"], let createdAt = ISOTime.parse(created)
                else { return .badRequest }
                let arrival = Arrival(event: event, id: id, created: createdAt, at: at)
                self.arrivals.update { $0.append(arrival) }
                self.stream.continuation.yield(arrival)
                return .ok
            }
            return Application(
                router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
                onServerRunning: { channel in port.update { $0 = channel.localAddress?.port } })
        }

        func count(_ event: String, ids: Set<String>) -> Int { arrivals.update { $0.filter { $0.event == event && ids.contains($0.id) }.count } }
    }

    func run() async throws {
        let receiver = Receiver()
        let portBox = Locked<Int?>(nil)
        let server = receiver.application(port: portBox)
        let serverTask = Task { try await server.runService(gracefulShutdownSignals: []) }
        defer { serverTask.cancel() }
        let port = try await waitFor(.seconds(10)) { portBox.update { $0 } }
        let hook = "webhook:http://127.0.0.1:\(port)/hook"

        print(
            teams
                ? "notty-bench oncall — real `notty serve` (SQLite, WAL, synchronous=FULL), \(users) teams of 3 with a day rotation and a policy (after \(after) s → oncall, each member's contact a webhook on loopback), \(pending) High team notifications pending, \(ProcessInfo.processInfo.activeProcessorCount) cores"
                : "notty-bench escalation — real `notty serve` (SQLite, WAL, synchronous=FULL), \(users) users each with a rule (after \(after) s → a webhook on loopback), \(pending) High notifications pending, \(ProcessInfo.processInfo.activeProcessorCount) cores"
        )
        let subscriptions = try await service.addUsers(count: users)
        let storage = try await service.openStorage()
        let now = Date()
        let alice = try await storage.user(name: "alice")
        // Where the High notifications go: each user's own, or each team's.
        var targets = (subscriptions, service.unsId)
        if teams {
            let ids = try await Self.userIds(storage, count: users) + [alice?.id ?? ""]
            targets = try await Self.makeTeams(storage, userIds: ids, hook: hook, after: after, now: now)
        } else {
            for (index, user) in try await Self.userIds(storage, count: users).enumerated() {
                _ = try await storage.insertEscalationRule(
                    EscalationRule(id: "bench-\(index)", name: "bench", afterSeconds: after, targets: [hook], createdDateTime: now), userId: user,
                    limit: 20)
            }
            if let alice {
                _ = try await storage.insertEscalationRule(
                    EscalationRule(id: "bench-alice", name: "retract", afterSeconds: 5, targets: [hook], createdDateTime: now), userId: alice.id,
                    limit: 20)
            }
        }
        try await storage.close()
        let (highSubscriptions, aliceSubscription) = targets
        // Restarted, the service knows every user's rules from its first moment.
        await service.serve.stop()
        try await service.serve.start(port: service.port, extraArguments: ServiceBench.unlimited)
        let pid = service.serve.process!.pid

        // Low publishes of 64 × 20 ids, again and again (published again in place): the store does
        // not grow from one measurement to the next, so only the pending rows differ.
        func lowRate(_ tag: String) async throws -> HTTPLoad.Result {
            try await HTTPLoad.run(servers: [service.base], clients: 64, seconds: 5, expect: 201) { [appToken = service.appToken] client, n, host in
                let body =
                    #"{"appNotificationId":"low-\#(client)-\#(n % 20)","priority":"Low","payload":{"visualContent":{"title":"Low \#(n) \#(tag)"}}}"#
                return
                    "POST /beta/me/notifications HTTP/1.1\r\nHost: \(host)\r\nAuthorization: Bearer \(appToken)\r\nX-UNS-ID: \(subscriptions[(client * 20 + n % 20) % subscriptions.count])\r\n"
                    + "Content-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)"
            }
        }
        _ = try await HTTPLoad.run(servers: [service.base], clients: 16, seconds: 1, expect: 201) { [appToken = service.appToken] client, n, host in
            let body = #"{"appNotificationId":"warm\#(client)-\#(n)","priority":"Low","payload":{"visualContent":{"title":"warm"}}}"#
            return
                "POST /beta/me/notifications HTTP/1.1\r\nHost: \(host)\r\nAuthorization: Bearer \(appToken)\r\nX-UNS-ID: \(subscriptions.randomElement()!)\r\n"
                + "Content-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)"
        }
        let none = try await lowRate("none")

        // The pending ones: High, spread over every user, published 64 at a time.
        let ids = Locked<[String]>([])
        let publishStart = Date()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in 0..<64 {
                group.addTask {
                    var n = worker
                    while n < pending {
                        let body =
                            #"{"appNotificationId":"high-\#(n)","priority":"High","payload":{"visualContent":{"title":"Alert \#(n)","body":"unhandled"}}}"#
                        let (status, text) = try await service.request(
                            .POST, "/beta/me/notifications", token: service.appToken, body: body,
                            headers: [("X-UNS-ID", highSubscriptions[n % highSubscriptions.count])])
                        guard status == 201, case .object(let o)? = JSONValue(jsonText: text), case .string(let id)? = o["id"] else {
                            throw SupportError("publish answered \(status): \(text)")
                        }
                        ids.update { $0.append(id) }
                        n += 64
                    }
                }
            }
            try await group.waitForAll()
        }
        let published = Date().timeIntervalSince(publishStart)
        // Pending, not being planned: the burst's planning settles first (they are due 30 s after).
        try await Task.sleep(for: .seconds(3))
        let withPending = try await lowRate("pending")

        // Due: each is sent `after` seconds after it arrived.
        let pendingIds = Set(ids.update { $0 })
        let firstDue = publishStart.addingTimeInterval(TimeInterval(after))
        let untilDue = firstDue.timeIntervalSinceNow - 0.5
        if untilDue > 0 { try await Task.sleep(for: .milliseconds(Int(untilDue * 1000))) }
        let cpuBefore = cpuSeconds(pid: pid)
        let clockBefore = Date()
        try await Self.until(.seconds(Double(after) + 300)) { receiver.count("escalated", ids: pendingIds) >= pendingIds.count }
        let cpu = cpuSeconds(pid: pid) - cpuBefore
        let window = Date().timeIntervalSince(clockBefore)
        let lags = receiver.arrivals.update { $0 }.filter { $0.event == "escalated" && pendingIds.contains($0.id) }
            .map { $0.at.timeIntervalSince($0.created.addingTimeInterval(TimeInterval(after))) * 1000 }
        let noneAgain = try await lowRate("again")
        print(
            String(
                format:
                    "publishing %d High (64 at a time): %.1f s, then 3 s to settle. Low publishes to the same users (1,280 ids published again and again), 64 clients, 5 s each:",
                pending, published))
        print(
            String(
                format:
                    "  none pending (before): %.0f/s (%d non-201); %d pending: %.0f/s (%d non-201); none pending (after they were sent): %.0f/s (%d non-201)",
                none.rate, none.other, pending, withPending.rate, withPending.other, noneAgain.rate, noneAgain.other))
        print(
            String(
                format: "  with %d pending against none: %.1f%% (against the mean of before and after)", pending,
                100 * withPending.rate / max(1, (none.rate + noneAgain.rate) / 2)))
        print("due-time lag (webhook arrival − (createdDateTime + \(after) s)), \(lags.count) escalations: \(summary(lags))")
        print(
            String(
                format: "service CPU while they were sent: %.2f s over %.1f s = %.3f ms per escalation", cpu, window,
                cpu * 1000 / Double(max(1, lags.count))))

        // Dismiss → retraction: alice's own, escalated after 5 s, dismissed one after another.
        let count = 200
        var aliceIds: [String] = []
        for n in 0..<count {
            let body = #"{"appNotificationId":"retract-\#(n)","priority":"High","payload":{"visualContent":{"title":"Retract \#(n)"}}}"#
            let (status, text) = try await service.request(
                .POST, "/beta/me/notifications", token: service.appToken, body: body, headers: [("X-UNS-ID", aliceSubscription)])
            guard status == 201, case .object(let o)? = JSONValue(jsonText: text), case .string(let id)? = o["id"] else {
                throw SupportError("publish answered \(status)")
            }
            aliceIds.append(id)
        }
        let aliceSet = Set(aliceIds)
        try await Self.until(.seconds(120)) { receiver.count("escalated", ids: aliceSet) >= count }
        var iterator = receiver.stream.stream.makeAsyncIterator()
        var retractions: [Double] = []
        for (n, id) in aliceIds.enumerated() {
            let start = ContinuousClock.now
            let body = #"{"userActionState":"Dismissed","mutationId":"bench-\#(n)"}"#
            let (status, _) = try await service.request(.PATCH, "/v1/me/notifications/\(id)", token: service.userToken, body: body)
            guard status == 200 else { throw SupportError("dismiss answered \(status)") }
            while let arrival = await iterator.next() {
                if arrival.event == "handled" && arrival.id == id { break }
            }
            let elapsed = ContinuousClock.now - start
            retractions.append(elapsed.seconds * 1000)
        }
        print("dismiss (PATCH) → retraction (the handled event at the webhook), \(retractions.count) one after another: \(summary(retractions))")
    }

    /// Waits until `done`, looking every 50 ms (not more often: the count takes CPU the service
    /// would otherwise have).
    static func until(_ timeout: Duration, _ done: () -> Bool) async throws {
        let start = ContinuousClock.now
        while !done() {
            guard ContinuousClock.now - start < timeout else { throw SupportError("timed out after \(timeout)") }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    /// `userIds.count - 1` teams of three (user n owns team n, with users n+1 and n+2), each
    /// with a day rotation of the three begun an hour ago, a policy (after `after` s → `oncall`)
    /// and an app subscription; every user's contact is `hook`. The last user (alice) is alone
    /// on call in a team of her own whose policy pages after 5 s. Answers the teams'
    /// subscriptions and alice's team's.
    static func makeTeams(_ storage: any ServiceStorage, userIds: [String], hook: String, after: Int, now: Date) async throws -> ([String], String) {
        let count = userIds.count - 1
        var subscriptions: [String] = []
        func team(_ name: String, owner: Int, members: [Int], after: Int) async throws -> String {
            let id = Team.idPrefix + name
            try await storage.createTeam(id: id, name: name, ownerId: userIds[owner], at: now)
            for member in members where member != owner {
                _ = try await storage.setTeamMember(team: name, userId: userIds[member], role: .member, at: now, limits: TeamLimits())
            }
            var names: [String] = []
            for member in [owner] + members where !names.contains(member == count ? "alice" : "bench-user-\(member)") {
                names.append(member == count ? "alice" : "bench-user-\(member)")
            }
            let schedule = OnCallSchedule(rotation: names, shift: ShiftLength(count: 1, unit: .days), start: now - 3600, zone: "UTC")
            let json = String(decoding: try NottyJSON.encoder.encode(schedule), as: UTF8.self)
            try await storage.updateOnCallSchedule(teamId: id, at: now) { _ in json }
            _ = try await storage.insertEscalationRule(
                EscalationRule(id: "page-\(name)", name: "page", afterSeconds: after, targets: ["oncall"], createdDateTime: now), userId: id,
                limit: 20)
            let subscription = SubscriptionRecord(
                id: UUID().uuidString.lowercased(), userId: id, targetHostName: "ci.example.com", deviceId: UUID().uuidString.lowercased(),
                deviceName: nil, platform: nil, createdAt: now, expiresAt: now.addingTimeInterval(86_400))
            try await storage.insertSubscription(subscription)
            return subscription.id
        }
        for (n, user) in userIds.enumerated() {
            _ = try await storage.insertContact(Contact(id: "ct-\(n)", target: hook, created: now), userId: user, limit: Contact.maxPerUser)
        }
        for n in 0..<count {
            subscriptions.append(try await team("bench-\(n)", owner: n, members: [(n + 1) % count, (n + 2) % count], after: after))
        }
        let alices = try await team("bench-alice", owner: count, members: [], after: 5)
        return (subscriptions, alices)
    }

    /// The ids of the bench's users (`bench-user-N`), in order.
    static func userIds(_ storage: any ServiceStorage, count: Int) async throws -> [String] {
        var ids: [String] = []
        for n in 0..<count {
            if let user = try await storage.user(name: "bench-user-\(n)") { ids.append(user.id) }
        }
        return ids
    }
}
