import Foundation
import NottyCore

/// Opsgenie's Heartbeat API (PROTOCOL.md §16.3) on notty's heartbeats, as pure parsing and
/// writing: what a create or an update asks, and a heartbeat as Opsgenie shows one.
extension Opsgenie {
    /// A create (`POST /v2/heartbeats`) or an update (`PATCH /v2/heartbeats/{name}`): what it
    /// gives (an update gives what changes).
    public struct Heartbeat: Sendable, Equatable {
        public var name: String?
        /// `interval` × `intervalUnit`, in seconds.
        public var every: Int?
        public var enabled: Bool?
        /// `alertMessage`: the late notification's text.
        public var message: String?
        public var priority: Priority?
    }

    /// Reads a heartbeat's create (`name`, `interval` required) or update: `interval` a whole
    /// number of `intervalUnit`s (`minutes`, the default, `hours` or `days`; notty's range, 10 s
    /// to 30 days, holds), `enabled`, `alertMessage`, `alertPriority` `P1`–`P5`.
    public static func heartbeat(_ body: Data, creating: Bool) throws(Refusal) -> Heartbeat {
        guard let json = JSONParser.parse(body), case .object = json else { throw Refusal(errors: ["body": "must be a JSON object"]) }
        var errors = notStrings(json, ["name", "description", "intervalUnit", "alertMessage", "alertPriority"])
        var heartbeat = Heartbeat()
        switch json["name"] {
        case .string(let name)?:
            if let problem = NottyCore.Heartbeat.nameProblem(name) { errors["name"] = problem } else { heartbeat.name = name }
        case nil, .null?:
            if creating { errors["name"] = "Name can not be empty." }
        default: break  // not a string: said above
        }
        let factor: Int?
        switch json.text("intervalUnit")?.lowercased() {
        case nil, "minutes": factor = 60
        case "hours": factor = 3600
        case "days": factor = 86_400
        default: factor = nil
        }
        if factor == nil, errors["intervalUnit"] == nil { errors["intervalUnit"] = "Interval unit should be one of [minutes, hours, days]." }
        switch json["interval"] {
        case .number(let number)? where number >= 1 && number == number.rounded() && number <= 43_200:
            if let factor {
                let seconds = Int(number) * factor
                if NottyCore.Heartbeat.everyRange.contains(seconds) {
                    heartbeat.every = seconds
                } else {
                    errors["interval"] = "Interval can be at most 30 days here."
                }
            }
        case nil, .null?:
            if creating { errors["interval"] = "Interval should be a positive number." }
        default: errors["interval"] = "Interval should be a positive number."
        }
        switch json["enabled"] {
        case .bool(let enabled)?: heartbeat.enabled = enabled
        case nil, .null?: break
        default: errors["enabled"] = "Enabled should be true or false."
        }
        if let message = json.text("alertMessage") {
            if message.containsNUL || message.count > NottyCore.Heartbeat.maxMessageLength {
                errors["alertMessage"] = "Alert message can be at most \(NottyCore.Heartbeat.maxMessageLength) characters, none of them NUL."
            } else if !message.isEmpty {
                heartbeat.message = message
            }
        }
        switch json.text("alertPriority")?.uppercased() {
        case nil: break
        case "P1", "P2": heartbeat.priority = .high
        case "P3": heartbeat.priority = Priority.none
        case "P4", "P5": heartbeat.priority = .low
        default: errors["alertPriority"] = "Alert priority should be one of [P1, P2, P3, P4, P5]."
        }
        guard errors.isEmpty else { throw Refusal(errors: errors) }
        return heartbeat
    }

    /// A heartbeat as Opsgenie's get and list show one (`expired`: late).
    public static func heartbeatObject(_ heartbeat: HeartbeatInfo) -> JSONValue {
        let (interval, unit) = interval(heartbeat.every)
        var object: [String: JSONValue] = [
            "name": .string(heartbeat.name), "description": .string(""), "interval": .number(Double(interval)), "intervalUnit": .string(unit),
            "enabled": .bool(heartbeat.state != .paused), "expired": .bool(heartbeat.state == .late),
            "alertMessage": .string(heartbeat.message ?? "\(heartbeat.name) is expired"), "alertTags": .array([]),
            "alertPriority": .string(priority(heartbeatPriority(heartbeat.priority))),
        ]
        if let team = heartbeat.team { object["ownerTeam"] = .object(["name": .string(team)]) }
        if let last = heartbeat.lastPingDateTime { object["lastPingTime"] = .string(ISOTime.format(last)) }
        return .object(object)
    }

    /// What a create, an update, an enable and a disable answer: `{"name","enabled","expired"}`.
    public static func heartbeatSummary(_ heartbeat: HeartbeatInfo) -> JSONValue {
        var object: [String: JSONValue] = [
            "name": .string(heartbeat.name), "enabled": .bool(heartbeat.state != .paused), "expired": .bool(heartbeat.state == .late),
        ]
        if let team = heartbeat.team { object["ownerTeam"] = .object(["name": .string(team)]) }
        return .object(object)
    }

    /// Seconds as Opsgenie's largest unit that divides them (minutes rounded up otherwise).
    static func interval(_ seconds: Int) -> (Int, String) {
        if seconds % 86_400 == 0 { return (seconds / 86_400, "days") }
        if seconds % 3600 == 0 { return (seconds / 3600, "hours") }
        return ((seconds + 59) / 60, "minutes")
    }

    static func heartbeatPriority(_ word: String) -> Priority {
        switch word {
        case "high": .high
        case "low": .low
        default: .none
        }
    }

    /// `{"result", "took", "requestId"}`: a ping's `PONG - Heartbeat received`, a delete's `Deleted`.
    public static func result(_ text: String) -> JSONValue {
        .object(["result": .string(text), "took": .number(0), "requestId": .string(UUID().uuidString.lowercased())])
    }
}
