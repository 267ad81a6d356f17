import Foundation
import NottyCore

/// Form bodies: `application/x-www-form-urlencoded` and `multipart/form-data` (RFC 7578),
/// read as text fields. File parts are not fields: they are refused by whoever reads the
/// form (notty keeps no attachments).
public enum FormFields {
    /// The fields of `request`'s body when its `Content-Type` is a form, else nil; a form that
    /// cannot be read is an error.
    public static func fields(of request: WebhookRequest) throws(WebhookError) -> [String: String]? {
        guard let type = request.header("Content-Type") else { return nil }
        let media = type.split(separator: ";", maxSplits: 1).first.map { $0.trimmed().lowercased() } ?? ""
        switch media {
        case "application/x-www-form-urlencoded":
            guard let text = String(validating: request.body, as: UTF8.self) else { throw WebhookError("the form is not UTF-8") }
            return urlencoded(text)
        case "multipart/form-data":
            guard let boundary = parameter("boundary", of: type), !boundary.isEmpty, boundary.utf8.count <= 70 else {
                throw WebhookError("a multipart/form-data body needs a boundary parameter in its Content-Type")
            }
            return try multipart(request.body, boundary: boundary)
        default:
            return nil
        }
    }

    /// `a=1&b=x+y` → `["a": "1", "b": "x y"]` (the last of repeated names).
    public static func urlencoded(_ text: String) -> [String: String] {
        var fields: [String: String] = [:]
        for pair in text.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let key = decode(parts[0])
            if !key.isEmpty { fields[key] = parts.count > 1 ? decode(parts[1]) : "" }
        }
        return fields
    }

    /// One urlencoded name or value: `+` is a space, then percent escapes (as browsers and
    /// ntfy read a query string too).
    public static func decode(_ text: Substring) -> String {
        let spaced = text.replacingOccurrences(of: "+", with: " ")
        return spaced.removingPercentEncoding ?? spaced
    }

    /// A parameter of a header value such as `multipart/form-data; boundary="x"`.
    static func parameter(_ name: String, of value: String) -> String? {
        for part in value.split(separator: ";").dropFirst() {
            let pieces = part.split(separator: "=", maxSplits: 1)
            guard pieces.count == 2, pieces[0].trimmed().lowercased() == name else { continue }
            var found = pieces[1].trimmed()
            if found.count >= 2, found.hasPrefix("\""), found.hasSuffix("\"") { found = String(found.dropFirst().dropLast()) }
            return found
        }
        return nil
    }

    /// The text fields of a multipart body. A part with a file name, a part that is not UTF-8,
    /// or a body without its closing delimiter is an error.
    static func multipart(_ body: Data, boundary: String) throws(WebhookError) -> [String: String] {
        let bytes = [UInt8](body)
        let delimiter = Array("--\(boundary)".utf8)
        var fields: [String: String] = [:]
        guard var position = find(delimiter, in: bytes, from: 0) else {
            throw WebhookError("the multipart body has no part delimited by its boundary")
        }
        position += delimiter.count
        while true {
            // After a delimiter: "--" closes the body; otherwise the line ends and a part begins.
            if bytes.count >= position + 2, bytes[position] == UInt8(ascii: "-"), bytes[position + 1] == UInt8(ascii: "-") { return fields }
            guard let lineEnd = find([13, 10], in: bytes, from: position) else { throw WebhookError("the multipart body ends inside a part") }
            let partStart = lineEnd + 2
            // From the delimiter line's own end, so a part without headers is read too.
            guard let headEnd = find([13, 10, 13, 10], in: bytes, from: lineEnd) else {
                throw WebhookError("a multipart part has no end to its headers")
            }
            let head = String(decoding: bytes[partStart..<max(partStart, headEnd)], as: UTF8.self)
            let contentStart = headEnd + 4
            guard let next = find([13, 10] + delimiter, in: bytes, from: contentStart) else {
                throw WebhookError("the multipart body has no closing boundary")
            }
            var name: String?
            for line in head.split(separator: "\r\n") {
                let pieces = line.split(separator: ":", maxSplits: 1)
                guard pieces.count == 2, pieces[0].trimmed().lowercased() == "content-disposition" else { continue }
                let value = String(pieces[1])
                // filename or RFC 5987's filename*: a file, whatever its name's encoding.
                let names = value.split(separator: ";").dropFirst().map { $0.split(separator: "=", maxSplits: 1).first?.trimmed().lowercased() ?? "" }
                if names.contains(where: { $0.hasPrefix("filename") }) { throw WebhookError("attachments are not supported: send text fields only") }
                name = parameter("name", of: value)
            }
            guard let name, !name.isEmpty else { throw WebhookError("a multipart part has no name (Content-Disposition: form-data; name=\"…\")") }
            guard let text = String(validating: bytes[contentStart..<next], as: UTF8.self) else {
                throw WebhookError("the field \(name) is not UTF-8 text (attachments are not supported)")
            }
            fields[name] = text
            position = next + 2 + delimiter.count
        }
    }

    /// Where `needle` first occurs in `haystack` at or after `start`.
    static func find(_ needle: [UInt8], in haystack: [UInt8], from start: Int) -> Int? {
        guard !needle.isEmpty, start >= 0, haystack.count - needle.count >= start else { return nil }
        let first = needle[0]
        var i = start
        let last = haystack.count - needle.count
        while i <= last {
            if haystack[i] == first {
                var j = 1
                while j < needle.count && haystack[i + j] == needle[j] { j += 1 }
                if j == needle.count { return i }
            }
            i += 1
        }
        return nil
    }
}

/// A form body on the hook URL (Apprise's `form://`, HTML forms, `curl -F`): the fields
/// `title`, `message` or `body`, `priority`, `group`, `id`, `url` and `expires`, as in a JSON body.
public enum FormHook: WebhookKind {
    public static let name = "form"

    /// A multipart body, or an urlencoded one with a `title`, `message` or `body` field: curl's
    /// `-d 'Backup failed'` is sent as urlencoded too, and stays text.
    public static func recognises(_ request: WebhookRequest) -> Bool {
        let type = request.header("Content-Type")?.lowercased() ?? ""
        if type.hasPrefix("multipart/form-data") { return true }
        guard type.hasPrefix("application/x-www-form-urlencoded"), let text = String(validating: request.body, as: UTF8.self) else { return false }
        let fields = FormFields.urlencoded(text)
        return fields["title"] != nil || fields["message"] != nil || fields["body"] != nil
    }

    public static func notifications(_ request: WebhookRequest) throws(WebhookError) -> [WebhookNotification] {
        guard let fields = try FormFields.fields(of: request) else { throw WebhookError("the body is not a form") }
        return [try JSONHook.notification(.object(fields.mapValues { JSONValue.string($0) }), what: "a form")]
    }
}
