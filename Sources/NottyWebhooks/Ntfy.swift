import Foundation
import NottyCore

/// ntfy's publish API (PROTOCOL.md §8.1), as pure functions: a request to `<base>/<topic>` (POST,
/// PUT, or GET `…/publish`), or a JSON body to `<base>/`, in; the message it asks for out.
/// The names, aliases and values are ntfy's (its `docs/publish.md`).
public enum Ntfy {
    /// One parameter's names, tried as headers (any case) and then as query parameters.
    enum Parameter: CaseIterable {
        case title, message, priority, tags, click, actions, icon, markdown, email, call, delay, sequenceId, attach, filename

        var names: [String] {
            switch self {
            case .title: ["x-title", "title", "ti", "t"]
            case .message: ["x-message", "message", "m"]
            case .priority: ["x-priority", "priority", "prio", "p"]
            case .tags: ["x-tags", "tags", "tag", "ta"]
            case .click: ["x-click", "click"]
            case .actions: ["x-actions", "actions", "action"]
            case .icon: ["x-icon", "icon"]
            case .markdown: ["x-markdown", "markdown", "md"]
            case .email: ["x-email", "x-e-mail", "email", "e-mail", "mail", "e"]
            case .call: ["x-call", "call"]
            case .delay: ["x-delay", "delay", "x-at", "at", "x-in", "in"]
            case .sequenceId: ["x-sequence-id", "sequence-id", "sid"]
            case .attach: ["x-attach", "attach", "a"]
            case .filename: ["x-filename", "filename", "file", "f"]
            }
        }

        /// Its value in a request: the first of its names among the headers (names are lower
        /// case there), else among the query parameters. As ntfy does, a header in RFC 2047's
        /// encoded words (`=?UTF-8?B?…?=`) is decoded, and an RFC 9218 `Priority: u=1, i`
        /// (which proxies such as Cloudflare add) is not ntfy's priority.
        func value(in request: WebhookRequest) -> String? {
            for name in names {
                guard let value = request.headers[name] else { continue }
                if self == .priority, value.trimmed().hasPrefix("u=") { continue }
                return value.contains("=?") ? EncodedWords.decode(value) : value
            }
            for name in names { if let value = request.query[name] { return value } }
            return nil
        }

        /// The member of a JSON publish that stands for it.
        var jsonName: String {
            switch self {
            case .sequenceId: "sequence_id"
            default: names[1]
            }
        }
    }

    /// A publish to the topic in the path: `POST`/`PUT <base>/<topic>` (the body is the
    /// message) or `GET <base>/<topic>/publish` (`withBody` false: parameters only).
    public static func message(_ request: WebhookRequest, withBody: Bool = true) throws(WebhookError) -> NtfyMessage {
        var body: String?
        if withBody, !request.body.isEmpty {
            guard let text = String(validating: request.body, as: UTF8.self) else {
                throw WebhookError("attachments are not supported: the body must be UTF-8 text")
            }
            body = text
        }
        return try message(body: body) { parameter in
            parameter.value(in: request)
        } json: { _ in
            nil
        }
    }

    /// A JSON publish to `<base>/`: `{"topic": …, "message": …, …}` (Apprise, Home Assistant,
    /// aiontfy). Headers and query parameters count where the JSON says nothing, as in ntfy.
    public static func jsonMessage(_ request: WebhookRequest) throws(WebhookError) -> (topic: String, message: NtfyMessage) {
        guard let json = request.json, case .object(let object) = json else {
            throw WebhookError("invalid request: the body must be an ntfy message as JSON, with a topic")
        }
        guard case .string(let topic)? = object["topic"], !topic.isEmpty else { throw WebhookError("invalid request: the JSON has no topic") }
        let parsed = try Self.message(body: nil) { parameter in
            parameter.value(in: request)
        } json: { parameter throws(WebhookError) in
            guard let value = object[parameter.jsonName] else { return nil }
            switch (parameter, value) {
            case (_, .null): return nil
            case (.priority, .string): throw WebhookError("invalid request: priority must be a number from 1 to 5 in a JSON publish")
            case (_, .string(let text)): return text
            case (.priority, .number(let number)): return number == number.rounded() && abs(number) < 1e6 ? String(Int(number)) : String(number)
            case (.markdown, .bool(let flag)): return flag ? "yes" : "no"
            case (.tags, .array(let items)):
                var tags: [String] = []
                for item in items {
                    guard case .string(let tag) = item else { throw WebhookError("invalid request: tags must be strings") }
                    tags.append(tag)
                }
                return tags.joined(separator: ",")
            case (.actions, .array):
                return (try? JSONEncoder().encode(value)).map { String(decoding: $0, as: UTF8.self) }
            default:
                throw WebhookError("invalid request: \(parameter.jsonName) has the wrong type")
            }
        }
        return (topic, parsed)
    }

    /// The message from its parameters: `json` first (a JSON publish), then `lookup`.
    static func message(body: String?, lookup: (Parameter) -> String?, json: (Parameter) throws(WebhookError) -> String?) throws(WebhookError)
        -> NtfyMessage
    {
        func value(_ parameter: Parameter) throws(WebhookError) -> String? {
            var found = try json(parameter)
            if found == nil { found = lookup(parameter) }
            return found.flatMap { $0.trimmed().isEmpty ? nil : $0 }
        }
        let attachment = try value(.attach), filename = try value(.filename)
        if attachment != nil || filename != nil { throw WebhookError("attachments are not supported") }
        let delayText = try value(.delay)
        let delay = try delayText.map { text throws(WebhookError) in try Self.delay(text) }
        var text = try value(.message) ?? ""
        if text.isEmpty { text = body ?? "" }
        if text.trimmed(newlines: true).isEmpty { text = "triggered" }  // ntfy's word for an empty publish
        let level = try priority(try value(.priority))
        let tags = try value(.tags).map { $0.split(separator: ",").map { $0.trimmed() }.filter { !$0.isEmpty } } ?? []
        var click = try value(.click)
        if let url = click, !LaunchURL.isValid(url) {
            throw WebhookError("invalid click URL: it must be an absolute http or https URL of at most 2,048 characters")
        }
        var actions: [NotificationAction] = []
        if let text = try value(.actions) {
            do {
                actions = try NotificationAction.parse(header: text)
            } catch {
                throw WebhookError("invalid request: actions invalid: \(error.message)")
            }
            if click == nil { click = actions.first { $0.kind == .view }?.url }
        }
        let sequenceId = try value(.sequenceId)
        if let sequenceId, !isValidSequenceId(sequenceId) {
            throw WebhookError("invalid sequence ID: 1 to 64 letters, digits, - and _")
        }
        let title = try value(.title)
        return NtfyMessage(
            title: title, message: text, priority: level, tags: tags, click: click, sequenceId: sequenceId, delay: delay, actions: actions)
    }

    /// `X-Delay`/`X-At`/`X-In`: a duration (`30s`, `10m`, `2h`, `1d`, or seconds) or a Unix time.
    static func delay(_ text: String) throws(WebhookError) -> NtfyMessage.Delay {
        let trimmed = text.trimmed()
        if trimmed.utf8.count >= 9, trimmed.allSatisfy(\.isASCIIDigit), let unix = Int64(trimmed) { return .at(unix) }
        if let seconds = DurationText.seconds(trimmed) { return .after(seconds: seconds) }
        throw WebhookError("invalid delay: use a duration such as 30m, 2h or 1d, or a Unix time (times of day in words are not understood)")
    }

    /// ntfy's sequence ids and topics: letters, digits, `-` and `_`, at most 64.
    public static func isValidSequenceId(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.count <= 64
            && text.utf8.allSatisfy { byte in
                (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5a) || (byte >= 0x61 && byte <= 0x7a) || byte == 0x2d || byte == 0x5f
            }
    }

    /// `1`–`5` or ntfy's names (absent: 3, the default).
    static func priority(_ text: String?) throws(WebhookError) -> Int {
        guard let text else { return 3 }
        switch text.trimmed().lowercased() {
        case "1", "min": return 1
        case "2", "low": return 2
        case "3", "default": return 3
        case "4", "high": return 4
        case "5", "max", "urgent": return 5
        default: throw WebhookError("invalid priority: use 1 to 5, or min, low, default, high, max, urgent")
        }
    }

}

/// What an ntfy publish asks for.
public struct NtfyMessage: Sendable, Equatable {
    public var title: String?
    public var message: String
    /// 1–5.
    public var priority: Int
    public var tags: [String]
    public var click: String?
    public var sequenceId: String?
    /// When to publish it, if not now.
    public var delay: Delay?
    /// Its actions (PROTOCOL.md §12), at most 3.
    public var actions: [NotificationAction] = []

    public enum Delay: Sendable, Equatable {
        case after(seconds: Int)
        /// Unix seconds.
        case at(Int64)

        /// The moment it stands for, from `now`.
        public func due(now: Date) -> Date {
            switch self {
            case .after(let seconds): now.addingTimeInterval(TimeInterval(seconds))
            case .at(let unix): Date(timeIntervalSince1970: TimeInterval(unix))
            }
        }
    }

    /// The notification it becomes: the title (or the message's first line) prefixed with the
    /// emoji of its tags that are emoji short codes, as ntfy shows them; other tags end the
    /// body as `#tag`.
    public func notification(appNotificationId: String) -> WebhookNotification {
        let emoji = tags.compactMap { NtfyEmoji.table[$0.lowercased()] }
        let others = tags.filter { NtfyEmoji.table[$0.lowercased()] == nil }
        var (heading, body): (String?, String?) = (title, message)
        if heading == nil { (heading, body) = TextHook.split(message) }
        if !others.isEmpty {
            let line = others.map { "#" + $0 }.joined(separator: " ")
            body = body.map { $0 + "\n\n" + line } ?? line
        }
        let shown = (emoji + [heading ?? "triggered"]).joined(separator: " ")
        return WebhookNotification(
            appNotificationId: appNotificationId, title: shown, body: body, priority: Self.level(priority), launchUrl: click, actions: actions)
    }

    /// ntfy's 1–5 as notty's priority: 4–5 High, 3 None, 1–2 Low.
    public static func level(_ priority: Int) -> Priority {
        priority >= 4 ? .high : priority == 3 ? .none : .low
    }

    /// notty's priority as ntfy's 1–5.
    public static func number(_ priority: Priority) -> Int {
        switch priority {
        case .high: 4
        case .none: 3
        case .low: 2
        }
    }
}

/// The emoji short codes tools send most as ntfy tags (ntfy's own table has every GitHub
/// short code; a tag not here ends the body as `#tag` instead).
enum NtfyEmoji {
    static let table: [String: String] = [
        "+1": "👍", "thumbsup": "👍", "-1": "👎", "thumbsdown": "👎", "warning": "⚠️", "rotating_light": "🚨",
        "x": "❌", "heavy_check_mark": "✔️", "white_check_mark": "✅", "heavy_multiplication_x": "✖️", "no_entry": "⛔",
        "no_entry_sign": "🚫", "tada": "🎉", "partying_face": "🥳", "skull": "💀", "fire": "🔥", "boom": "💥",
        "bell": "🔔", "no_bell": "🔕", "loudspeaker": "📢", "mega": "📣", "information_source": "ℹ️", "question": "❓",
        "exclamation": "❗", "bangbang": "‼️", "zap": "⚡", "bug": "🐛", "rocket": "🚀", "computer": "💻",
        "desktop_computer": "🖥️", "floppy_disk": "💾", "cd": "💿", "package": "📦", "lock": "🔒", "unlock": "🔓",
        "key": "🔑", "hammer": "🔨", "wrench": "🔧", "gear": "⚙️", "hourglass": "⌛", "stopwatch": "⏱️", "clock": "🕐",
        "calendar": "📅", "email": "📧", "envelope": "✉️", "inbox_tray": "📥", "outbox_tray": "📤", "link": "🔗",
        "chart_with_upwards_trend": "📈", "chart_with_downwards_trend": "📉", "house": "🏠", "house_with_garden": "🏡",
        "bulb": "💡", "battery": "🔋", "electric_plug": "🔌", "thermometer": "🌡️", "sunny": "☀️", "cloud": "☁️",
        "umbrella": "☔", "snowflake": "❄️", "droplet": "💧", "door": "🚪", "camera": "📷", "video_camera": "📹",
        "tv": "📺", "movie_camera": "🎥", "film_strip": "🎞️", "clapper": "🎬", "musical_note": "🎵", "headphones": "🎧",
        "cat": "🐱", "dog": "🐶", "whale": "🐳", "penguin": "🐧", "robot": "🤖", "ghost": "👻", "eyes": "👀",
        "heart": "❤️", "broken_heart": "💔", "star": "⭐", "sparkles": "✨", "100": "💯", "checkered_flag": "🏁",
        "triangular_flag_on_post": "🚩", "red_circle": "🔴", "green_circle": "🟢", "yellow_circle": "🟡",
        "large_blue_circle": "🔵", "white_circle": "⚪", "black_circle": "⚫", "arrow_up": "⬆️", "arrow_down": "⬇️",
        "recycle": "♻️", "wastebasket": "🗑️", "memo": "📝", "pencil": "📝", "clipboard": "📋", "pushpin": "📌",
        "mag": "🔍", "satellite": "📡", "globe_with_meridians": "🌐", "shield": "🛡️", "stop_sign": "🛑",
        "construction": "🚧", "ok": "🆗", "new": "🆕", "sos": "🆘", "smile": "😄", "grinning": "😀", "cry": "😢",
        "scream": "😱", "thinking": "🤔", "facepalm": "🤦", "see_no_evil": "🙈", "money_with_wings": "💸",
        "moneybag": "💰", "credit_card": "💳", "shopping_cart": "🛒", "truck": "🚚", "car": "🚗", "airplane": "✈️",
    ]
}

/// RFC 2047 encoded words in a header (`=?UTF-8?B?8J+agA==?=`, `=?utf-8?q?caf=C3=A9?=`), as
/// mail and some HTTP clients send non-ASCII header values. UTF-8, US-ASCII and ISO-8859-1;
/// a word in another charset, or one that cannot be read, is left as it is.
enum EncodedWords {
    static func decode(_ text: String) -> String {
        var result = ""
        var rest = Substring(text)
        var lastWasWord = false
        while let start = rest.range(of: "=?") {
            let before = rest[..<start.lowerBound]
            let afterStart = rest[start.upperBound...]
            let parts = afterStart.split(separator: "?", maxSplits: 3, omittingEmptySubsequences: false)
            guard parts.count == 4, parts[3].hasPrefix("="), let word = decodeWord(charset: parts[0], encoding: parts[1], text: parts[2]) else {
                result += before + "=?"
                rest = afterStart
                lastWasWord = false
                continue
            }
            // Blanks between two encoded words are not part of the text (RFC 2047 §6.2).
            if !(lastWasWord && before.allSatisfy { $0 == " " || $0 == "\t" }) { result += before }
            result += word
            rest = parts[3].dropFirst()
            lastWasWord = true
        }
        return result + rest
    }

    private static func decodeWord(charset: Substring, encoding: Substring, text: Substring) -> String? {
        var bytes: [UInt8]
        switch encoding.lowercased() {
        case "b":
            guard let data = Data(base64Encoded: String(text)) else { return nil }
            bytes = [UInt8](data)
        case "q":
            bytes = []
            var iterator = Array(text.utf8).makeIterator()
            while let byte = iterator.next() {
                if byte == UInt8(ascii: "_") {
                    bytes.append(0x20)
                } else if byte == UInt8(ascii: "="), let high = iterator.next(), let low = iterator.next(),
                    let value = UInt8(String(decoding: [high, low], as: UTF8.self), radix: 16)
                {
                    bytes.append(value)
                } else {
                    bytes.append(byte)
                }
            }
        default:
            return nil
        }
        switch charset.lowercased() {
        case "utf-8", "us-ascii": return String(validating: bytes, as: UTF8.self)
        case "iso-8859-1", "latin1": return String(String.UnicodeScalarView(bytes.map { Unicode.Scalar($0) }))
        default: return nil
        }
    }
}
