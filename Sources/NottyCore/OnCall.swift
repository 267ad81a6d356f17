import Foundation

// On call (PROTOCOL.md §13.2): a team's rotation and overrides, and who is on call at any
// instant: a pure function of them, so that a manual clock tests it.

/// How long one shift lasts: hours, days or weeks. A day or week shift hands off at the same
/// local time in the rotation's zone across daylight-saving changes (a shift that spans one
/// lasts an hour more or less); an hour shift is that many hours of real time.
public struct ShiftLength: Codable, Sendable, Equatable, CustomStringConvertible {
    public enum Unit: String, Codable, Sendable {
        case hours = "h"
        case days = "d"
        case weeks = "w"
    }
    public var count: Int
    public var unit: Unit

    /// The longest shift: four weeks.
    public static let maxHours = 4 * 7 * 24

    public init(count: Int, unit: Unit) {
        self.count = count
        self.unit = unit
    }

    /// `12h`, `1d`, `1w`; a message a person can act on otherwise.
    public init(parsing text: String) throws(ValidationError) {
        let trimmed = text.trimmingCharacters(in: .whitespaces).lowercased()
        guard let last = trimmed.last, let unit = Unit(rawValue: String(last)), let count = Int(trimmed.dropLast()) else {
            throw ValidationError("shift \"\(text.prefix(40))\" is not a shift: write hours, days or weeks, such as 12h, 1d or 1w")
        }
        guard count > 0 else { throw ValidationError("a shift must be longer than 0: such as 12h, 1d or 1w") }
        let hours = count.multipliedReportingOverflow(by: unit == .hours ? 1 : unit == .days ? 24 : 168)
        guard !hours.overflow, hours.partialValue <= Self.maxHours else {
            throw ValidationError("a shift is at most 4 weeks (4w, 28d or 672h); \(text) is longer")
        }
        self.init(count: count, unit: unit)
    }

    public var description: String { "\(count)\(unit.rawValue)" }

    /// Its nominal length in seconds (a day shift across a daylight-saving change differs by an hour).
    public var nominalSeconds: Int { count * (unit == .hours ? 3600 : unit == .days ? 86_400 : 604_800) }

    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        do { try self.init(parsing: text) } catch {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: error.message))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}

/// Someone on call instead of the rotation for a while. Of overlapping overrides the one made
/// later wins.
public struct OnCallOverride: Codable, Sendable, Equatable {
    public var id: String
    public var user: String
    public var from: Date
    public var until: Date
    /// When it was made; who made it.
    public var created: Date
    public var by: String

    public init(id: String, user: String, from: Date, until: Date, created: Date, by: String) {
        self.id = id
        self.user = user
        self.from = from
        self.until = until
        self.created = created
        self.by = by
    }
}

/// One stretch of time with one person on call.
public struct OnCallShift: Codable, Sendable, Equatable {
    public var user: String
    public var from: Date
    public var until: Date
    /// Whether an override put them there (else the rotation did).
    public var override: Bool

    public init(user: String, from: Date, until: Date, override: Bool = false) {
        self.user = user
        self.from = from
        self.until = until
        self.override = override
    }
}

/// A team's on-call schedule: a rotation (members in turn, a shift each, from `start`, with
/// handoffs computed in `zone`) and overrides. Before `start` the rotation puts nobody on call.
public struct OnCallSchedule: Codable, Sendable, Equatable {
    /// User names, in turn.
    public var rotation: [String]
    public var shift: ShiftLength
    /// The first handoff.
    public var start: Date
    /// An IANA zone name, such as Europe/Berlin.
    public var zone: String
    public var overrides: [OnCallOverride]

    /// The most overrides a team keeps, and the most one member holds of their own (PROTOCOL.md §15):
    /// beyond either a new one is refused, so that nobody's push out anybody else's.
    public static let maxOverrides = 200, maxOverridesPerMember = 50
    /// The longest rotation.
    public static let maxRotation = 200

    public init(rotation: [String], shift: ShiftLength, start: Date, zone: String, overrides: [OnCallOverride] = []) {
        self.rotation = rotation
        self.shift = shift
        self.start = start
        self.zone = zone
        self.overrides = overrides
    }

    /// The calendar that counts days and weeks in the rotation's zone.
    var calendar: Calendar {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: zone) ?? .gmt
        return calendar
    }

    /// The `k`-th handoff (0: `start`).
    public func handoff(_ k: Int) -> Date {
        switch shift.unit {
        case .hours: return start + TimeInterval(k * shift.count * 3600)
        case .days, .weeks:
            let days = k * shift.count * (shift.unit == .days ? 1 : 7)
            return calendar.date(byAdding: .day, value: days, to: start) ?? start + TimeInterval(days * 86_400)
        }
    }

    /// Which shift of the rotation `date` is in (nil: before `start`, or an empty rotation).
    public func shiftIndex(at date: Date) -> Int? {
        guard !rotation.isEmpty, date >= start else { return nil }
        var k = Int(date.timeIntervalSince(start) / Double(shift.nominalSeconds))
        while k > 0 && handoff(k) > date { k -= 1 }
        while handoff(k + 1) <= date { k += 1 }
        return k
    }

    /// Who the rotation puts on call at `date`, with their shift.
    public func rotationShift(at date: Date) -> OnCallShift? {
        guard let k = shiftIndex(at: date) else { return nil }
        return OnCallShift(user: rotation[k % rotation.count], from: handoff(k), until: handoff(k + 1))
    }

    /// The override in force at `date` (the latest made of those that cover it).
    public func override(at date: Date) -> OnCallOverride? {
        overrides.filter { $0.from <= date && date < $0.until }.max { ($0.created, $0.id) < ($1.created, $1.id) }
    }

    /// Who is on call at `date`: an override's user, else the rotation's; nil: nobody.
    public func onCall(at date: Date) -> String? {
        override(at: date)?.user ?? rotationShift(at: date)?.user
    }

    /// Who is on call from `from` until `until`, as stretches of one person each (a person's
    /// consecutive shifts are one stretch); times nobody is on call are left out.
    public func shifts(from: Date, until: Date) -> [OnCallShift] {
        guard from < until else { return [] }
        var edges: Set<Date> = [from, until]
        if !rotation.isEmpty {
            // Every handoff in the window (the first is `start` when the window begins before it).
            var k = shiftIndex(at: from).map { $0 + 1 } ?? 0
            while edges.count < 100_000 {
                let at = handoff(k)
                if at >= until { break }
                if at > from { edges.insert(at) }
                k += 1
            }
        }
        for override in overrides {
            for edge in [override.from, override.until] where edge > from && edge < until { edges.insert(edge) }
        }
        let sorted = edges.sorted()
        var result: [OnCallShift] = []
        for (begin, end) in zip(sorted, sorted.dropFirst()) {
            let byOverride = override(at: begin)
            guard let user = byOverride?.user ?? rotationShift(at: begin)?.user else { continue }
            if var last = result.last, last.user == user, last.until == begin, last.override == (byOverride != nil) {
                last.until = end
                result[result.count - 1] = last
            } else {
                result.append(OnCallShift(user: user, from: begin, until: end, override: byOverride != nil))
            }
        }
        return result
    }

    /// Until when `user` is on call without a break, if they are at `now` (looking up to `horizon` ahead).
    public func onCallUntil(user: String, now: Date, horizon: TimeInterval = 90 * 86_400) -> Date? {
        guard onCall(at: now) == user else { return nil }
        var until = now
        for shift in shifts(from: now, until: now + horizon) {
            guard shift.user == user, shift.from <= until else { break }
            until = shift.until
        }
        return until
    }
}

extension OnCallSchedule {
    /// Why a stored schedule could not be read: said as it is wherever the schedule is needed
    /// (never taken for "no rotation", which a write over it would make true).
    public struct Unreadable: Error, Sendable, Equatable, CustomStringConvertible {
        public var team: String
        public var reason: String
        public init(team: String, reason: String) {
            self.team = team
            self.reason = reason
        }
        public var description: String {
            "the on-call schedule of \(team) cannot be read (\(reason)): the administrator restores it from a backup, or an owner sets the rotation again"
        }
    }

    /// A schedule as stored (JSON), read whole or not at all: its times within ``LocalTime/years``.
    public static func decode(stored text: String, team: String) throws(Unreadable) -> OnCallSchedule {
        let schedule: OnCallSchedule
        do {
            schedule = try NottyJSON.decoder.decode(OnCallSchedule.self, from: Data(text.utf8))
        } catch {
            throw Unreadable(team: team, reason: "\(error)".prefix(200).description)
        }
        let times = [schedule.start] + schedule.overrides.flatMap { [$0.from, $0.until] }
        guard times.allSatisfy(LocalTime.isWithinYears) else { throw Unreadable(team: team, reason: "a time outside the years 1970–9999") }
        return schedule
    }

    /// The schedule as stored.
    public func encoded() throws -> String {
        String(decoding: try NottyJSON.encoder.encode(self), as: UTF8.self)
    }
}

// MARK: - Reading times and zones

/// Times as on-call commands take them: `YYYY-MM-DD HH:MM` in a zone, or ISO 8601 with an offset.
public enum LocalTime {
    /// The zone named `name`, or a message naming a few.
    public static func zone(_ name: String) throws(ValidationError) -> TimeZone {
        guard !name.isEmpty, name.count <= 64, let zone = TimeZone(identifier: name) else {
            throw ValidationError("unknown time zone \"\(name.prefix(64))\": give an IANA name such as Europe/Berlin, America/New_York or UTC")
        }
        return zone
    }

    /// The years a schedule's times are in (PROTOCOL.md §15): what every store reads back and writes the same.
    public static let years = 1970...9999
    /// 1970-01-01T00:00:00Z and 10000-01-01T00:00:00Z.
    static let firstInstant = Date(timeIntervalSince1970: 0), endInstant = Date(timeIntervalSince1970: 253_402_300_800)

    /// Whether `date` is within ``years`` (UTC).
    public static func isWithinYears(_ date: Date) -> Bool {
        date >= firstInstant && date < endInstant
    }

    /// `text` as an instant: `YYYY-MM-DD HH:MM` (or `THH:MM`) in `zone`, or ISO 8601 with a `Z`
    /// or an offset; within ``years``.
    public static func parse(_ text: String, zone: TimeZone, field: String) throws(ValidationError) -> Date {
        let date = try parseAnyYear(text, zone: zone, field: field)
        guard isWithinYears(date) else {
            throw ValidationError("\(field) \"\(text.prefix(40))\" is outside the years 1970–9999: write a time such as \"2026-12-07 09:00\"")
        }
        return date
    }

    private static func parseAnyYear(_ text: String, zone: TimeZone, field: String) throws(ValidationError) -> Date {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if let date = ISOTime.parse(trimmed) { return date }
        let parts = trimmed.split(whereSeparator: { $0 == " " || $0 == "T" })
        if parts.count == 2 {
            let day = parts[0].split(separator: "-").compactMap { Int($0) }, time = parts[1].split(separator: ":").compactMap { Int($0) }
            if day.count == 3, time.count == 2 || time.count == 3, (1...99_999).contains(day[0]), (1...12).contains(day[1]),
                (1...31).contains(day[2]), (0...23).contains(time[0]),
                (0...59).contains(time[1])
            {
                var calendar = Calendar(identifier: .gregorian)
                calendar.timeZone = zone
                let components = DateComponents(year: day[0], month: day[1], day: day[2], hour: time[0], minute: time[1])
                if let date = calendar.date(from: components), calendar.component(.day, from: date) == day[2] { return date }
            }
        }
        throw ValidationError("\(field) \"\(text.prefix(40))\" is not a time: write \"YYYY-MM-DD HH:MM\" (such as \"2026-12-07 09:00\")")
    }

    /// `date` as `YYYY-MM-DD HH:MM` in `zone`.
    public static func format(_ date: Date, zone: TimeZone) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        let c = calendar.dateComponents([.year, .month, .day, .hour, .minute], from: date)
        return String(format: "%04d-%02d-%02d %02d:%02d", c.year ?? 0, c.month ?? 0, c.day ?? 0, c.hour ?? 0, c.minute ?? 0)
    }

    /// `date` as a person reads it near `now`: `Mon 09:00` within a week, `2026-12-24 18:00` beyond.
    public static func short(_ date: Date, now: Date, zone: TimeZone) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        let c = calendar.dateComponents([.weekday, .hour, .minute], from: date)
        guard abs(date.timeIntervalSince(now)) < 6 * 86_400 else { return format(date, zone: zone) }
        let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        return String(format: "%@ %02d:%02d", days[((c.weekday ?? 1) - 1) % 7], c.hour ?? 0, c.minute ?? 0)
    }
}

// MARK: - Requests

/// `PUT /v1/teams/{name}/oncall`'s body, read: whom the rotation names is the service's to check
/// (members of the team), the rest is checked here.
public struct RotationRequest: Sendable, Equatable {
    public var rotation: [String]
    public var shift: ShiftLength
    public var zone: TimeZone
    /// The first handoff.
    public var start: Date

    public init(rotation: [String], shift: ShiftLength, zone: TimeZone, start: Date) {
        self.rotation = rotation
        self.shift = shift
        self.zone = zone
        self.start = start
    }

    /// `{"rotation": [users], "shift": "1w", "start": "YYYY-MM-DD HH:MM", "zone": "Europe/Berlin"}`.
    public init(body: Data) throws(ValidationError) {
        let fields = try JSONFields(body: body)
        guard let items = try fields.array("rotation", required: true), !items.isEmpty else {
            throw ValidationError("rotation is empty: give the members in turn, such as alice,bob,carol")
        }
        guard items.count <= OnCallSchedule.maxRotation else { throw ValidationError("a rotation has at most \(OnCallSchedule.maxRotation) turns") }
        rotation = try items.map { item throws(ValidationError) -> String in
            guard case .string(let user) = item else { throw ValidationError("rotation must be a list of user names") }
            return user
        }
        shift = try ShiftLength(parsing: try fields.string("shift", max: 16) ?? "")
        zone = try LocalTime.zone(try fields.string("zone", max: 64) ?? "UTC")
        guard let startText = try fields.string("start", max: 40) else {
            throw ValidationError("start is required: the first handoff, such as \"2026-12-07 09:00\"")
        }
        start = try LocalTime.parse(startText, zone: zone, field: "start")
    }
}

/// `POST /v1/teams/{name}/oncall/overrides`'s body, read: its times are read in the rotation's
/// zone, which is the service's to know.
public struct OverrideRequest: Sendable, Equatable {
    /// Who is on call instead (nil: the caller).
    public var user: String?
    public var from: String
    public var until: String

    public init(user: String?, from: String, until: String) {
        self.user = user
        self.from = from
        self.until = until
    }

    /// `{"user", "from", "until"}`.
    public init(body: Data) throws(ValidationError) {
        let fields = try JSONFields(body: body)
        user = try fields.string("user", max: 64)
        guard let from = try fields.string("from", max: 40), let until = try fields.string("until", max: 40) else {
            throw ValidationError("from and until are required, such as \"2026-12-24 18:00\" (in the rotation's zone)")
        }
        self.from = from
        self.until = until
    }
}
