import Foundation
import NottyCore

/// PagerDuty's Events API v2 as monitoring tools send it (PROTOCOL.md §16): an alert event at
/// `POST /v2/enqueue` (`trigger`, `acknowledge` or `resolve`, one alert by its `dedup_key`) or a
/// change event at `POST /v2/change/enqueue`, with the routing key in the body. A pure parser:
/// the service finds the hook the routing key names and does what the event says.
public struct PagerDutyEvent: Sendable, Equatable {
    public enum Action: String, Sendable, CaseIterable {
        case trigger, acknowledge, resolve
    }

    /// The hook's token (PagerDuty's integration key).
    public var routingKey: String
    public var action: Action
    /// The alert it is about; nil on a trigger that has none (the service makes one) and on a
    /// change event.
    public var dedupKey: String?
    /// What a trigger or a change event publishes (its id is the dedup key, set by the service);
    /// nil for acknowledge and resolve.
    public var notification: WebhookNotification?
    /// The monitoring tool that sent it, when it says (`client`): who handled an alert it
    /// acknowledged or resolved.
    public var client: String?
    /// A change event (`/v2/change/enqueue`): a Low notification of its own, no alert.
    public var isChange = false

    /// PagerDuty's limit of a dedup key.
    public static let maxDedupKey = 255
    /// PagerDuty keeps this much of a summary.
    public static let maxSummary = 1024

    /// Parses an alert event (`POST /v2/enqueue`), or says everything wrong with it.
    public static func alert(_ body: Data) throws(PagerDutyRefusal) -> PagerDutyEvent {
        let (event, routingKey) = try object(body)
        var errors: [String] = []
        let actionText = event.text("event_action")
        let action = actionText.flatMap(Action.init(rawValue:))
        if action == nil {
            errors.append(
                actionText == nil
                    ? "'event_action' is missing or blank" : "'event_action' is invalid (must be one of: trigger, acknowledge, resolve)")
        }
        var dedupKey: String?
        var dedupGiven = true
        switch event["dedup_key"] {
        case nil, .null?: dedupGiven = false
        case .string(let key)?:
            if key.unicodeScalars.count > maxDedupKey {
                errors.append("Length of 'dedup_key' is incorrect (should be at most \(maxDedupKey) characters)")
            } else if key.containsNUL {
                errors.append("'dedup_key' must not contain the character U+0000 (NUL)")
            } else if key.isEmpty {
                dedupGiven = false
            } else {
                dedupKey = key
            }
        default: errors.append("'dedup_key' must be a string")
        }
        if action != nil, action != .trigger, !dedupGiven { errors.append("'dedup_key' is missing or blank") }
        var notification: WebhookNotification?
        if action == .trigger {
            notification = alertNotification(event["payload"], links: event["links"], clientURL: event.text("client_url"), errors: &errors)
        }
        guard errors.isEmpty, let action, let routingKey else { throw PagerDutyRefusal(errors: errors) }
        return PagerDutyEvent(
            routingKey: routingKey, action: action, dedupKey: dedupKey, notification: notification, client: event.text("client").map(Text.title))
    }

    /// Parses a change event (`POST /v2/change/enqueue`): a Low notification, never an alert.
    public static func change(_ body: Data) throws(PagerDutyRefusal) -> PagerDutyEvent {
        let (event, routingKey) = try object(body)
        var errors: [String] = []
        var notification: WebhookNotification?
        if case .object? = event["payload"] {
            let payload = event["payload"]!
            if let summary = payload.text("summary"), !summary.isEmpty {
                notification = WebhookNotification(
                    appNotificationId: nil, title: String(summary.prefix(maxSummary)),
                    body: details(source: payload.text("source"), component: nil, details: payload["custom_details"]),
                    priority: .low, groupName: "change", launchUrl: firstLink(event["links"], clientURL: nil))
            } else {
                errors.append("'payload.summary' is missing or blank")
            }
        } else {
            errors.append("'payload' is missing or not an object")
        }
        guard errors.isEmpty, let routingKey, let notification else { throw PagerDutyRefusal(errors: errors) }
        return PagerDutyEvent(routingKey: routingKey, action: .trigger, dedupKey: nil, notification: notification, client: nil, isChange: true)
    }

    /// The body as an object and its routing key (nil, with the error noted, when there is none).
    private static func object(_ body: Data) throws(PagerDutyRefusal) -> (JSONValue, String?) {
        guard let event = JSONParser.parse(body), case .object = event else {
            throw PagerDutyRefusal(errors: ["the body is not a JSON object"])
        }
        guard let key = event.text("routing_key"), !key.isEmpty else {
            throw PagerDutyRefusal(errors: ["'routing_key' is missing or blank"])
        }
        return (event, key)
    }

    /// A trigger's payload as a notification: the summary its title; source, component and
    /// custom details its body; the severity its priority; the group (else the class) its group.
    private static func alertNotification(_ payload: JSONValue?, links: JSONValue?, clientURL: String?, errors: inout [String])
        -> WebhookNotification?
    {
        guard let payload, case .object = payload else {
            errors.append("'payload' is missing or not an object")
            return nil
        }
        let summary = payload.text("summary") ?? ""
        if summary.isEmpty { errors.append("'payload.summary' is missing or blank") }
        if (payload.text("source") ?? "").isEmpty { errors.append("'payload.source' is missing or blank") }
        let priority: Priority?
        switch payload.text("severity")?.lowercased() {
        case "critical", "error": priority = .high
        case "warning": priority = Priority.none
        case "info": priority = .low
        default:
            priority = nil
            errors.append("'payload.severity' is invalid (must be one of: critical, error, warning, info)")
        }
        guard let priority, !summary.isEmpty else { return nil }
        let group = payload.text("group").flatMap { $0.isEmpty ? nil : $0 } ?? payload.text("class").flatMap { $0.isEmpty ? nil : $0 }
        return WebhookNotification(
            appNotificationId: nil, title: String(summary.prefix(maxSummary)),
            body: details(source: payload.text("source"), component: payload.text("component"), details: payload["custom_details"]),
            priority: priority, groupName: group.map { String($0.prefix(256)) }, launchUrl: firstLink(links, clientURL: clientURL))
    }

    /// The body's lines: where it comes from, then each custom detail (`key: value`, sorted).
    static func details(source: String?, component: String?, details: JSONValue?) -> String {
        var lines: [String] = []
        if let source, !source.isEmpty { lines.append("source: \(source)") }
        if let component, !component.isEmpty { lines.append("component: \(component)") }
        switch details {
        case .string(let text)?: lines.append(text)
        case nil, .null?: break
        case .object?: lines += Text.detailLines(details)
        case let other?: lines.append(other.jsonText)
        }
        return lines.joined(separator: "\n")
    }

    /// The first of `links` that is a plain http(s) URL, else the client's URL.
    static func firstLink(_ links: JSONValue?, clientURL: String?) -> String? {
        if case .array(let items)? = links {
            for item in items { if let href = item.text("href"), LaunchURL.isValid(href) { return href } }
        }
        return clientURL.flatMap { LaunchURL.isValid($0) ? $0 : nil }
    }
}

/// Why PagerDuty's door refuses an event: PagerDuty's `400 invalid event` with each problem.
public struct PagerDutyRefusal: Error, Sendable, Equatable {
    public var errors: [String]

    public init(errors: [String]) {
        self.errors = errors
    }

    /// The answer's body, as PagerDuty writes it.
    public var json: JSONValue {
        .object(["status": .string("invalid event"), "message": .string("Event object is invalid"), "errors": .array(errors.map(JSONValue.string))])
    }
}

/// PagerDuty's answers to an accepted event.
public enum PagerDutyAnswer {
    /// `202` to an alert event: its dedup key, to acknowledge or resolve it by.
    public static func alert(dedupKey: String) -> JSONValue {
        .object(["status": .string("success"), "message": .string("Event processed"), "dedup_key": .string(dedupKey)])
    }

    /// `202` to a change event.
    public static let change = JSONValue.object(["status": .string("success"), "message": .string("Change event processed")])

    /// `429`, as PagerDuty throttles.
    public static let throttled = JSONValue.object([
        "status": .string("throttle event"), "message": .string("Requests for this service are arriving too quickly. Please retry later."),
    ])
}
