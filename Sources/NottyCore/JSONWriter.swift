import Foundation

/// Writes JSON by hand for the values every answer and page is made of, byte for byte what
/// ``NottyJSON/encoder`` writes (sorted keys, unescaped slashes, nulls kept) but without the
/// `Encoder` machinery, which was most of the cost of a 1,000-notification page. One
/// difference: `DEL` and the C1 controls are written as `\u` escapes (JSONEncoder writes them
/// raw), so no JSON that notty prints can drive a terminal.
public struct JSONWriter {
    public private(set) var bytes: [UInt8] = []

    public init(capacity: Int = 1024) {
        bytes.reserveCapacity(capacity)
    }

    public mutating func raw(_ text: StaticString) {
        text.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    public mutating func string(_ text: String) {
        bytes.append(UInt8(ascii: "\""))
        var afterC2 = false
        for byte in text.utf8 {
            // C1 controls (U+0080…U+009F, UTF-8 0xC2 0x80…0x9F) are escaped too, like DEL: still
            // exact JSON, and `--json` printed to a terminal cannot carry an 8-bit CSI or OSC.
            defer { afterC2 = byte == 0xC2 }
            if afterC2 && (0x80..<0xA0).contains(byte) {
                bytes.removeLast()
                raw(#"\u00"#)
                bytes.append(Hex.digit(byte >> 4))
                bytes.append(Hex.digit(byte & 0xF))
                continue
            }
            switch byte {
            case UInt8(ascii: "\""): raw(#"\""#)
            case UInt8(ascii: "\\"): raw(#"\\"#)
            case 0x0A: raw(#"\n"#)
            case 0x0D: raw(#"\r"#)
            case 0x09: raw(#"\t"#)
            case 0x08: raw(#"\b"#)
            case 0x0C: raw(#"\f"#)
            case 0..<0x20, 0x7F:
                raw(#"\u00"#)
                bytes.append(Hex.digit(byte >> 4))
                bytes.append(Hex.digit(byte & 0xF))
            default: bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }

    public mutating func string(_ text: String?) {
        if let text { string(text) } else { raw("null") }
    }

    mutating func time(_ date: Date?) {
        if let date { string(ISOTime.format(date)) } else { raw("null") }
    }

    public mutating func int(_ value: Int?) {
        if let value { bytes.append(contentsOf: String(value).utf8) } else { raw("null") }
    }

    /// `[a,b,…]`.
    public mutating func array(_ items: [some JSONWritable]) {
        raw("[")
        for (index, item) in items.enumerated() {
            if index > 0 { raw(",") }
            item.write(to: &self)
        }
        raw("]")
    }

    public mutating func value(_ value: JSONValue) {
        switch value {
        case .null: raw("null")
        case .bool(let flag): flag ? raw("true") : raw("false")
        case .number(let number):
            // As JSONEncoder writes a Double: whole numbers without a fraction.
            if number.rounded() == number, abs(number) < 1e15 {
                bytes.append(contentsOf: String(Int64(number)).utf8)
            } else {
                bytes.append(contentsOf: "\(number)".utf8)
            }
        case .string(let text): string(text)
        case .array(let items):
            bytes.append(UInt8(ascii: "["))
            for (index, item) in items.enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                self.value(item)
            }
            bytes.append(UInt8(ascii: "]"))
        case .object(let object):
            bytes.append(UInt8(ascii: "{"))
            for (index, key) in object.keys.sorted().enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                string(key)
                bytes.append(UInt8(ascii: ":"))
                self.value(object[key]!)
            }
            bytes.append(UInt8(ascii: "}"))
        }
    }
}

/// A value ``JSONWriter`` writes without an `Encoder`.
public protocol JSONWritable: Encodable {
    func write(to writer: inout JSONWriter)
}

extension JSONWritable {
    /// The value as JSON, the same bytes ``NottyJSON/encoder`` would write.
    public func jsonBytes() -> [UInt8] {
        var writer = JSONWriter()
        write(to: &writer)
        return writer.bytes
    }
}

extension UserNotification: JSONWritable {
    public func write(to w: inout JSONWriter) {
        // Keys in sorted order, as the encoder writes them.
        w.raw("{")
        if let actionResults, !actionResults.isEmpty { w.raw(#""actionResults":"#); w.array(actionResults); w.raw(",") }
        if let actions, !actions.isEmpty { w.raw(#""actions":"#); w.array(actions); w.raw(",") }
        w.raw(#""appNotificationId":"#); w.string(appNotificationId)
        if let changedBy {
            w.raw(#","changedBy":{"at":"#); w.time(changedBy.at)
            if let device = changedBy.device { w.raw(#","device":"#); w.string(device) }
            w.raw(#","user":"#); w.string(changedBy.user)
            w.raw("}")
        }
        w.raw(#","createdDateTime":"#); w.time(createdDateTime)
        w.raw(#","displayTimeToLive":"#); w.int(displayTimeToLive)
        if let escalations, !escalations.isEmpty { w.raw(#","escalations":"#); w.array(escalations) }
        w.raw(#","expirationDateTime":"#); w.time(expirationDateTime)
        if let fallbackPolicy { w.raw(#","fallbackPolicy":"#); w.value(fallbackPolicy) }
        w.raw(#","groupName":"#); w.string(groupName)
        w.raw(#","id":"#); w.string(id)
        w.raw(#","lastModifiedDateTime":"#); w.time(lastModifiedDateTime)
        if let launchUrl { w.raw(#","launchUrl":"#); w.string(launchUrl) }
        w.raw(#","payload":{"#)
        var first = true
        if let rawContent = payload.rawContent {
            w.raw(#""rawContent":"#); w.string(rawContent)
            first = false
        }
        if let visual = payload.visualContent {
            if !first { w.raw(",") }
            w.raw(#""visualContent":{"#)
            if let body = visual.body { w.raw(#""body":"#); w.string(body); w.raw(",") }
            w.raw(#""title":"#); w.string(visual.title)
            w.raw("}")
        }
        w.raw(#"},"priority":"#); w.string(priority.rawValue)
        w.raw(#","readState":"#); w.string(readState.rawValue)
        w.raw(#","snoozedUntil":"#); w.time(snoozedUntil)
        w.raw(#","status":"#); w.string(status.rawValue)
        w.raw(#","targetHostName":"#); w.string(targetHostName)
        if let targetPolicy { w.raw(#","targetPolicy":"#); w.value(targetPolicy) }
        if let team { w.raw(#","team":"#); w.string(team) }
        w.raw(#","userActionState":"#); w.string(userActionState.rawValue)
        w.raw("}")
    }
}

extension ChangesPage: JSONWritable {
    public func write(to w: inout JSONWriter) {
        w.raw(#"{"changes":["#)
        for (index, change) in changes.enumerated() {
            if index > 0 { w.raw(",") }
            change.write(to: &w)
        }
        w.raw(#"],"cursor":"#); w.string(cursor)
        w.raw(#","hasMore":"#); hasMore ? w.raw("true") : w.raw("false")
        if let preferences {
            w.raw(#","preferences":["#)
            for (index, entry) in preferences.enumerated() {
                if index > 0 { w.raw(",") }
                w.raw(#"{"changedAt":"#); w.time(entry.changedAt)
                w.raw(#","key":"#); w.string(entry.key)
                w.raw(#","value":"#); w.value(entry.value)
                w.raw("}")
            }
            w.raw("]")
        }
        w.raw("}")
    }
}
