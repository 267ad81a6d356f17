import Foundation

/// How a run of an action went (PROTOCOL.md §12): stored on the notification, in the change feed as
/// `actionResults`, shown on every device ("Silence 1h — done on laptop 10:02").
public struct ActionResult: Sendable, Equatable, Codable, JSONWritable {
    public enum Status: String, Sendable, Codable {
        /// The request is being made (only a press's answer says so).
        case running
        /// It answered 2xx.
        case done
        /// Another status, or no answer (`error` says which).
        case failed
    }

    /// Which action, from 1.
    public var action: Int
    public var label: String
    public var status: Status
    public var httpStatus: Int?
    public var error: String?
    /// The device that pressed it (its name, else its id).
    public var device: String?
    public var at: Date

    public init(action: Int, label: String, status: Status, httpStatus: Int? = nil, error: String? = nil, device: String? = nil, at: Date) {
        self.action = action
        self.label = label
        self.status = status
        self.httpStatus = httpStatus
        self.error = error
        self.device = device
        self.at = at
    }

    public func write(to w: inout JSONWriter) {
        w.raw(#"{"action":"#); w.int(action)
        w.raw(#","at":"#); w.time(at)
        if let device { w.raw(#","device":"#); w.string(device) }
        if let error { w.raw(#","error":"#); w.string(error) }
        if let httpStatus { w.raw(#","httpStatus":"#); w.int(httpStatus) }
        w.raw(#","label":"#); w.string(label)
        w.raw(#","status":"#); w.string(status.rawValue)
        w.raw("}")
    }

    public var value: JSONValue {
        var o: [String: JSONValue] = [
            "action": .number(Double(action)), "label": .string(label), "status": .string(status.rawValue), "at": .string(ISOTime.format(at)),
        ]
        if let httpStatus { o["httpStatus"] = .number(Double(httpStatus)) }
        if let error { o["error"] = .string(error) }
        if let device { o["device"] = .string(device) }
        return .object(o)
    }

    /// The results of a JSON array; what is not one is left out.
    public static func list(_ value: JSONValue?) -> [ActionResult]? {
        guard case .array(let items)? = value else { return nil }
        let results = items.compactMap { item -> ActionResult? in
            guard case .object(let o) = item, case .number(let n)? = o["action"], case .string(let label)? = o["label"],
                case .string(let statusText)? = o["status"], let status = Status(rawValue: statusText),
                case .string(let atText)? = o["at"], let at = ISOTime.parse(atText)
            else { return nil }
            let code: Int? = if case .number(let c)? = o["httpStatus"] { Int(c) } else { nil }
            let error: String? = if case .string(let e)? = o["error"] { e } else { nil }
            let device: String? = if case .string(let d)? = o["device"] { d } else { nil }
            return ActionResult(action: Int(n), label: label, status: status, httpStatus: code, error: error, device: device, at: at)
        }
        return results.isEmpty ? nil : results
    }

    /// For a person: `done on laptop 10:02 (HTTP 200)`, `failed on phone 2m ago: HTTP 503`.
    public func line(now: Date) -> String {
        let whereWhen = (device.map { " on \($0)" } ?? "") + " " + TimeText.relative(at, now: now)
        switch status {
        case .running: return "running\(whereWhen)"
        case .done: return "done\(whereWhen)"
        case .failed: return "failed\(whereWhen): " + (error ?? httpStatus.map { "HTTP \($0)" } ?? "no answer")
        }
    }
}

extension UserNotification {
    /// One line per action, for `notty show` and the center's detail:
    /// `1 Silence 1h (http, clears) — done on laptop 2m ago`.
    public func actionLines(now: Date) -> [String] {
        (actions ?? []).enumerated().map { index, action in
            var line = "\(index + 1) \(action.label)"
            switch action.kind {
            case .view: line += " (opens \(action.url ?? "a link"))"
            case .http: line += action.clear ? " (runs on the service, then dismisses)" : " (runs on the service)"
            }
            if let result = actionResults?.last(where: { $0.action == index + 1 }) { line += " — " + result.line(now: now) }
            return line
        }
    }
}
