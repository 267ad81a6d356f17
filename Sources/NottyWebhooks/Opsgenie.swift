import Foundation
import NottyCore

/// Opsgenie's Alert API v2 as its SDKs, Alertmanager's `opsgenie_configs` and Grafana send it
/// (PROTOCOL.md §16.2), as pure parsing and writing: what a create becomes, an alert as
/// Opsgenie shows one, its answers and its errors.
public enum Opsgenie {
    /// Opsgenie's limits of a message and of an alias (notty keeps an alias as an
    /// `appNotificationId`, at most 256 characters).
    public static let maxMessage = 130
    public static let maxAlias = 256

    /// A create request (`POST /v2/alerts`).
    public struct Alert: Sendable, Equatable {
        /// The alias (nil: the service makes one); the same open alias again updates in place.
        public var alias: String?
        /// The notty team its `responders` name (one at most), which it is published to.
        public var team: String?
        /// What it keeps beyond a notification (its count, tags, details, notes, …).
        public var record: Record
        public var notification: WebhookNotification
    }

    /// Why a request cannot be processed: Opsgenie's `422` with each field's problem.
    public struct Refusal: Error, Sendable, Equatable {
        public var errors: [String: String]
        public init(errors: [String: String]) { self.errors = errors }
    }

    /// Reads a create request: `message` required (its first 130 characters kept, as Opsgenie
    /// does), `alias`, `description`, `details`, `entity`, `source`, `priority` `P1`–`P5`, `tags`.
    public static func alert(_ body: Data) throws(Refusal) -> Alert {
        guard let json = JSONParser.parse(body), case .object = json else { throw Refusal(errors: ["body": "must be a JSON object"]) }
        var errors = notStrings(json, ["message", "alias", "description", "entity", "source", "priority", "user", "note"])
        let message = json.text("message")?.trimmed(newlines: true) ?? ""
        if message.isEmpty { errors["message"] = "Message can not be empty." }
        var alias: String?
        if let given = json.text("alias") {
            if given.unicodeScalars.count > maxAlias {
                errors["alias"] = "Alias can be at most \(maxAlias) characters long here."
            } else if given.containsNUL {
                errors["alias"] = "Alias must not contain the character U+0000 (NUL)."
            } else {
                alias = given
            }
        }
        let priority = json.text("priority")?.uppercased() ?? "P3"
        if !priorities.contains(priority) { errors["priority"] = "Priority should be one of [P1, P2, P3, P4, P5]." }
        var tags: [String] = []
        switch json["tags"] {
        case nil, .null?: break
        case .array(let items)?: tags = items.compactMap { if case .string(let tag) = $0 { tag.trimmed() } else { nil } }.filter { !$0.isEmpty }
        default: errors["tags"] = "Tags should be a list of strings."
        }
        var team: String?
        switch json["responders"] {
        case nil, .null?: break
        case .array(let items)?:
            // Of Opsgenie's responders, notty has teams: the others (users, schedules, escalations) are left to its own rules.
            let teams = items.filter { $0.text("type")?.lowercased() == "team" }
            let named = teams.compactMap { $0.text("name") ?? $0.text("id") }
            if !items.allSatisfy({ if case .object = $0 { true } else { false } }) || named.count != teams.count {
                errors["responders"] = "Responders should be a list of {\"type\",\"name\"} objects."
            } else if Set(named).count > 1 {
                errors["responders"] = "notty publishes an alert to one team: name one team among the responders."
            }
            team = named.first
        default: errors["responders"] = "Responders should be a list of {\"type\",\"name\"} objects."
        }
        guard errors.isEmpty else { throw Refusal(errors: errors) }
        // What is past notty's limits is cut, not refused: a monitoring tool's alert is never lost.
        var record = Record()
        record.priority = priority
        record.description = json.text("description").map { String($0.prefix(Record.maxDescription)) }
        record.source = json.text("source").map { String($0.prefix(256)) }
        for tag in tags.map({ String($0.prefix(Record.maxTag)) }) where !record.tags.contains(tag) && record.tags.count < Record.maxTags {
            record.tags.append(tag)
        }
        if case .object(let members)? = json["details"] {
            var size = 0
            for (key, value) in members.sorted(by: { $0.key < $1.key }) {
                let text = if case .string(let text) = value { text } else { value.jsonText }
                size += key.count + text.count
                if size > Record.maxDetails { break }
                record.details[key] = text
            }
        }
        if let note = json.text("note") { record.add(note: String(note.prefix(Record.maxNote)), user: json.text("user"), at: Date()) }
        let entity = json.text("entity").map { String($0.prefix(256)) }
        var notification = WebhookNotification(
            appNotificationId: nil, title: String(message.prefix(maxMessage)), body: record.body, priority: record.level, groupName: entity)
        notification.rawContent = record.rawContent
        return Alert(alias: alias, team: team, record: record, notification: notification)
    }

    /// Opsgenie's `422` for each of `keys` that is given but is not a string (what the SDKs
    /// send is; a number there is a mistake, not a message).
    static func notStrings(_ json: JSONValue, _ keys: [String]) -> [String: String] {
        var errors: [String: String] = [:]
        for key in keys {
            switch json[key] {
            case nil, .null?, .string?: continue
            default: errors[key] = "\(key) should be a string."
            }
        }
        return errors
    }

    /// Opsgenie's priority for one of notty's three.
    public static func priority(_ priority: Priority) -> String {
        switch priority {
        case .high: "P1"
        case .none: "P3"
        case .low: "P5"
        }
    }

    /// A notification as Opsgenie's alert object (`GET /v2/alerts/{identifier}`): closed once
    /// Dismissed, acknowledged and seen once Read, snoozed while Snoozed. Its id (and tinyId) is
    /// the notification's id, its alias the `appNotificationId`.
    public static func alertObject(_ n: UserNotification, now: Date, integration: String) -> JSONValue {
        let view = NotificationView.current(of: n, now: now)
        let record = Record(of: n)
        var object: [String: JSONValue] = [
            "id": .string(n.id), "tinyId": .string(n.id), "alias": .string(n.appNotificationId),
            "message": .string(n.payload.visualContent?.title ?? n.payload.rawContent ?? ""),
            "status": .string(view == .dismissed ? "closed" : "open"),
            "acknowledged": .bool(n.readState == .read), "isSeen": .bool(n.readState == .read),
            "snoozed": .bool(view == .snoozed),
            "lastOccurredAt": .string(ISOTime.format(n.createdDateTime)), "createdAt": .string(ISOTime.format(n.createdDateTime)),
            "updatedAt": .string(ISOTime.format(n.lastModifiedDateTime)), "priority": .string(record.priority),
            "owner": .string(""), "source": .string(record.source ?? n.targetHostName), "count": .number(Double(record.count)),
            "tags": .array(record.tags.map(JSONValue.string)), "details": .object(record.details.mapValues(JSONValue.string)),
            "integration": .object(["id": .string(integration), "name": .string("notty"), "type": .string("API")]),
            "description": .string(record.description ?? ""),
        ]
        if view == .snoozed, let until = n.snoozedUntil { object["snoozedUntil"] = .string(ISOTime.format(until)) }
        if let group = n.groupName { object["entity"] = .string(group) }
        return .object(object)
    }

    /// What an accepted request (create, acknowledge, close, …) was, as a request id that says
    /// it: Opsgenie processes requests later and answers their outcome by this id; notty
    /// processes them at once and writes the outcome into the id.
    public struct RequestRecord: Sendable, Equatable {
        public var action: String
        public var alertId: String
        public var alias: String
        public var processedAt: Int64

        public init(action: String, alertId: String, alias: String, processedAt: Int64) {
            self.action = action
            self.alertId = alertId
            self.alias = alias
            self.processedAt = processedAt
        }

        /// The request id (base64url of the record).
        public var requestId: String { Data([action, alertId, alias, String(processedAt)].joined(separator: "\n").utf8).base64URL }

        /// Reads a request id this service wrote (nil: not one).
        public init?(requestId: String) {
            guard requestId.count <= 2048, let data = Data(base64URL: requestId), let text = String(data: data, encoding: .utf8) else { return nil }
            let parts = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            guard parts.count == 4, let at = Int64(parts[3]) else { return nil }
            self.init(action: parts[0], alertId: parts[1], alias: parts[2], processedAt: at)
        }

        /// `GET /v2/alerts/requests/{id}`'s `data`.
        public func status(integration: String) -> JSONValue {
            let done: String =
                switch action {
                case "Create": "Created alert"
                case "Acknowledge": "Acknowledged"
                case "UnAcknowledge": "Unacknowledged"
                case "Close": "Closed"
                case "Snooze": "Snoozed"
                case "Delete": "Deleted"
                case "AddNote": "Added note"
                case "AddTags": "Added tags"
                case "RemoveTags": "Removed tags"
                case "AddDetails": "Added details"
                case "RemoveDetails": "Removed details"
                case "UpdateMessage": "Updated message"
                case "UpdateDescription": "Updated description"
                case "UpdatePriority": "Updated priority"
                default: action
                }
            return .object([
                "success": .bool(true), "isSuccess": .bool(true), "action": .string(action), "status": .string(done),
                "processedAt": .string(ISOTime.format(ISOTime.date(millis: processedAt))), "integrationId": .string(integration),
                "alertId": .string(alertId), "alias": .string(alias),
            ])
        }
    }

    /// `202 {"result":"Request will be processed","took","requestId"}`.
    public static func accepted(_ requestId: String) -> JSONValue {
        .object(["result": .string("Request will be processed"), "took": .number(0), "requestId": .string(requestId)])
    }

    /// An answer with `data` (`{"data","took","requestId"}`).
    public static func data(_ data: JSONValue) -> JSONValue {
        .object(["data": data, "took": .number(0), "requestId": .string(UUID().uuidString.lowercased())])
    }

    /// An error as Opsgenie writes it (`{"message","took","requestId"}`, with `errors` for a `422`).
    public static func error(_ message: String, errors: [String: String]? = nil) -> JSONValue {
        var object: [String: JSONValue] = ["message": .string(message), "took": .number(0), "requestId": .string(UUID().uuidString.lowercased())]
        if let errors { object["errors"] = .object(errors.mapValues(JSONValue.string)) }
        return .object(object)
    }
}
