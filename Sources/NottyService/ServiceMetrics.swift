import Foundation
import Prometheus
import Synchronization

/// The service's Prometheus metrics (`GET /metrics`).
public final class ServiceMetrics: Sendable {
    public let registry = PrometheusCollectorRegistry()
    package let publishes: Counter
    let mutations: Counter
    package let doorbellFrames: Counter
    package let doorbellConnections: Gauge
    let storageErrors: Counter
    let rateLimited: Counter
    /// Password hashes computed (sign-ins): a refused guess computes none.
    let passwordHashes: Counter
    /// Sign-ins refused with 429 because their user name, client id or address is locked.
    let lockedOut: Counter
    package let requestDuration: DurationHistogram
    /// Escalation deliveries (PROTOCOL.md §11) by how they went, and the backlog.
    package let escalationDelivered: Counter
    package let escalationRetried: Counter
    package let escalationFailed: Counter
    package let escalationPending: Gauge
    package let escalationFailing: Gauge
    /// Actions run (PROTOCOL.md §12) by how they went.
    let actionsDone: Counter
    let actionsFailed: Counter
    /// Web Push messages sent to push services (PROTOCOL.md §14), whatever they answered.
    package let webPushes: Counter

    public init() {
        func name(_ metric: String, _ unit: String, _ help: String) -> MetricNameDescriptor {
            MetricNameDescriptor(namespace: "notty", metricName: metric, unitName: unit, helpText: help)
        }
        publishes = registry.makeCounter(descriptor: name("publishes", "total", "Notifications published (new or re-published)."))
        mutations = registry.makeCounter(descriptor: name("mutations", "total", "State changes applied from devices (PATCH, DELETE, batch items)."))
        doorbellFrames = registry.makeCounter(descriptor: name("doorbell_frames", "total", "Doorbell frames sent to devices."))
        doorbellConnections = registry.makeGauge(descriptor: name("doorbell", "connections", "Devices connected to the doorbell now."))
        storageErrors = registry.makeCounter(descriptor: name("storage_errors", "total", "Requests answered 503 because storage failed."))
        rateLimited = registry.makeCounter(descriptor: name("rate_limited", "total", "Publishes refused with 429."))
        passwordHashes = registry.makeCounter(descriptor: name("password_hashes", "total", "Password hashes computed for sign-ins."))
        lockedOut = registry.makeCounter(descriptor: name("locked_out", "total", "Sign-ins refused with 429 after too many failures."))
        let outcome = MetricNameDescriptor(
            namespace: "notty", metricName: "escalation_deliveries", unitName: "total",
            helpText:
                "Escalation deliveries (escalated, handled, deleted) by outcome: delivered, retry (failed, tried again later), failed (given up).")
        escalationDelivered = registry.makeCounter(descriptor: outcome, labels: [("outcome", "delivered")])
        escalationRetried = registry.makeCounter(descriptor: outcome, labels: [("outcome", "retry")])
        escalationFailed = registry.makeCounter(descriptor: outcome, labels: [("outcome", "failed")])
        escalationPending = registry.makeGauge(
            descriptor: name("escalation_deliveries", "pending", "Escalation deliveries waiting to be sent (retries included)."))
        escalationFailing = registry.makeGauge(
            descriptor: name("escalation_deliveries", "failing", "Escalation deliveries waiting after failing at least once."))
        let actionOutcome = MetricNameDescriptor(
            namespace: "notty", metricName: "action_runs", unitName: "total",
            helpText: "Actions run for devices, by outcome: done (2xx) or failed.")
        actionsDone = registry.makeCounter(descriptor: actionOutcome, labels: [("outcome", "done")])
        actionsFailed = registry.makeCounter(descriptor: actionOutcome, labels: [("outcome", "failed")])
        webPushes = registry.makeCounter(descriptor: name("web_pushes", "total", "Web Push messages sent to browsers' push services."))
        requestDuration = registry.makeDurationHistogram(
            descriptor: name("http_request_duration", "seconds", "Time to answer an HTTP request."),
            buckets: [
                .microseconds(500), .milliseconds(1), .milliseconds(2), .milliseconds(5), .milliseconds(10), .milliseconds(25),
                .milliseconds(50), .milliseconds(100), .milliseconds(250), .seconds(1),
            ])
    }

    private let statusCounters = StatusCounters()

    package func countResponse(status: Int) {
        statusCounters.counter(status: status, registry: registry).increment()
    }

    /// The metrics in Prometheus text format.
    public func render() -> String { registry.emitToString() }
}

/// One counter per HTTP status code, made on first use.
private final class StatusCounters: Sendable {
    private let counters = Mutex<[Int: Counter]>([:])

    func counter(status: Int, registry: PrometheusCollectorRegistry) -> Counter {
        counters.withLock { counters in
            if let counter = counters[status] { return counter }
            let counter = registry.makeCounter(
                descriptor: MetricNameDescriptor(
                    namespace: "notty", metricName: "http_responses", unitName: "total", helpText: "HTTP responses by status code."),
                labels: [("status", String(status))])
            counters[status] = counter
            return counter
        }
    }
}
