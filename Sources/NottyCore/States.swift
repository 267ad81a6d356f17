import Foundation

/// Whether two strings are equal ignoring the case of ASCII letters (Graph's spellings are
/// ASCII), without Foundation's locale-aware comparison.
func asciiCaseInsensitiveEqual(_ a: String, _ b: String) -> Bool {
    a.utf8.count == b.utf8.count && zip(a.utf8, b.utf8).allSatisfy { x, y in
        x == y || (x | 0x20 == y | 0x20 && (x | 0x20) >= UInt8(ascii: "a") && (x | 0x20) <= UInt8(ascii: "z"))
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
        guard let match = Self.allCases.first(where: { asciiCaseInsensitiveEqual($0.rawValue, text) }) else { return nil }
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
