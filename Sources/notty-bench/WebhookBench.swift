import Foundation
import NottyCore
import NottyTestSupport

/// Issue 17's figures, on one real `notty serve` (SQLite): webhook requests per second with a
/// one-alert Alertmanager body and with a 100-alert group (and the notifications per second
/// they make), beside the same server's publish route in the same run (measured before and
/// after, so drift shows); then webhook → doorbell frame latency.
struct WebhookBench {
    let service: ServiceBench

    /// An Alertmanager group of `count` firing alerts, each with a fingerprint of its own (so
    /// each is a new notification, as the publish benchmark's keys are).
    static func alerts(_ key: String, count: Int) -> String {
        let alerts = (0..<count).map { i in
            #"{"status":"firing","labels":{"alertname":"ProbeFailed","instance":"host-\#(i)","severity":"warning"},"annotations":{"summary":"host-\#(i) is down"},"#
                + #""startsAt":"2026-11-23T10:00:00Z","endsAt":"0001-01-01T00:00:00Z","generatorURL":"http://prometheus.example:9090/graph","fingerprint":"\#(key)-\#(i)"}"#
        }
        return
            #"{"version":"4","groupKey":"{}:{alertname=\"ProbeFailed\"}","status":"firing","receiver":"notty","groupLabels":{"alertname":"ProbeFailed"},"#
            + #""commonLabels":{},"commonAnnotations":{},"externalURL":"http://alertmanager.example:9093","alerts":[\#(alerts.joined(separator: ","))]}"#
    }

    func run(quick: Bool) async throws {
        let seconds = quick ? 3.0 : 10.0
        let (status, text) = try await service.request(
            .POST, "/v1/me/subscriptions", token: service.userToken,
            body: #"{"targetHostName":"ci.example.com","platform":"webhook"}"#)
        guard status == 201, case .object(let object)? = JSONValue(jsonText: text), case .string(let url)? = object["webhookUrl"],
            let range = url.range(of: "/v1/hooks/")
        else { throw SupportError("webhook subscription answered \(status): \(text)") }
        let path = String(url[range.lowerBound...])
        print(
            "notty-bench webhooks — real `notty serve` (SQLite, WAL, synchronous=FULL), 64 keep-alive clients, \(Int(seconds)) s each after 1 s of warm-up, \(ProcessInfo.processInfo.activeProcessorCount) cores"
        )

        func hooks(alerts: Int, tag: String, seconds: Double) async throws -> HTTPLoad.Result {
            try await HTTPLoad.run(servers: [service.base], clients: 64, seconds: seconds, expect: 200) { client, n, host in
                let body = Self.alerts("\(tag)\(client)-\(n)", count: alerts)
                return "POST \(path) HTTP/1.1\r\nHost: \(host)\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)"
            }
        }
        _ = try await service.throughput(seconds: 1, tag: "warm")
        let before = try await service.throughput(seconds: seconds, tag: "p1-")
        _ = try await hooks(alerts: 1, tag: "warm", seconds: 1)
        let one = try await hooks(alerts: 1, tag: "one", seconds: seconds)
        let group = try await hooks(alerts: 100, tag: "group", seconds: seconds)
        let after = try await service.throughput(seconds: seconds, tag: "p2-")
        print(
            String(
                format: "publish route (POST /beta/me/notifications): %.0f/s before, %.0f/s after (%d, %d non-201)", before.rate, after.rate,
                before.other, after.other))
        print(
            String(
                format: "webhook, one-alert Alertmanager body: %.0f requests/s = %.0f notifications/s (%d non-200); %.0f%% of the publish route",
                one.rate, one.rate, one.other, 100 * one.rate / max(1, (before.rate + after.rate) / 2)))
        print(
            String(format: "webhook, 100-alert group: %.1f requests/s = %.0f notifications/s (%d non-200)", group.rate, group.rate * 100, group.other)
        )

        let count = quick ? 200 : 1000
        let bell = try await service.doorbellLatencies(count: count, tag: "bell") { key in
            try await service.request(.POST, path, token: "", body: Self.alerts(key, count: 1)).0
        }
        print(
            String(
                format: "webhook (one alert) → doorbell frame (%d, one after another): p50 %.2f ms, p99 %.2f ms", bell.count, percentile(bell, 50),
                percentile(bell, 99)))
    }
}
