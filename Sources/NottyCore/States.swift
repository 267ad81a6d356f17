import Foundation

extension StringProtocol {
    /// Equal when ASCII letters are folded to one case, as SQLite's `NOCASE` compares, without
    /// Foundation's locale-aware comparison: the rule for Graph's spellings and for app host
    /// names, which are ASCII (international names travel as punycode).
    public func equalsIgnoringASCIICase(_ other: some StringProtocol) -> Bool {
        utf8.elementsEqual(other.utf8) { a, b in
            a == b || (a ^ b == 0x20 && (a | 0x20) >= UInt8(ascii: "a") && (a | 0x20) <= UInt8(ascii: "z"))
        }
    }
}

/// Decodes an enum from its Graph spelling, case-insensitively.
public protocol CaseInsensitiveEnum: RawRepresentable, CaseIterable, Codable, Sendable where RawValue == String {}

extension CaseInsensitiveEnum {
    /// The case whose spelling matches `text`, ignoring case.
    public init?(spelling text: String) {
        if let exact = Self(rawValue: text) {  // the usual case, and the cheapest
            self = exact
            return
        }
        guard let match = Self.allCases.first(where: { $0.rawValue.equalsIgnoringASCIICase(text) }) else { return nil }
        self = match
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        guard let value = Self(spelling: text) else {
            let allowed = Self.allCases.map(\.rawValue).joined(separator: ", ")
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "\"\(text)\" is not one of \(allowed)")
        }
        self = value
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}

public enum Priority: String, CaseInsensitiveEnum {
    case none = "None"
    case high = "High"
    case low = "Low"
}

public enum NotificationStatus: String, CaseInsensitiveEnum {
    case active = "Active"
    case deleted = "Deleted"
}

public enum ReadState: String, CaseInsensitiveEnum {
    case unread = "Unread"
    case read = "Read"
}

public enum UserActionState: String, CaseInsensitiveEnum {
    case noInteraction = "NoInteraction"
    case activated = "Activated"
    case dismissed = "Dismissed"
    case snoozed = "Snoozed"
}
