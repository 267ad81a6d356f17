import Foundation

/// Decodes an enum from its Graph spelling, case-insensitively.
public protocol CaseInsensitiveEnum: RawRepresentable, CaseIterable, Codable, Sendable where RawValue == String {}

extension CaseInsensitiveEnum {
    /// The case whose spelling matches `text`, ignoring case.
    public init?(spelling text: String) {
        guard let match = Self.allCases.first(where: { $0.rawValue.caseInsensitiveCompare(text) == .orderedSame }) else { return nil }
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
