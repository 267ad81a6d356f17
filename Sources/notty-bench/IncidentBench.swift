import Foundation
import NottyCore
import NottyTestSupport

/// The incident doors (PROTOCOL.md §16) on one real `notty serve` (SQLite): PagerDuty triggers
/// and Opsgenie creates per second, each a new alert, beside the Graph publish route in the same
/// run (before and after, so drift shows), with `notty-server`'s CPU per event for each; then an
/// alert created → a connected device has it.
struct IncidentBench {
    let service: ServiceBench

    func run(quick: Bool) async throws {
        let seconds = quick ? 3.0 : 10.0
        let (status, text) = try await service.request(
            .POST, "/v1/me/subscriptions", token: service.userToken, body: #"{"targetHostName":"ci.example.com","platform":"webhook"}"#)
        guard status == 201, case .object(let object)? = JSONValue(jsonText: text), case .string(let url)? = object["webhookUrl"],
            let key = url.split(separator: "/").last
        else { throw SupportError("webhook subscription answered \(status): \(text)") }
        let pid = service.serve.process?.pid ?? 0
        print(
            "notty-bench incidents — real `notty serve` (SQLite, WAL, synchronous=FULL), 64 keep-alive clients, \(Int(seconds)) s each after 1 s of warm-up, \(ProcessInfo.processInfo.activeProcessorCount) cores"
        )

        /// Runs `load` and answers it with notty-server's CPU per answered request (µs).
        func measured(_ load: () async throws -> HTTPLoad.Result) async throws -> (HTTPLoad.Result, Double) {
            let before = cpuSeconds(pid: pid)
            let result = try await load()
            return (result, (cpuSeconds(pid: pid) - before) / Double(max(1, result.ok)) * 1e6)
        }
        func door(_ path: String, expect: Int, tag: String, headers: String = "", body: @escaping @Sendable (String) -> String) async throws
            -> HTTPLoad.Result
        {
            try await HTTPLoad.run(servers: [service.base], clients: 64, seconds: tag.hasPrefix("warm") ? 1 : seconds, expect: expect) {
                client, n, host in
                let text = body("\(tag)\(client)-\(n)")
                return
                    "POST \(path) HTTP/1.1\r\nHost: \(host)\r\n\(headers)Content-Type: application/json\r\nContent-Length: \(text.utf8.count)\r\n\r\n\(text)"
            }
        }
        let routingKey = String(key)
        let pagerDuty: @Sendable (String) -> String = { id in
            #"{"routing_key":"\#(routingKey)","event_action":"trigger","dedup_key":"\#(id)","payload":{"summary":"Disk full on \#(id)","source":"db1","severity":"critical"}}"#
        }
        let opsgenie: @Sendable (String) -> String = { id in #"{"message":"Disk full on \#(id)","alias":"\#(id)","priority":"P1"}"# }
        let genie = "Authorization: GenieKey \(routingKey)\r\n"

        _ = try await service.throughput(seconds: 1, tag: "warm")
        let (before, publishCPU) = try await measured { try await service.throughput(seconds: seconds, tag: "p1-") }
        _ = try await door("/v2/enqueue", expect: 202, tag: "warm-pd", body: pagerDuty)
        let (pd, pdCPU) = try await measured { try await door("/v2/enqueue", expect: 202, tag: "pd", body: pagerDuty) }
        _ = try await door("/v2/alerts", expect: 202, tag: "warm-og", headers: genie, body: opsgenie)
        let (og, ogCPU) = try await measured { try await door("/v2/alerts", expect: 202, tag: "og", headers: genie, body: opsgenie) }
        let (after, publishCPU2) = try await measured { try await service.throughput(seconds: seconds, tag: "p2-") }
        let publish = (before.rate + after.rate) / 2
        print(
            String(
                format:
                    "publish route (POST /beta/me/notifications): %.0f/s before, %.0f/s after (%d, %d non-201); CPU %.0f µs and %.0f µs a publish",
                before.rate, after.rate, before.other, after.other, publishCPU, publishCPU2))
        print(
            String(
                format:
                    "PagerDuty trigger (POST /v2/enqueue, a new dedup_key each): %.0f/s (%d non-202), %.0f%% of the publish route; CPU %.0f µs an event",
                pd.rate, pd.other, 100 * pd.rate / max(1, publish), pdCPU))
        print(
            String(
                format: "Opsgenie create (POST /v2/alerts, a new alias each): %.0f/s (%d non-202), %.0f%% of the publish route; CPU %.0f µs an event",
                og.rate, og.other, 100 * og.rate / max(1, publish), ogCPU))

        // An alert created → a connected device has it (rung, pulled, in the page), one after another.
        let samples = quick ? 100 : 400
        let shown = try await shownLatencies(count: samples) { alias in
            (
                "/v2/alerts", [("Authorization", "GenieKey \(routingKey)")],
                #"{"message":"Disk full on \#(alias)","alias":"\#(alias)","priority":"P1"}"#
            )
        }
        print("Opsgenie create → a connected device has it (rung, pulled, has it), \(samples) one after another: \(summary(shown))")
        let triggered = try await shownLatencies(count: samples) { alias in ("/v2/enqueue", [], pagerDuty(alias)) }
        print("PagerDuty trigger → a connected device has it, \(samples) one after another: \(summary(triggered))")
    }

    /// Milliseconds from each alert `request(alias)` makes (path, headers, body) to the pull of a
    /// device rung by the doorbell whose page has it.
    func shownLatencies(count: Int, request: (String) -> (String, [(String, String)], String)) async throws -> [Double] {
        let (rings, device) = doorbellDevice(port: service.port, token: service.userToken)
        defer { device.cancel() }
        try await Task.sleep(for: .milliseconds(300))
        var cursor = try await service.latestCursor(token: service.userToken)
        try await Task.sleep(for: .milliseconds(300))
        var iterator = rings.makeAsyncIterator()
        var latencies: [Double] = []
        for n in 0..<count {
            let alias = "shown-\(UUID().uuidString.prefix(8))-\(n)"
            let (path, headers, body) = request(alias)
            let start = ContinuousClock.now
            let (status, text) = try await service.request(.POST, path, token: "", body: body, headers: headers)
            guard status == 202 else { throw SupportError("\(path) answered \(status): \(text)") }
            var seen = false
            while !seen {
                _ = await iterator.next()
                let (pulled, page) = try await service.request(.GET, "/v1/me/notifications/changes?since=\(cursor)", token: service.userToken)
                guard pulled == 200, case .object(let object)? = JSONValue(jsonText: page), case .string(let next)? = object["cursor"],
                    case .array(let changes)? = object["changes"]
                else { throw SupportError("changes answered \(pulled)") }
                cursor = next
                seen = changes.contains { if case .object(let n) = $0, case .string(alias)? = n["appNotificationId"] { true } else { false } }
            }
            latencies.append((ContinuousClock.now - start).seconds * 1000)
        }
        return latencies
    }
}
