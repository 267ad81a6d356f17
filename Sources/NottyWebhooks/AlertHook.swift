import Foundation
import NottyCore

/// Prometheus Alertmanager's `webhook_configs` and Grafana alerting's webhook contact point:
/// a JSON object with an `alerts` array and a `status`. One notification per alert, keyed by
/// its fingerprint, so an alert firing again or resolving updates its notification in place.
public enum AlertHook: WebhookKind {
    public static let name = "alertmanager"

    public static func recognises(_ request: WebhookRequest) -> Bool {
        guard case .array? = request.json?["alerts"], case .string? = request.json?["status"] else { return false }
        return true
    }

    public static func notifications(_ request: WebhookRequest) throws(WebhookError) -> [WebhookNotification] {
        let json = try request.object("alerts")
        guard case .array(let alerts)? = json["alerts"], let groupStatus = json.text("status") else {
            throw WebhookError("alerts: an alerts array and a status are required")
        }
        var result: [WebhookNotification] = []
        for (index, alert) in alerts.enumerated() {
            result.append(try notification(alert, groupStatus: groupStatus, what: "alerts[\(index)]"))
        }
        return result
    }

    private static func notification(_ alert: JSONValue, groupStatus: String, what: String) throws(WebhookError) -> WebhookNotification {
        guard case .object = alert else { throw WebhookError("\(what) must be a JSON object") }
        guard let labels = try strings(alert["labels"], "\(what).labels"), !labels.isEmpty else {
            throw WebhookError("\(what).labels must be an object of strings with at least one label")
        }
        let annotations = try strings(alert["annotations"], "\(what).annotations") ?? [:]
        let status = alert.text("status") ?? groupStatus
        guard status == "firing" || status == "resolved" else { throw WebhookError("\(what).status must be firing or resolved, not \(status)") }
        let resolved = status == "resolved"
        let alertname = labels["alertname"] ?? "alert"
        let summary = annotations["summary"].map { ": \($0)" } ?? ""
        let fingerprint = alert.text("fingerprint") ?? Text.digest(labels.sorted { $0.key < $1.key }.flatMap { [$0.key, $0.value] })
        let severity = labels["severity"]?.lowercased()
        let priority: Priority =
            switch severity {
            case "critical", "page", "error", "high": .high
            case "info", "low", "none": .low
            default: .none
            }
        var lines: [String] = []
        if let description = annotations["description"] ?? annotations["message"] { lines.append(description) }
        for (key, value) in annotations.sorted(by: { $0.key < $1.key }) where !["summary", "description", "message"].contains(key) {
            lines.append("\(key): \(value)")
        }
        if let value = alert.text("valueString") { lines.append("Value: \(value)") }
        let shown = labels.filter { $0.key != "alertname" }.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
        if !shown.isEmpty { lines.append(shown.joined(separator: ", ")) }
        var notification = WebhookNotification(
            appNotificationId: "alert-\(fingerprint)",
            title: (resolved ? "✓ Resolved: " : "") + alertname + summary,
            body: lines.joined(separator: "\n"),
            priority: priority,
            groupName: alertname,
            // Grafana's panel or dashboard when it has one, else the rule (Prometheus's graph).
            launchUrl: alert.link("panelURL") ?? alert.link("dashboardURL") ?? alert.link("generatorURL"),
            resolved: resolved)
        notification.labels = labels
        return notification
    }

    /// An object whose members are all strings (labels, annotations); nil when absent.
    private static func strings(_ value: JSONValue?, _ what: String) throws(WebhookError) -> [String: String]? {
        guard let value, value != .null else { return nil }
        guard case .object(let object) = value else { throw WebhookError("\(what) must be a JSON object") }
        var result: [String: String] = [:]
        for (key, member) in object {
            guard case .string(let text) = member else { throw WebhookError("\(what).\(key) must be a string") }
            result[key] = text
        }
        return result
    }
}
