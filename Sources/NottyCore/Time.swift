import Foundation

/// ISO 8601 UTC times with milliseconds, as every notty wire format writes them
/// (`2026-11-21T09:40:18.123Z`). Input with or without fractional seconds is accepted.
public enum ISOTime {
    private static let withFraction = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
    private static let withoutFraction = Date.ISO8601FormatStyle()

    /// Formats a time as `yyyy-MM-ddTHH:mm:ss.SSSZ` (UTC). Written by hand: it runs for every
    /// time in every answer, and `ISO8601FormatStyle` is several times slower.
    public static func format(_ date: Date) -> String {
        let total = millis(date)
        var seconds = time_t(total >= 0 ? total / 1000 : (total - 999) / 1000)
        let ms = Int(total - Int64(seconds) * 1000)
        var parts = tm()
        guard gmtime_r(&seconds, &parts) != nil, (0...9999).contains(Int(parts.tm_year) + 1900) else { return withFraction.format(date) }
        // Written in place, without an array per field.
        return String(unsafeUninitializedCapacity: 24) { out in
            var end = 0
            func put(_ value: Int, _ width: Int, _ separator: Unicode.Scalar) {
                var rest = value
                for i in stride(from: end + width - 1, through: end, by: -1) {
                    out[i] = UInt8(ascii: "0") + UInt8(rest % 10)
                    rest /= 10
                }
                out[end + width] = UInt8(ascii: separator)
                end += width + 1
            }
            put(Int(parts.tm_year) + 1900, 4, "-")
            put(Int(parts.tm_mon) + 1, 2, "-")
            put(Int(parts.tm_mday), 2, "T")
            put(Int(parts.tm_hour), 2, ":")
            put(Int(parts.tm_min), 2, ":")
            put(Int(parts.tm_sec), 2, ".")
            put(ms, 3, "Z")
            return end
        }
    }

    /// Parses an ISO 8601 time; `nil` when it is not one, or when it is outside the years
    /// 1…9999 (Foundation's lenient parser takes `202611-2-4T…`; that far out a `Date` cannot
    /// hold a millisecond, so such a time would change each time it is written and read).
    public static func parse(_ text: String) -> Date? {
        if let millis = parseUTC(text) { return date(millis: millis) }
        guard let date = (try? withFraction.parse(text)) ?? (try? withoutFraction.parse(text)),
            (firstMillis...lastMillis).contains(millis(date))
        else { return nil }
        return truncated(date)
    }

    /// 0001-01-01T00:00:00.000Z and 9999-12-31T23:59:59.999Z.
    static let firstMillis: Int64 = -62_135_596_800_000, lastMillis: Int64 = 253_402_300_799_999

    /// notty's own spelling, `yyyy-MM-ddTHH:mm:ss[.SSS]Z`, read by hand (every time in every
    /// page a client pulls goes through here; `ISO8601FormatStyle` is many times slower).
    /// Anything else is left to the full parser.
    static func parseUTC(_ text: String) -> Int64? {
        var text = text
        return text.withUTF8 { b -> Int64? in
            let count = b.count
            guard count == 20 || count == 24 else { return nil }
            func number(_ from: Int, _ width: Int) -> Int? {
                var value = 0
                for i in from..<(from + width) {
                    let digit = Int(b[i]) - 48
                    guard (0...9).contains(digit) else { return nil }
                    value = value * 10 + digit
                }
                return value
            }
            guard b[4] == UInt8(ascii: "-"), b[7] == UInt8(ascii: "-"), b[10] == UInt8(ascii: "T"),
                b[13] == UInt8(ascii: ":"), b[16] == UInt8(ascii: ":"), b[count - 1] == UInt8(ascii: "Z"),
                let year = number(0, 4), let month = number(5, 2), let day = number(8, 2),
                let hour = number(11, 2), let minute = number(14, 2), let second = number(17, 2),
                (1...12).contains(month), hour < 24, minute < 60, second < 60
            else { return nil }
            var ms = 0
            if count == 24 {
                guard b[19] == UInt8(ascii: "."), let fraction = number(20, 3) else { return nil }
                ms = fraction
            }
            let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
            let length = month == 2 ? (leap ? 29 : 28) : (month == 4 || month == 6 || month == 9 || month == 11) ? 30 : 31
            guard day >= 1, day <= length else { return nil }
            // Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
            let y = month <= 2 ? year - 1 : year
            let era = (y >= 0 ? y : y - 399) / 400
            let yearOfEra = y - era * 400
            let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
            let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
            let days = era * 146_097 + dayOfEra - 719_468
            return (Int64(days) * 86_400 + Int64(hour * 3600 + minute * 60 + second)) * 1000 + Int64(ms)
        }
    }

    /// Milliseconds since 1970, the unit notty stores times in.
    public static func millis(_ date: Date) -> Int64 {
        // Cut to the millisecond, except that a time within the Double's own error of a whole
        // millisecond is that millisecond: 1700000000.123 (stored as …0.12299999) is 123 ms,
        // and so is a time read from `…:00.123Z` in the year 2526, where `Date` (seconds since
        // 2001) carries some microseconds of error and going through 1970 adds as many.
        let ms = date.timeIntervalSince1970 * 1000
        // Past what an Int64 holds (a year beyond 290 million, or not a number): the nearest
        // that is, never a trap.
        guard ms.isFinite, ms.magnitude < 9.2e18 else { return ms.isNaN ? 0 : (ms < 0 ? Int64.min : Int64.max) }
        let nearest = ms.rounded()
        if (ms - nearest).magnitude <= max(0.0005, ms.magnitude.ulp * 8) { return Int64(nearest) }
        return Int64(ms.rounded(.down))
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

    /// Seconds as they would be written: the largest unit that divides them (`90s`, `15m`,
    /// `2h`, `3d`), so that ``seconds(_:)`` reads back the same number.
    public static func words(_ seconds: Int) -> String {
        for (suffix, factor) in [("w", 604_800), ("d", 86_400), ("h", 3600), ("m", 60)] where seconds > 0 && seconds % factor == 0 {
            return "\(seconds / factor)\(suffix)"
        }
        return "\(seconds)s"
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
                throw DecodingError.dataCorruptedError(
                    in: container, debugDescription: "expected an ISO 8601 time such as 2026-11-21T09:40:18.000Z, got \"\(text)\"")
            }
            return date
        }
        return decoder
    }()
}
