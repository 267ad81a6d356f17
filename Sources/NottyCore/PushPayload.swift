import Foundation

/// A push payload that reached the device some other way than the doorbell (PROTOCOL.md §3,
/// `notty push`): notty's own object, a bare doorbell frame, or either wrapped by APNs, FCM or
/// ntfy. The client's equivalent of Graph's `tryParse`.
public struct PushPayload: Sendable, Equatable {
    /// The service it comes from (nil: a bare frame, meant for the current account).
    public var server: String?
    /// The user it is for (nil: the current account).
    public var user: String?
    public var frame: DoorbellFrame

    /// Why a payload was not taken.
    public enum Rejection: Error, Equatable, CustomStringConvertible {
        /// Not a notty payload at all.
        case notNotty(String)

        public var description: String {
            switch self {
            case .notNotty(let why): why
            }
        }
    }

    /// Reads one payload. Never traps, whatever the bytes.
    public static func parse(_ data: Data) throws(Rejection) -> PushPayload {
        guard let value = JSONParser.parse(data) else { throw .notNotty("the input is not JSON") }
        guard case .object(let object) = value else { throw .notNotty("the input is not a JSON object") }
        return try parse(object: object, depth: 0)
    }

    private static func parse(object: [String: JSONValue], depth: Int) throws(Rejection) -> PushPayload {
        guard depth < 4 else { throw .notNotty("nested too deeply") }
        // notty's own (also with "aps" beside it: APNs style).
        if let inner = object["notty"] {
            switch inner {
            case .object(let notty): return try own(notty)
            case .string(let text): return try embedded(text, depth: depth)
            default: throw .notNotty("\"notty\" is neither an object nor a JSON string")
            }
        }
        // FCM: {"data":{"notty":"…"}}, also inside {"message":{…}}.
        if case .object(let message)? = object["message"] { return try parse(object: message, depth: depth + 1) }
        if case .object(let data)? = object["data"] { return try parse(object: data, depth: depth + 1) }
        // ntfy: {"event":"message","message":"<the notty object as a JSON string>"}.
        if case .string(let event)? = object["event"] {
            guard event == "message", case .string(let text)? = object["message"] else {
                throw .notNotty("an ntfy \(event) event without a notty message")
            }
            return try embedded(text, depth: depth)
        }
        // A bare doorbell frame.
        if object["type"] != nil, object["cursor"] != nil {
            return PushPayload(server: nil, user: nil, frame: try frame(object))
        }
        throw .notNotty("no notty payload in it (expected a \"notty\" object, a doorbell frame, or one wrapped by APNs, FCM or ntfy)")
    }

    /// A notty object carried as a JSON string: `{"notty":{…}}` or the inner object itself.
    private static func embedded(_ text: String, depth: Int) throws(Rejection) -> PushPayload {
        guard case .object(let object)? = JSONParser.parse(Data(text.utf8)) else {
            throw .notNotty("the embedded notty payload is not a JSON object")
        }
        if object["notty"] != nil || object["type"] != nil && object["v"] == nil {
            return try parse(object: object, depth: depth + 1)
        }
        return try own(object)
    }

    private static func own(_ notty: [String: JSONValue]) throws(Rejection) -> PushPayload {
        if let version = notty["v"] {
            guard case .number(let v) = version, v == 1 else { throw .notNotty("unsupported notty payload version \(version.jsonText)") }
        }
        var server: String?
        var user: String?
        if let value = notty["server"] {
            guard case .string(let text) = value, !text.isEmpty else { throw .notNotty("\"server\" must be a URL string") }
            server = text
        }
        if let value = notty["user"] {
            guard case .string(let text) = value, !text.isEmpty else { throw .notNotty("\"user\" must be a string") }
            user = text
        }
        return PushPayload(server: server, user: user, frame: try frame(notty))
    }

    private static func frame(_ object: [String: JSONValue]) throws(Rejection) -> DoorbellFrame {
        guard case .string(let type)? = object["type"], type == "changed" || type == "changes" else {
            throw .notNotty("\"type\" must be \"changed\" or \"changes\"")
        }
        guard case .string(let cursor)? = object["cursor"], !cursor.isEmpty, cursor.utf8.count <= 128 else {
            throw .notNotty("\"cursor\" must be a non-empty string")
        }
        guard type == "changes" else { return .changed(cursor: cursor) }
        guard case .string(let previous)? = object["previousCursor"], previous.utf8.count <= 128 else {
            throw .notNotty("a \"changes\" payload needs \"previousCursor\"")
        }
        guard case .array(let items)? = object["changes"] else { throw .notNotty("a \"changes\" payload needs a \"changes\" array") }
        let changes: [UserNotification]
        do {
            changes = try NottyJSON.decoder.decode([UserNotification].self, from: Data(JSONValue.array(items).jsonText.utf8))
        } catch {
            throw .notNotty("a change in the payload is not a notification: \(error)")
        }
        var preferences: [PreferenceEntry]?
        if let value = object["preferences"] {
            guard case .array = value, let read = try? NottyJSON.decoder.decode([PreferenceEntry].self, from: Data(value.jsonText.utf8)) else {
                throw .notNotty("\"preferences\" in the payload must be a list of preferences")
            }
            preferences = read
        }
        return DoorbellFrame(type: type, cursor: cursor, previousCursor: previous, changes: changes, preferences: preferences)
    }

    /// Whether `server` names the same service as `other` (scheme, host and port; case and a
    /// trailing slash ignored).
    public static func sameServer(_ server: String, _ other: String) -> Bool {
        func key(_ text: String) -> String {
            guard let components = URLComponents(string: text.trimmingCharacters(in: .whitespaces)), let host = components.host else {
                return text.lowercased().trimmingCharacters(in: CharacterSet(charactersIn: "/"))
            }
            let scheme = (components.scheme ?? "http").lowercased()
            let port = components.port ?? (scheme == "https" ? 443 : 80)
            return "\(scheme)://\(host.lowercased()):\(port)"
        }
        return key(server) == key(other)
    }
}
