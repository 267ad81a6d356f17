import Foundation

// Actions (PROTOCOL.md §12): what a publisher offers to do about a notification, run once by the
// service from whichever device presses first. ntfy's objects and limits.

/// One action of a notification. A `view` action opens its URL on the device; an `http`
/// action is a request the service makes. An `http` action's URL, method, headers and body
/// stay on the service: this type's `Encodable` and `JSONWritable` forms, which are all that
/// any device, phone or log is ever sent, carry its kind, label and `clear` only (and a `view`
/// action's URL). The service keeps the whole action as ``storedValue``.
public struct NotificationAction: Sendable, Equatable, Codable, JSONWritable {
    public enum Kind: String, Sendable, Codable { case view, http }

    public var kind: Kind
    public var label: String
    /// A `view` action's URL (shown), or an `http` action's (the service's alone).
    public var url: String?
    /// An `http` action's method (POST when the publisher named none, as ntfy).
    public var method: String?
    public var headers: [String: String]
    public var body: String?
    /// Whether the notification is dismissed everywhere once the action succeeded.
    public var clear: Bool
    /// The service made it, and fills in its body's `{{createdBy}}`, `{{now}}` and `{{in:N}}`
    /// (N seconds from now) when it runs (an Alertmanager silence). Never set by what a
    /// publisher sends.
    public var template = false
    /// The service's store only: an `http` action's URL, method, headers and body, sealed
    /// together under the service's secret key (the service opens it when it runs the action).
    public var sealed: String?

    /// ntfy's limit of actions on one notification.
    public static let maxPerNotification = 3
    static let maxLabel = 128
    static let maxHeaders = 20
    static let maxBody = 8192

    public init(
        kind: Kind, label: String, url: String? = nil, method: String? = nil, headers: [String: String] = [:], body: String? = nil,
        clear: Bool = false
    ) {
        self.kind = kind
        self.label = label
        self.url = url
        self.method = method
        self.headers = headers
        self.body = body
        self.clear = clear
    }

    enum CodingKeys: String, CodingKey { case action, label, url, clear }

    /// A device reads what the service shows.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            kind: try c.decode(Kind.self, forKey: .action), label: try c.decode(String.self, forKey: .label),
            url: try c.decodeIfPresent(String.self, forKey: .url), clear: try c.decodeIfPresent(Bool.self, forKey: .clear) ?? false)
    }

    /// What devices are shown: never an `http` action's URL, headers or body.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(kind, forKey: .action)
        try c.encode(clear, forKey: .clear)
        try c.encode(label, forKey: .label)
        if kind == .view, let url { try c.encode(url, forKey: .url) }
    }

    public func write(to w: inout JSONWriter) {
        w.raw(#"{"action":"#); w.string(kind.rawValue)
        w.raw(clear ? #","clear":true"# : #","clear":false"#)
        w.raw(#","label":"#); w.string(label)
        if kind == .view, let url { w.raw(#","url":"#); w.string(url) }
        w.raw("}")
    }

    /// The action as devices see it (what ``encode(to:)`` writes).
    public var shown: NotificationAction {
        NotificationAction(kind: kind, label: label, url: kind == .view ? url : nil, clear: clear)
    }

    /// The whole action, as the service stores it.
    public var storedValue: JSONValue {
        var o: [String: JSONValue] = ["action": .string(kind.rawValue), "label": .string(label), "clear": .bool(clear)]
        if let url { o["url"] = .string(url) }
        if let method { o["method"] = .string(method) }
        if !headers.isEmpty { o["headers"] = .object(headers.mapValues { .string($0) }) }
        if let body { o["body"] = .string(body) }
        if template { o["template"] = .bool(true) }
        if let sealed { o["sealed"] = .string(sealed) }
        return .object(o)
    }

    /// A list as the service stores it (nil when there is none): ``storedValue``'s text,
    /// written directly (a publish writes it on the storage's one writer thread).
    public static func storedText(_ actions: [NotificationAction]?) -> String? {
        guard let actions, !actions.isEmpty else { return nil }
        var w = JSONWriter()
        w.raw("[")
        for (index, a) in actions.enumerated() {
            if index > 0 { w.raw(",") }
            w.raw(#"{"action":"#); w.string(a.kind.rawValue)
            if let body = a.body { w.raw(#","body":"#); w.string(body) }
            w.raw(a.clear ? #","clear":true"# : #","clear":false"#)
            if !a.headers.isEmpty {
                w.raw(#","headers":{"#)
                for (n, (name, value)) in a.headers.sorted(by: { $0.key < $1.key }).enumerated() {
                    if n > 0 { w.raw(",") }
                    w.string(name); w.raw(":"); w.string(value)
                }
                w.raw("}")
            }
            w.raw(#","label":"#); w.string(a.label)
            if let method = a.method { w.raw(#","method":"#); w.string(method) }
            if let sealed = a.sealed { w.raw(#","sealed":"#); w.string(sealed) }
            if a.template { w.raw(#","template":true"#) }
            if let url = a.url { w.raw(#","url":"#); w.string(url) }
            w.raw("}")
        }
        w.raw("]")
        return String(decoding: w.bytes, as: UTF8.self)
    }

    /// Reads a list the service stored (whole actions), or one the wire or a device's store
    /// has (shown actions), as it is: it was validated when published. Nil when there is none.
    public static func list(_ value: JSONValue?) -> [NotificationAction]? {
        guard case .array(let items)? = value else { return nil }
        let actions = items.compactMap { item -> NotificationAction? in
            guard case .object(let o) = item, case .string(let kindText)? = o["action"], let kind = Kind(rawValue: kindText),
                case .string(let label)? = o["label"]
            else { return nil }
            func text(_ key: String) -> String? { if case .string(let value)? = o[key] { value } else { nil } }
            var headers: [String: String] = [:]
            if case .object(let fields)? = o["headers"] {
                for (name, value) in fields { if case .string(let text) = value { headers[name] = text } }
            }
            let clear: Bool = if case .bool(true)? = o["clear"] { true } else { false }
            var action = NotificationAction(
                kind: kind, label: label, url: text("url"), method: text("method"), headers: headers, body: text("body"), clear: clear)
            if case .bool(true)? = o["template"] { action.template = true }
            action.sealed = text("sealed")
            return action
        }
        return actions.isEmpty ? nil : actions
    }

    /// A list as devices see it, as a JSON value (a device's store keeps it so).
    public static func shownValue(_ actions: [NotificationAction]) -> JSONValue {
        .array(
            actions.map { a in
                var o: [String: JSONValue] = ["action": .string(a.kind.rawValue), "label": .string(a.label), "clear": .bool(a.clear)]
                if a.kind == .view, let url = a.url { o["url"] = .string(url) }
                return .object(o)
            })
    }

    /// "Silence 1h": a silence of the alert's labels through Alertmanager's API v2
    /// (`POST /api/v2/silences`), made by the service when pressed; clears the notification.
    public static func silence(alertmanager: String, labels: [String: String], hours: Int) -> NotificationAction {
        let matchers = labels.sorted { $0.key < $1.key }.map { name, value in
            JSONValue.object(["name": .string(name), "value": .string(value), "isRegex": .bool(false), "isEqual": .bool(true)])
        }
        let body = JSONValue.object([
            "matchers": .array(matchers), "startsAt": .string("{{now}}"), "endsAt": .string("{{in:\(hours * 3600)}}"),
            "createdBy": .string("{{createdBy}}"), "comment": .string("Silenced for \(hours)h from notty"),
        ]).jsonText
        var action = NotificationAction(
            kind: .http, label: "Silence \(hours)h", url: alertmanager + "/api/v2/silences", method: "POST",
            headers: ["Content-Type": "application/json"], body: body, clear: true)
        action.template = true
        return action
    }

    /// The body to send: a template's placeholders filled in (as JSON string content).
    public func body(createdBy: String, now: Date) -> String? {
        guard template, let body else { return body }
        func escaped(_ text: String) -> String { String(JSONValue.string(text).jsonText.dropFirst().dropLast()) }
        var filled = body.replacingOccurrences(of: "{{createdBy}}", with: escaped(createdBy)).replacingOccurrences(
            of: "{{now}}", with: ISOTime.format(now))
        while let start = filled.range(of: "{{in:"), let end = filled.range(of: "}}", range: start.upperBound..<filled.endIndex) {
            let seconds = TimeInterval(filled[start.upperBound..<end.lowerBound]) ?? 0
            filled.replaceSubrange(start.lowerBound..<end.upperBound, with: ISOTime.format(now.addingTimeInterval(seconds)))
        }
        return filled
    }

    // MARK: Reading what a publisher sends

    /// A JSON array of ntfy's action objects (`{"action": "view"|"http", "label", "url",
    /// "method", "headers", "body", "clear"}`), validated.
    public static func parse(json: JSONValue) throws(ValidationError) -> [NotificationAction] {
        guard case .array(let items) = json else { throw ValidationError("actions must be a JSON array of action objects") }
        try checkCount(items.count)
        var actions: [NotificationAction] = []
        for (index, item) in items.enumerated() {
            let n = index + 1
            guard case .object(let o) = item else { throw ValidationError("action \(n) must be a JSON object") }
            func text(_ key: String) throws(ValidationError) -> String? {
                switch o[key] {
                case nil, .null?: return nil
                case .string(let value)?: return value
                default: throw ValidationError("action \(n): \(key) must be a string")
                }
            }
            var headers: [String: String] = [:]
            switch o["headers"] {
            case nil, .null?: break
            case .object(let fields)?:
                for (name, value) in fields {
                    guard case .string(let text) = value else { throw ValidationError("action \(n): the header \(name) must be a string") }
                    headers[name] = text
                }
            default: throw ValidationError("action \(n): headers must be an object of header names and values")
            }
            let clear: Bool
            switch o["clear"] {
            case nil, .null?: clear = false
            case .bool(let flag)?: clear = flag
            case .string(let text)?: clear = try flag(text, n)
            default: throw ValidationError("action \(n): clear must be true or false")
            }
            actions.append(
                try make(
                    n, kind: text("action"), label: text("label"), url: text("url"), method: text("method"),
                    headers: headers, body: text("body"), clear: clear))
        }
        return actions
    }

    /// ntfy's `X-Actions` header: the JSON array, or the simple form
    /// `view, Open portal, https://…, clear=true; http, Close door, https://…, method=PUT,
    /// headers.Authorization=Bearer x, body={"a":1}` (values with `,` or `;` in quotes).
    public static func parse(header text: String) throws(ValidationError) -> [NotificationAction] {
        let trimmed = text.trimmingASCIISpace()
        if trimmed.isEmpty { return [] }
        if trimmed.hasPrefix("[") {
            guard let json = JSONParser.parse(Data(trimmed.utf8)) else { throw ValidationError("the actions are not valid JSON") }
            return try parse(json: json)
        }
        let split = try simpleForm(trimmed)
        try checkCount(split.count)
        var actions: [NotificationAction] = []
        for (index, parts) in split.enumerated() {
            let n = index + 1
            var positional: [String] = []
            var named: [String: String] = [:]
            var headers: [String: String] = [:]
            for part in parts {
                if let (key, value) = keyed(part) {
                    let lower = key.lowercased()
                    if lower.hasPrefix("headers.") {
                        headers[String(key.dropFirst("headers.".count))] = value
                    } else if ["action", "label", "url", "method", "body", "clear"].contains(lower) {
                        named[lower] = value
                    } else {
                        throw ValidationError("action \(n): unknown parameter \(key) (known: action, label, url, method, headers.NAME, body, clear)")
                    }
                } else {
                    positional.append(part.quoted?.value ?? part.value)
                }
            }
            // The positional values are action, label, url, in that order, for those not named.
            for key in ["action", "label", "url"] where named[key] == nil && !positional.isEmpty {
                named[key] = positional.removeFirst()
            }
            if !positional.isEmpty { throw ValidationError("action \(n): too many values (\(positional.joined(separator: ", ")))") }
            actions.append(
                try make(
                    n, kind: named["action"], label: named["label"], url: named["url"], method: named["method"],
                    headers: headers, body: named["body"], clear: try named["clear"].map { v throws(ValidationError) in try flag(v, n) } ?? false))
        }
        return actions
    }

    private static func checkCount(_ count: Int) throws(ValidationError) {
        if count > maxPerNotification { throw ValidationError("at most \(maxPerNotification) actions (ntfy's limit): \(count) were given") }
    }

    private static func flag(_ text: String, _ n: Int) throws(ValidationError) -> Bool {
        switch text.trimmingASCIISpace().lowercased() {
        case "true", "yes", "1": return true
        case "false", "no", "0", "": return false
        default: throw ValidationError("action \(n): clear must be true or false")
        }
    }

    /// One validated action; `n` counts from 1 in messages.
    private static func make(
        _ n: Int, kind: String?, label: String?, url: String?, method: String?, headers: [String: String],
        body: String?, clear: Bool
    ) throws(ValidationError) -> NotificationAction {
        guard let kindText = kind?.trimmingASCIISpace().lowercased(), !kindText.isEmpty else {
            throw ValidationError("action \(n) needs an action: view or http")
        }
        guard let kind = Kind(rawValue: kindText) else {
            if kindText == "broadcast" {
                throw ValidationError("action \(n): broadcast actions are Android intents; notty runs view and http actions")
            }
            throw ValidationError("action \(n): unknown action \(kindText) (use view or http)")
        }
        guard let label = label?.trimmingASCIISpace(), !label.isEmpty else { throw ValidationError("action \(n) needs a label") }
        if label.count > maxLabel || label.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) {
            throw ValidationError("action \(n): the label must be one line of at most \(maxLabel) characters")
        }
        guard let url = url?.trimmingASCIISpace(), !url.isEmpty else { throw ValidationError("action \(n) (\(label)) needs a url") }
        guard LaunchURL.isValid(url) else {
            throw ValidationError("action \(n) (\(label)): the url must be an absolute http or https URL of at most 2,048 characters")
        }
        if kind == .view {
            if method != nil || !headers.isEmpty || body != nil {
                throw ValidationError("action \(n) (\(label)): a view action has only a label, a url and clear")
            }
            return NotificationAction(kind: .view, label: label, url: url, clear: clear)
        }
        let verb = (method?.trimmingASCIISpace()).flatMap { $0.isEmpty ? nil : $0.uppercased() } ?? "POST"
        guard verb.count <= 16, verb.unicodeScalars.allSatisfy({ ("A"..."Z").contains($0) }) else {
            throw ValidationError("action \(n) (\(label)): the method must be an HTTP method such as POST, PUT or GET")
        }
        if headers.count > maxHeaders { throw ValidationError("action \(n) (\(label)): at most \(maxHeaders) headers") }
        for (name, value) in headers {
            guard !name.isEmpty, name.utf8.count <= 256, name.unicodeScalars.allSatisfy(isTokenCharacter) else {
                throw ValidationError(
                    "action \(n) (\(label)): the header name \"\(name)\" is not a header name (letters, digits and !#$%&'*+-.^_`|~)")
            }
            guard value.utf8.count <= 8192, !value.unicodeScalars.contains(where: { $0.value < 0x20 && $0 != "\t" || $0.value == 0x7F }) else {
                throw ValidationError("action \(n) (\(label)): the header \(name) has a line break or control character in its value")
            }
        }
        if let body, body.utf8.count > maxBody { throw ValidationError("action \(n) (\(label)): the body is over \(maxBody / 1024) KiB") }
        if body?.containsNUL == true || url.containsNUL { throw ValidationError("action \(n) (\(label)) holds U+0000") }
        return NotificationAction(kind: .http, label: label, url: url, method: verb, headers: headers, body: body, clear: clear)
    }

    private static func isTokenCharacter(_ s: Unicode.Scalar) -> Bool {
        ("a"..."z").contains(s) || ("A"..."Z").contains(s) || ("0"..."9").contains(s) || "!#$%&'*+-.^_`|~".unicodeScalars.contains(s)
    }

    /// One comma-separated part of the simple form: its text, and where a quoted value began.
    private struct Part {
        var value: String
        /// A quoted value, and what came before its quote (`body=`, or nothing).
        var quoted: (value: String, before: String)?
    }

    /// The simple form split into actions (`;`) and parts (`,`), quotes (`"` or `'`) keeping
    /// separators in a value: `body='{"a": 1, "b": 2}'`.
    private static func simpleForm(_ text: String) throws(ValidationError) -> [[Part]] {
        var actions: [[Part]] = []
        var parts: [Part] = []
        var current = ""
        var quoted: (value: String, before: String)?
        var quote: Character?
        func endPart() {
            // Empty parts are kept: `http, , https://…` has no label, not the URL as its label.
            parts.append(Part(value: current.trimmingASCIISpace(), quoted: quoted))
            current = ""
            quoted = nil
        }
        for character in text {
            if let open = quote {
                if character == open { quote = nil } else { quoted?.value.append(character); current.append(character) }
                continue
            }
            switch character {
            case "\"", "'":
                // A quote opens a value at its start (after `key=`, or a positional value's start).
                let before = current.trimmingASCIISpace()
                if before.isEmpty || before.hasSuffix("=") {
                    current = before
                    quote = character
                    quoted = ("", before)
                } else {
                    current.append(character)
                }
            case ",": endPart()
            case ";":
                endPart()
                if !isBlank(parts) { actions.append(parts) }
                parts = []
            default: current.append(character)
            }
        }
        if quote != nil { throw ValidationError("the actions have an unclosed quote") }
        endPart()
        if !isBlank(parts) { actions.append(parts) }
        return actions
    }

    /// An action with nothing in it (`a; ;` or a trailing `;`).
    private static func isBlank(_ parts: [Part]) -> Bool {
        parts.allSatisfy { $0.value.isEmpty && $0.quoted == nil }
    }

    /// `key=value` when the part starts with a name (letters, digits, `-`, `_`, `.`) and `=`;
    /// a URL such as `https://x/?a=b` is a positional value.
    private static func keyed(_ part: Part) -> (String, String)? {
        if let quoted = part.quoted {
            guard quoted.before.hasSuffix("=") else { return nil }
            let key = String(quoted.before.dropLast()).trimmingASCIISpace()
            return isName(key) ? (key, quoted.value) : nil
        }
        guard let equals = part.value.firstIndex(of: "=") else { return nil }
        let key = part.value[..<equals].trimmingASCIISpace()
        // A header's name is checked as a header name, so that a bad one is said to be one.
        guard isName(key) || key.lowercased().hasPrefix("headers.") else { return nil }
        return (key, part.value[part.value.index(after: equals)...].trimmingASCIISpace())
    }

    private static func isName(_ key: String) -> Bool {
        !key.isEmpty
            && key.unicodeScalars.allSatisfy {
                ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0) || "-_.".unicodeScalars.contains($0)
            }
    }
}

extension StringProtocol {
    /// Without leading and trailing spaces, tabs and line breaks (ASCII only: Foundation's
    /// `trimmingCharacters` costs a bridge to NSString, and actions are read on every publish).
    func trimmingASCIISpace() -> String {
        let text = String(self)
        let utf8 = text.utf8
        func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D }
        guard let first = utf8.firstIndex(where: { !isSpace($0) }), let last = utf8.lastIndex(where: { !isSpace($0) }) else { return "" }
        if first == utf8.startIndex && utf8.index(after: last) == utf8.endIndex { return text }
        return String(text[first...last])
    }
}
