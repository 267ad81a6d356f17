import Foundation

/// What notty shows that ICU's data decides, as lines, so that two builds can be compared: the
/// release builds link ICU's data trimmed to what notty opens (`scripts/icu-trim`), the debug
/// builds the toolchain's whole package. `notty icu-check` and `notty-server icu-check` (hidden)
/// print ``lines(zones:)``; IcuDataTests runs both builds over every zone of
/// `/usr/share/zoneinfo` and compares. Nothing here reads the clock or the environment's locale
/// beyond what the program itself does.
public enum IcuCheck {
    /// Instants across 2026 and 2031 (the 1st and 15th of each month at 01:30 and 13:30 UTC),
    /// and five days around each of the year's common DST changes, every three hours.
    static let instants: [Date] = {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        var dates: [Date] = []
        for year in [2026, 2031] {
            for month in 1...12 {
                for day in [1, 15] {
                    for hour in [1, 13] {
                        dates += [calendar.date(from: DateComponents(year: year, month: month, day: day, hour: hour, minute: 30))!]
                    }
                }
            }
        }
        for (month, day) in [(3, 27), (10, 23), (4, 3), (9, 25)] {
            let start = calendar.date(from: DateComponents(year: 2026, month: month, day: day))!
            dates += (0..<(8 * 5)).map { start + TimeInterval($0 * 3 * 3600) }
        }
        return dates
    }()

    /// Every zone's lines (an unknown name: one line saying so), then the lines no zone changes.
    public static func lines(zones: [String]) -> [String] {
        zones.flatMap(lines(zone:)) + common()
    }

    /// Offsets and transitions, quiet hours' ends, a rotation's handoffs and its calendar feed,
    /// times as the center and the commands write them, all in zone `name`.
    public static func lines(zone name: String) -> [String] {
        guard let zone = TimeZone(identifier: name) else { return ["\(name): unknown"] }
        var lines = ["\(name): identifier \(zone.identifier), offset at 2026-01-01 \(zone.secondsFromGMT(for: instants[0]))"]
        var transition = instants[0]
        for _ in 0..<6 {
            guard let next = zone.nextDaylightSavingTimeTransition(after: transition) else { break }
            lines.append(
                "\(name): transition \(ISOTime.format(next)) to \(zone.secondsFromGMT(for: next)) s, DST \(zone.isDaylightSavingTime(for: next))")
            transition = next
        }
        let night = QuietSchedule(
            from: DateComponents(hour: 22, minute: 0), to: DateComponents(hour: 7, minute: 0), days: [2, 3, 4, 5, 6], zone: zone)
        let lunch = QuietSchedule(from: DateComponents(hour: 2, minute: 30), to: DateComponents(hour: 3, minute: 15), zone: zone)
        for date in instants {
            let shown = [
                "\(zone.secondsFromGMT(for: date))", TimeText.dateTime(date, in: zone), TimeText.clock(date, in: zone, now: date + 3600),
                LocalTime.format(date, zone: zone), LocalTime.short(date, now: date + 86_400, zone: zone),
                night.end(containing: date).map(ISOTime.format) ?? "-", lunch.end(containing: date).map(ISOTime.format) ?? "-",
            ]
            lines.append("\(name): \(ISOTime.format(date)) " + shown.joined(separator: " | "))
        }
        let start = (try? LocalTime.parse("2026-03-01 09:00", zone: zone, field: "start")).map(ISOTime.format) ?? "refused"
        lines.append("\(name): 2026-03-01 09:00 is \(start); 2026-03-29 02:30 is \(parsed("2026-03-29 02:30", zone))")
        lines.append("\(name): 2026-10-25 02:30 is \(parsed("2026-10-25 02:30", zone)); 2026-11-01 01:30 is \(parsed("2026-11-01 01:30", zone))")
        for (length, unit) in [(1, ShiftLength.Unit.days), (1, .weeks), (12, .hours)] {
            let first = (try? LocalTime.parse("2026-01-05 09:00", zone: zone, field: "start")) ?? instants[0]
            let rotation = OnCallSchedule(
                rotation: ["ann", "bo", "cy"], shift: ShiftLength(count: length, unit: unit), start: first, zone: name)
            let handoffs = (0..<(unit == .weeks ? 60 : 150)).map { ISOTime.format(rotation.handoff($0)) }
            lines.append("\(name): \(length)\(unit.rawValue) handoffs \(handoffs.joined(separator: " "))")
            let shifts = rotation.shifts(from: first, until: first + 86_400 * 60)
            lines.append("\(name): \(length)\(unit.rawValue) on call at instants " + instants.map { rotation.onCall(at: $0) ?? "-" }.joined())
            lines += ICalendar.onCallFeed(team: "ops", teamId: "t", user: "bo", shifts: shifts, now: instants[0])
                .split(separator: "\r\n").map { "\(name): feed \($0)" }
        }
        return lines
    }

    static func parsed(_ text: String, _ zone: TimeZone) -> String {
        (try? LocalTime.parse(text, zone: zone, field: "at")).map(ISOTime.format) ?? "refused"
    }

    /// What no zone changes: times written and read, relative times, folded search text, the
    /// saved views' order, international host names.
    public static func common() -> [String] {
        var lines: [String] = []
        for date in instants.prefix(8) {
            let text = ISOTime.format(date)
            lines.append("time \(text) \(ISOTime.parse(text).map(ISOTime.format) ?? "-") \(TimeText.relative(date, now: date + 90_061))")
        }
        for text in ["2026-03-29T02:30:00+02:00", "2026-03-29T02:30:00Z", "2026-10-25T01:59:59.999-04:00", "20260329T023000Z", "yesterday"] {
            lines.append("parse \(text) \(ISOTime.parse(text).map(ISOTime.format) ?? "-")")
        }
        for text in ["Köln", "ÜBERLAST", "ｆｕｌｌ", "ﬁ straße", "Ελληνικά ΆΈΉ", "İstanbul ıi", "naïve café", "Ǆemal", "日本語のテキスト", "🚀 Déjà vu"] {
            lines.append("fold \(text) → \(SearchQuery.fold(text))")
        }
        let names = ["beta 10", "Beta 9", "alpha", "Älpler", "zeta", "ALPHA 2", "éclair", "eclair", "_under", "10 items", "9 items"]
        let views = names.map {
            PreferenceEntry(key: SavedView.keyPrefix + $0, value: .object(["query": .string("x")]), changedAt: Date(timeIntervalSince1970: 0))
        }
        lines.append("views " + SavedView.all(in: views).map(\.name).joined(separator: ", "))
        for url in [
            "https://bücher.example/x", "https://xn--bcher-kva.example", "postgres://notty:pw@db.example:5432/notty", "http://127.0.0.1:8787",
        ] {
            let components = URLComponents(string: url)
            lines.append("url \(url) host \(components?.host ?? "-") port \(components?.port.map(String.init) ?? "-")")
        }
        return lines
    }
}
