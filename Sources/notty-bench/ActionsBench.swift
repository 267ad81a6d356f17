import Foundation
import Hummingbird
import HummingbirdWSClient
import Logging
import NIOCore
import NottyCore
import NottySecrets
import NottyService
import NottyTestSupport

/// Actions' figures (PROTOCOL.md §12) on one real `notty serve` (SQLite) and a target on loopback:
/// - press → outcome on another device: a device presses (POST …/actions/1); another device,
///   connected to the doorbell, is rung and pulls the change with the outcome (`actionResults`);
/// - 1,000 presses of one action from 10 devices at once: how many requests reach the target;
/// - the publish rate with 3 actions on each notification against none.
struct ActionsBench {
    let service: ServiceBench
    let presses: Int

    /// The stand-in target: counts requests, answers 200 at once.
    final class Target: @unchecked Sendable {
        let hits = Locked<Int>(0)

        func application(port: Locked<Int?>) -> some ApplicationProtocol {
            let router = Router()
            router.post("/act/:n") { _, _ -> HTTPResponse.Status in
                self.hits.update { $0 += 1 }
                return .ok
            }
            return Application(
                router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
                onServerRunning: { channel in port.update { $0 = channel.localAddress?.port } })
        }
    }

    func run() async throws {
        let target = Target()
        let portBox = Locked<Int?>(nil)
        let server = target.application(port: portBox)
        let serverTask = Task { try await server.runService(gracefulShutdownSignals: []) }
        defer { serverTask.cancel() }
        let port = try await waitFor(.seconds(10)) { portBox.update { $0 } }
        print(
            "notty-bench actions — real `notty serve` (SQLite, WAL, synchronous=FULL), a target on loopback answering 200, \(ProcessInfo.processInfo.activeProcessorCount) cores"
        )

        @Sendable func actions(_ key: String) -> String {
            (1...3).map {
                #"{"action":"http","label":"Act \#($0)","url":"http://127.0.0.1:\#(port)/act/\#(key)","method":"POST","headers":{"Authorization":"Bearer s3cret"},"body":"{\"n\":\#($0)}"}"#
            }
            .joined(separator: ",")
        }
        func publish(_ key: String) async throws -> String {
            let body = #"{"appNotificationId":"\#(key)","payload":{"visualContent":{"title":"Deploy \#(key)?"}},"actions":[\#(actions(key))]}"#
            let (status, text) = try await service.request(
                .POST, "/beta/me/notifications", token: service.appToken, body: body, headers: [("X-UNS-ID", service.unsId)])
            guard status == 201, case .object(let o)? = JSONValue(jsonText: text), case .string(let id)? = o["id"] else {
                throw SupportError("publish answered \(status): \(text)")
            }
            return id
        }

        // 1. Press → the outcome on another device (rung, then its pull shows actionResults).
        let (rings, device) = doorbellDevice(port: service.port, token: service.userToken)
        defer { device.cancel() }
        try await Task.sleep(for: .milliseconds(300))
        var ids: [String] = []
        for n in 0..<presses { ids.append(try await publish("latency-\(n)")) }
        var cursor = try await latestCursor()
        var ringsIterator = rings.makeAsyncIterator()
        // The publishes' rings, already sent, are drained by reading until the cursor is current.
        try await Task.sleep(for: .milliseconds(500))
        var latencies: [Double] = []
        for id in ids {
            let start = ContinuousClock.now
            let (status, _) = try await service.request(.POST, "/v1/me/notifications/\(id)/actions/1", token: service.userToken, body: "{}")
            guard status == 200 else { throw SupportError("press answered \(status)") }
            // The other device: rung, pulls, and finds the outcome.
            var seen = false
            while !seen {
                _ = await ringsIterator.next()
                let (pulled, text) = try await service.request(.GET, "/v1/me/notifications/changes?since=\(cursor)", token: service.userToken)
                guard pulled == 200, case .object(let page)? = JSONValue(jsonText: text), case .string(let next)? = page["cursor"],
                    case .array(let changes)? = page["changes"]
                else { throw SupportError("changes answered \(pulled)") }
                cursor = next
                seen = changes.contains { change in
                    guard case .object(let n) = change, case .string(id)? = n["id"], case .array(let results)? = n["actionResults"] else {
                        return false
                    }
                    return !results.isEmpty
                }
            }
            latencies.append((ContinuousClock.now - start).seconds * 1000)
        }
        print(
            "press → outcome on another device (the press's answer, the doorbell's ring, the pull with actionResults), \(latencies.count) one after another: \(summary(latencies))"
        )

        // 2. 1,000 presses of one action from 10 devices at once.
        let contested = try await publish("contested")
        let before = target.hits.update { $0 }
        let answers = Locked<[String: Int]>([:])
        let started = ContinuousClock.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<10 {
                group.addTask {
                    for _ in 0..<100 {
                        let (status, text) = try await service.request(
                            .POST, "/v1/me/notifications/\(contested)/actions/2", token: service.userToken, body: "{}")
                        let word: String =
                            if case .object(let o)? = JSONValue(jsonText: text), case .string(let s)? = o["status"] { "\(status) \(s)" } else {
                                "\(status)"
                            }
                        answers.update { $0[word, default: 0] += 1 }
                    }
                }
            }
            try await group.waitForAll()
        }
        let elapsed = (ContinuousClock.now - started).seconds
        let requests = target.hits.update { $0 } - before
        let tally = answers.update { $0 }.sorted { $0.key < $1.key }.map { "\($0.value)× \($0.key)" }.joined(separator: ", ")
        print(
            String(
                format: "1,000 presses of one action from 10 devices at once (%.2f s): %d request(s) reached the target; answers: %@", elapsed,
                requests, tally))

        // 3. The publish rate with actions against none (64 clients, 5 s each, in place), and
        // against none with a body as long as the three actions' (what the bytes cost alone).
        enum Variant: String, CaseIterable { case none, one, three, padded }
        func rate(_ variant: Variant, tag: String) async throws -> HTTPLoad.Result {
            try await HTTPLoad.run(servers: [service.base], clients: 64, seconds: 5, expect: 201) {
                [appToken = service.appToken, unsId = service.unsId] client, n, host in
                let key = "\(tag)-\(client)-\(n % 20)"
                let extra =
                    switch variant {
                    case .none: ""
                    case .one: #","actions":[{"action":"http","label":"Silence 1h","url":"http://127.0.0.1:\#(port)/act/\#(key)","clear":true}]"#
                    case .three: #","actions":[\#(actions(key))]"#
                    case .padded: #","payload2":{"visualContent":{"body":"\#(String(repeating: "x", count: actions(key).utf8.count))"}}"#
                    }
                let body = #"{"appNotificationId":"\#(key)","payload":{"visualContent":{"title":"Deploy \#(n)?"}}\#(extra)}"#
                return "POST /beta/me/notifications HTTP/1.1\r\nHost: \(host)\r\nAuthorization: Bearer \(appToken)\r\nX-UNS-ID: \(unsId)\r\n"
                    + "Content-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)"
            }
        }
        for variant in Variant.allCases { _ = try await rate(variant, tag: "warm-\(variant)") }
        // Alternated, four rounds, each starting one later: the machine's drift falls on each alike.
        var rates: [Variant: [HTTPLoad.Result]] = [:]
        let order = Variant.allCases
        for round in 0..<order.count {
            for step in 0..<order.count {
                let variant = order[(round + step) % order.count]
                rates[variant, default: []].append(try await rate(variant, tag: variant.rawValue))
            }
        }
        func mean(_ variant: Variant) -> Double { (rates[variant] ?? []).map(\.rate).reduce(0, +) / Double(order.count) }
        func runs(_ variant: Variant) -> String { (rates[variant] ?? []).map { String(format: "%.0f", $0.rate) }.joined(separator: "/") }
        func share(_ variant: Variant, of base: Variant) -> Double { 100 * mean(variant) / max(1, mean(base)) }
        let failed = rates.values.flatMap { $0 }.map(\.other).reduce(0, +)
        print(String(format: "publishes/s, 64 clients, 5 s each, alternated 4 rounds (1,280 ids published again and again), %d non-201:", failed))
        print(
            String(
                format: "  none %@ (mean %.0f); 1 action (Silence 1h) %@ (mean %.0f, %.1f%% of none)", runs(.none), mean(.none), runs(.one),
                mean(.one), share(.one, of: .none)))
        print(
            String(
                format:
                    "  3 actions with headers and a body %@ (mean %.0f, %.1f%% of none); none with as many bytes (an unknown member) %@ (mean %.0f, %.1f%% of none): 3 actions are %.1f%% of the same bytes without them",
                runs(.three), mean(.three), share(.three, of: .none), runs(.padded), mean(.padded), share(.padded, of: .none),
                share(.three, of: .padded)))

        // 4. What sealing costs a publish with 3 actions (secrets at rest): the stored form
        // sealed against the same form clear, on this thread, beside the service's CPU per
        // such publish (notty-server's user + system time over one 5 s run).
        let cpuBefore = cpuSeconds(processesNamed: "notty-server").seconds
        let measured = try await rate(.three, tag: "cpu")
        let cpuPerPublish = (cpuSeconds(processesNamed: "notty-server").seconds - cpuBefore) / Double(max(1, measured.ok))
        guard let list = JSONValue(jsonText: "[\(actions("k"))]") else { throw SupportError("the bench's actions are not JSON") }
        let three = try NotificationAction.parse(json: list)
        let box = SecretBox.ephemeral()
        func perCall(_ body: () -> String?) -> Double {
            let rounds = 20_000
            let started = ContinuousClock.now
            var bytes = 0
            for _ in 0..<rounds { bytes &+= body()?.utf8.count ?? 0 }
            precondition(bytes > 0)
            return (ContinuousClock.now - started).seconds / Double(rounds)
        }
        _ = perCall { box.storedActions(three) }
        let clear = perCall { NotificationAction.storedText(three) }
        let sealed = perCall { box.storedActions(three) }
        print(
            String(
                format:
                    "sealing 3 actions (URL, method, headers, body each): stored form %.1f µs sealed, %.1f µs clear, +%.1f µs; notty-server's CPU per publish with 3 actions %.0f µs (%d publishes): sealing adds %.1f%%",
                sealed * 1e6, clear * 1e6, (sealed - clear) * 1e6, cpuPerPublish * 1e6, measured.ok, 100 * (sealed - clear) / cpuPerPublish))
    }

    private func latestCursor() async throws -> String {
        var cursor = "0"
        while true {
            let (status, text) = try await service.request(.GET, "/v1/me/notifications/changes?since=\(cursor)&limit=5000", token: service.userToken)
            guard status == 200, case .object(let page)? = JSONValue(jsonText: text), case .string(let next)? = page["cursor"] else {
                throw SupportError("changes answered \(status)")
            }
            cursor = next
            if case .bool(true)? = page["hasMore"] { continue }
            return cursor
        }
    }
}
