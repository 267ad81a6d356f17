import Foundation

/// ISO 8601 UTC times with milliseconds, as every notty wire format writes them
/// (`2026-11-21T09:40:18.123Z`). Input with or without fractional seconds is accepted.
public enum ISOTime {
    private static let withFraction = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
    private static let withoutFraction = Date.ISO8601FormatStyle()

    /// Formats a time as `yyyy-MM-ddTHH:mm:ss.SSSZ`.
    public static func format(_ date: Date) -> String {
        withFraction.format(date)
    }

    /// Parses an ISO 8601 time; `nil` when it is not one.
    public static func parse(_ text: String) -> Date? {
        if let date = try? withFraction.parse(text) { return date }
        if let date = try? withoutFraction.parse(text) { return date }
        return nil
    }

    /// Milliseconds since 1970, the unit notty stores times in.
    public static func millis(_ date: Date) -> Int64 {
        Int64((date.timeIntervalSince1970 * 1000).rounded(.down))
    }

    /// `date` cut to whole milliseconds, the precision notty stores and writes.
    public static func truncated(_ date: Date) -> Date {
        self.date(millis: millis(date))
    }

    /// The time for a count of milliseconds since 1970.
    public static func date(millis: Int64) -> Date {
        Date(timeIntervalSince1970: Double(millis) / 1000)
    }
}

/// Durations as people write them on a command line: `90s`, `15m`, `4h`, `7d`, `2w`,
/// or a plain number of seconds.
public enum DurationText {
    /// Parses a duration into seconds; `nil` when it is not a positive duration.
    public static func seconds(_ text: String) -> Int? {
        let trimmed = text.trimmingCharacters(in: .whitespaces).lowercased()
        guard !trimmed.isEmpty else { return nil }
        let units: [(String, Int)] = [("ms", 0), ("s", 1), ("m", 60), ("h", 3600), ("d", 86_400), ("w", 604_800)]
        for (suffix, factor) in units where trimmed.hasSuffix(suffix) {
            if suffix == "ms" { return nil }
            guard let number = Int(trimmed.dropLast(suffix.count)), number > 0 else { return nil }
            let (product, overflow) = number.multipliedReportingOverflow(by: factor)
            return overflow ? nil : product
        }
        guard let number = Int(trimmed), number > 0 else { return nil }
        return number
    }
}

/// Shared JSON coders with notty's conventions (times as ISO 8601 with milliseconds).
public enum NottyJSON {
    public static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(ISOTime.format(date))
        }
        encoder.outputFormatting = [.withoutEscapingSlashes, .sortedKeys]
        return encoder
    }()

    public static let decoder: JSONDecoder = {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let container = try decoder.singleValueContainer()
            let text = try container.decode(String.self)
            guard let date = ISOTime.parse(text) else {
                throw DecodingError.dataCorruptedError(in: container, debugDescription: "expected an ISO 8601 time such as 2026-11-21T09:40:18.000Z, got \"\(text)\"")
            }
            return date
        }
        return decoder
    }()
}
