import Foundation

/// Reads the members of a parsed JSON object with messages a person can act on. One reader
/// with two leniencies:
/// - `.request`: what the service reads from a client (PROTOCOL.md §2). Strings are checked (not
///   empty unless allowed, a maximum length, no U+0000, which neither store keeps whole), an
///   integer may be a string of digits (Graph's `displayTimeToLive: "60"`) and is at most
///   2³¹−1; a message names the member (`title must be a string`).
/// - `.wire`: what a device reads from the service (`WireReading.swift`). Types are checked,
///   strings kept as they are; a message says where the member is (`title of visualContent of
///   payload of a notification is required`).
///
/// The members are kept in the order given and the last of a repeated key wins, as in a
/// dictionary built from the text: a notification has about 17, found by comparing keys,
/// which costs less than hashing them into a dictionary and looking them up.
public struct JSONFields {
    public enum Leniency: Sendable { case request, wire }

    let members: [(key: String, value: JSONValue)]
    let what: String
    let leniency: Leniency

    init(members: [(key: String, value: JSONValue)], _ what: String, leniency: Leniency) {
        self.members = members
        self.what = what
        self.leniency = leniency
    }

    /// Parses a request body into an object. Arrays get "batches are not supported".
    public init(body: Data) throws(ValidationError) {
        guard let value = JSONParser.parse(body) else {
            throw ValidationError("the body is not valid JSON")
        }
        try self.init(value: value, what: "the body")
    }

    /// A request's object (`what` names it in messages when it is not one).
    public init(value: JSONValue, what: String, leniency: Leniency = .request) throws(ValidationError) {
        switch value {
        case .object(let object): self.init(members: object.map { (key: $0.key, value: $0.value) }, what, leniency: leniency)
        case .array where leniency == .request: throw ValidationError("\(what) is a JSON array: batches are not supported, send one object")
        default: throw ValidationError("\(what) must be a JSON object")
        }
    }

    /// Reads the object at the parser's position member by member (`.wire`).
    init(reading parser: inout JSONParser, _ what: String) throws(ValidationError) {
        var members: [(key: String, value: JSONValue)] = []
        members.reserveCapacity(20)
        guard
            parser.readObject({ key, parser in
                guard let value = parser.readValue() else { return false }
                members.append((key, value))
                return true
            })
        else { throw ValidationError("\(what) must be a JSON object") }
        self.init(members: members, what, leniency: .wire)
    }

    /// How a message names `key`.
    private func label(_ key: String) -> String {
        leniency == .wire ? "\(key) of \(what)" : key
    }

    private func present(_ key: String) -> JSONValue? {
        guard let value = members.last(where: { $0.key == key })?.value, value != .null else { return nil }
        return value
    }

    /// The value `read` finds for `key`; "… is required" when there is none.
    func required<T>(_ key: String, _ read: (String) throws(ValidationError) -> T?) throws(ValidationError) -> T {
        guard let value = try read(key) else { throw ValidationError("\(label(key)) is required") }
        return value
    }

    func requiredString(_ key: String) throws(ValidationError) -> String {
        try required(key) { key throws(ValidationError) in try string(key) }
    }

    public func string(_ key: String, max: Int? = nil, required: Bool = false, allowEmpty: Bool = false) throws(ValidationError) -> String? {
        guard let value = present(key) else {
            if required { throw ValidationError("\(label(key)) is required") }
            return nil
        }
        guard case .string(let text) = value else { throw ValidationError("\(label(key)) must be a string") }
        guard leniency == .request else { return text }
        if !allowEmpty && text.isEmpty { throw ValidationError("\(key) must not be empty") }
        if let max, text.unicodeScalars.count > max { throw ValidationError("\(key) is longer than \(max) characters") }
        // Neither store keeps it whole: PostgreSQL's text refuses it, SQLite's cuts the text there.
        if text.containsNUL { throw ValidationError("\(key) must not contain the character U+0000 (NUL)") }
        return text
    }

    /// A whole number: in a request, a JSON number or a numeric string from 0 to 2³¹−1 (Graph's
    /// `displayTimeToLive: "60"`); on the wire, a JSON number.
    public func integer(_ key: String) throws(ValidationError) -> Int? {
        guard let value = present(key) else { return nil }
        if leniency == .wire {
            guard case .number(let number) = value, number == number.rounded(), abs(number) < 9e15 else {
                throw ValidationError("\(label(key)) must be a whole number")
            }
            return Int(number)
        }
        switch value {
        case .number(let number) where number == number.rounded() && abs(number) <= 2_147_483_647:
            return Int(number)
        case .string(let text):
            let digits = text.trimmingCharacters(in: .whitespaces)
            if !digits.isEmpty, digits.count <= 10, digits.allSatisfy(\.isASCIIDigit), let number = Int(digits), number <= 2_147_483_647 {
                return number
            }
        default: break
        }
        throw ValidationError("\(key) must be a whole number from 0 to 2147483647 (or a string of digits)")
    }

    public func bool(_ key: String) throws(ValidationError) -> Bool? {
        guard let value = present(key) else { return nil }
        guard case .bool(let flag) = value else { throw ValidationError("\(label(key)) must be true or false") }
        return flag
    }

    public func time(_ key: String) throws(ValidationError) -> Date? {
        guard let value = present(key) else { return nil }
        guard case .string(let text) = value, let date = ISOTime.parse(text) else {
            throw ValidationError("\(label(key)) must be an ISO 8601 time such as 2026-11-21T09:40:18.000Z")
        }
        return date
    }

    /// A time given as an ISO 8601 string or as milliseconds since 1970.
    public func clock(_ key: String) throws(ValidationError) -> Int64? {
        guard let value = present(key) else { return nil }
        switch value {
        case .number(let number) where number >= 0 && number < 1e15 && number == number.rounded(): return Int64(number)
        case .string(let text):
            if let date = ISOTime.parse(text) { return ISOTime.millis(date) }
        default: break
        }
        throw ValidationError("\(label(key)) must be an ISO 8601 time or milliseconds since 1970")
    }

    public func enumeration<E: CaseInsensitiveEnum>(_ key: String, _ type: E.Type) throws(ValidationError) -> E? {
        guard let value = present(key) else { return nil }
        guard case .string(let text) = value, let result = E(spelling: text) else {
            throw ValidationError("\(label(key)) must be one of \(E.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        return result
    }

    /// The object at `key`, read with this leniency; on the wire, its messages say where it is.
    public func nested(_ key: String, required: Bool = false) throws(ValidationError) -> JSONFields? {
        guard let value = present(key) else {
            if required { throw ValidationError("\(label(key)) is required") }
            return nil
        }
        guard case .object = value else { throw ValidationError("\(label(key)) must be a JSON object") }
        return try JSONFields(value: value, what: label(key), leniency: leniency)
    }

    public func any(_ key: String) -> JSONValue? { present(key) }

    public func array(_ key: String, required: Bool = false) throws(ValidationError) -> [JSONValue]? {
        guard let value = present(key) else {
            if required { throw ValidationError("\(label(key)) is required") }
            return nil
        }
        guard case .array(let items) = value else { throw ValidationError("\(label(key)) must be a JSON array") }
        return items
    }
}
