import Foundation

/// Quiet hours every day, or on some days (PROTOCOL.md §9): `22:00-07:00` wraps midnight, and a day
/// named in `days` is the day a window starts. Times are of `zone`, through its calendar, so
/// the window keeps its local times across daylight-saving changes.
///
/// As a preference: `{"from":"22:00","to":"07:00","days":["mon",…] or null (every day),
/// "zone":"Europe/Berlin","strict":false}`.
public struct QuietSchedule: Sendable, Equatable {
    public var from: DateComponents
    public var to: DateComponents
    /// Weekdays (1 Sunday … 7 Saturday) a window may start on; empty: every day.
    public var days: Set<Int>
    public var zone: TimeZone
    public var strict: Bool

    public static let dayNames = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"]

    public init(from: DateComponents, to: DateComponents, days: Set<Int> = [], zone: TimeZone, strict: Bool = false) {
        self.from = from
        self.to = to
        self.days = days
        self.zone = zone
        self.strict = strict
    }

    /// `HH:MM-HH:MM` (the same start and end is refused: that is no window or all day).
    public static func window(_ text: String) -> (from: DateComponents, to: DateComponents)? {
        let ends = text.split(separator: "-").map(String.init)
        guard ends.count == 2, let from = timeOfDay(ends[0]), let to = timeOfDay(ends[1]), from != to else { return nil }
        return (from, to)
    }

    /// `HH:MM`, 00:00 to 23:59.
    public static func timeOfDay(_ text: String) -> DateComponents? {
        let parts = text.split(separator: ":")
        guard parts.count == 2, parts.allSatisfy({ $0.count == 2 && $0.allSatisfy(\.isASCIIDigit) }),
            let hour = Int(parts[0]), let minute = Int(parts[1]), (0..<24).contains(hour), (0..<60).contains(minute)
        else { return nil }
        return DateComponents(hour: hour, minute: minute)
    }

    /// `mon-fri`, `sat,sun`, `mon,wed-fri` as weekdays; nil when a name is not a day.
    public static func days(_ text: String) -> Set<Int>? {
        var days: Set<Int> = []
        for part in text.lowercased().split(separator: ",") {
            let range = part.split(separator: "-").map { dayNames.firstIndex(of: String($0)) }
            guard !range.isEmpty, range.count <= 2, let first = range.first ?? nil, let last = range.last ?? nil else { return nil }
            var day = first
            while true {
                days.insert(day + 1)
                if day == last { break }
                day = (day + 1) % 7
            }
        }
        return days.isEmpty ? nil : days
    }

    /// When the window that contains `now` ends; nil when `now` is in none.
    public func end(containing now: Date) -> Date? {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        let wraps = minutes(from) > minutes(to)
        let today = calendar.startOfDay(for: now)
        // A window of today, and (when windows wrap midnight) one of yesterday that reaches into today.
        var starts = [today]
        if wraps, let yesterday = calendar.date(byAdding: .day, value: -1, to: today) { starts.append(yesterday) }
        for day in starts {
            guard days.isEmpty || days.contains(calendar.component(.weekday, from: day)),
                let start = time(from, on: day, calendar), let endDay = wraps ? calendar.date(byAdding: .day, value: 1, to: day) : day,
                let end = time(to, on: endDay, calendar)
            else { continue }
            if start <= now && now < end { return end }
        }
        return nil
    }

    private func minutes(_ time: DateComponents) -> Int { (time.hour ?? 0) * 60 + (time.minute ?? 0) }

    /// `time` of the day that starts at `day`, in the zone (a time a clock change skips is the next one that exists).
    private func time(_ time: DateComponents, on day: Date, _ calendar: Calendar) -> Date? {
        calendar.date(bySettingHour: time.hour ?? 0, minute: time.minute ?? 0, second: 0, of: day, matchingPolicy: .nextTime)
    }

    static func text(_ time: DateComponents) -> String { String(format: "%02d:%02d", time.hour ?? 0, time.minute ?? 0) }

    /// `22:00-07:00 mon-fri Europe/Berlin` (every day when no day is named).
    public var description: String {
        let named = days.sorted().map { Self.dayNames[$0 - 1] }.joined(separator: ",")
        return "\(Self.text(from))-\(Self.text(to)) \(days.isEmpty ? "every day" : named) \(zone.identifier)" + (strict ? ", High included" : "")
    }

    public var value: JSONValue {
        .object([
            "from": .string(Self.text(from)), "to": .string(Self.text(to)),
            "days": days.isEmpty ? .null : .array(days.sorted().map { .string(Self.dayNames[$0 - 1]) }),
            "zone": .string(zone.identifier), "strict": .bool(strict),
        ])
    }

    /// A schedule from its preference value; nil for `null` or a value that is not one.
    public init?(_ value: JSONValue) {
        guard case .object(let object) = value, case .string(let fromText)? = object["from"], case .string(let toText)? = object["to"],
            let from = Self.timeOfDay(fromText), let to = Self.timeOfDay(toText), from != to,
            case .string(let zoneName)? = object["zone"], let zone = TimeZone(identifier: zoneName)
        else { return nil }
        var days: Set<Int> = []
        if case .array(let names)? = object["days"] {
            for case .string(let name) in names { if let index = Self.dayNames.firstIndex(of: name.lowercased()) { days.insert(index + 1) } }
        }
        self.init(from: from, to: to, days: days, zone: zone, strict: object["strict"] == .bool(true))
    }
}
