import Foundation
import NottyCore
import Testing

/// Who is on call at any instant (PROTOCOL.md §13.2): a pure function of the rotation and the
/// overrides, checked on fixed instants (a manual clock) across daylight-saving changes.
@Suite("On call: rotations, overrides, handoffs across daylight saving, the calendar feed")
struct OnCallTests {
    static func utc(_ text: String) -> Date { ISOTime.parse(text)! }

    static func schedule(_ rotation: [String], _ shift: String, _ start: String, _ zone: String, overrides: [OnCallOverride] = []) throws
        -> OnCallSchedule
    {
        let tz = try LocalTime.zone(zone)
        return OnCallSchedule(
            rotation: rotation, shift: try ShiftLength(parsing: shift), start: try LocalTime.parse(start, zone: tz, field: "start"), zone: zone,
            overrides: overrides)
    }

    @Test("a day shift in Europe/Berlin hands off at 09:00 local on both sides of the autumn and spring changes (25 h and 23 h shifts)")
    func berlinDays() throws {
        let s = try Self.schedule(["alice", "bob", "carol"], "1d", "2026-10-23 09:00", "Europe/Berlin")
        #expect(s.start == Self.utc("2026-10-23T07:00:00Z"), "09:00 CEST")
        #expect(s.handoff(1) == Self.utc("2026-10-24T07:00:00Z"))
        #expect(s.handoff(2) == Self.utc("2026-10-25T08:00:00Z"), "09:00 CET: the shift across the change lasts 25 h")
        #expect(s.handoff(3) == Self.utc("2026-10-26T08:00:00Z"))
        #expect(s.onCall(at: Self.utc("2026-10-25T07:30:00Z")) == "bob", "08:30 CET on the 25th: still the 24th's shift")
        #expect(s.onCall(at: Self.utc("2026-10-25T08:00:00Z")) == "carol")
        #expect(s.onCall(at: Self.utc("2026-10-23T06:59:59Z")) == nil, "before the start: nobody")
        // Spring: 2027-03-28 02:00 → 03:00.
        let spring = try Self.schedule(["alice", "bob"], "1d", "2027-03-27 09:00", "Europe/Berlin")
        #expect(spring.handoff(0) == Self.utc("2027-03-27T08:00:00Z"))
        #expect(spring.handoff(1) == Self.utc("2027-03-28T07:00:00Z"), "09:00 CEST: a 23 h shift")
        #expect(spring.rotationShift(at: Self.utc("2027-03-27T12:00:00Z")).map { $0.until.timeIntervalSince($0.from) } == TimeInterval(23 * 3600))
    }

    @Test("a week shift in America/New_York hands off Mondays at 09:00 local across November's change; an hour shift is real hours")
    func newYorkWeeks() throws {
        let s = try Self.schedule(["alice", "bob"], "1w", "2026-10-26 09:00", "America/New_York")
        #expect(s.handoff(0) == Self.utc("2026-10-26T13:00:00Z"), "09:00 EDT")
        #expect(s.handoff(1) == Self.utc("2026-11-02T14:00:00Z"), "09:00 EST: 169 h")
        #expect(s.handoff(2) == Self.utc("2026-11-09T14:00:00Z"))
        #expect(s.onCall(at: Self.utc("2026-11-02T13:30:00Z")) == "alice")
        #expect(s.onCall(at: Self.utc("2026-11-02T14:00:00Z")) == "bob")
        #expect(s.onCall(at: Self.utc("2027-01-04T14:00:00Z")) == "alice", "10 weeks on: turns keep alternating")
        #expect(s.onCall(at: Self.utc("2027-01-11T14:00:00Z")) == "bob")
        // 12 h shifts count real hours: across the change they hand off an hour earlier by the wall clock.
        let hours = try Self.schedule(["alice", "bob"], "12h", "2026-10-31 21:00", "America/New_York")
        #expect(hours.handoff(1) == Self.utc("2026-11-01T13:00:00Z"))
        #expect(LocalTime.format(hours.handoff(1), zone: try LocalTime.zone("America/New_York")) == "2026-11-01 08:00")
    }

    @Test("a zone with a 30-minute offset (Asia/Kolkata, +05:30) and one with a 45-minute offset (Asia/Kathmandu)")
    func oddOffsets() throws {
        let s = try Self.schedule(["alice", "bob"], "12h", "2026-12-01 09:00", "Asia/Kolkata")
        #expect(s.start == Self.utc("2026-12-01T03:30:00Z"))
        #expect(s.handoff(1) == Self.utc("2026-12-01T15:30:00Z"))
        #expect(s.onCall(at: Self.utc("2026-12-01T15:29:59Z")) == "alice" && s.onCall(at: Self.utc("2026-12-01T15:30:00Z")) == "bob")
        let days = try Self.schedule(["alice", "bob"], "1d", "2026-12-01 09:00", "Asia/Kathmandu")
        #expect(days.handoff(3) == Self.utc("2026-12-04T03:15:00Z"))
    }

    @Test("overrides: in force from --from until --until; of overlapping ones the later made wins; shifts() merges a person's stretch")
    func overrides() throws {
        let base = try Self.schedule(["alice", "bob"], "1w", "2026-12-07 09:00", "Europe/Berlin")
        let first = OnCallOverride(
            id: "o1", user: "carol", from: Self.utc("2026-12-08T00:00:00Z"), until: Self.utc("2026-12-10T00:00:00Z"),
            created: Self.utc("2026-12-01T00:00:00Z"), by: "carol")
        let later = OnCallOverride(
            id: "o2", user: "dave", from: Self.utc("2026-12-09T00:00:00Z"), until: Self.utc("2026-12-11T00:00:00Z"),
            created: Self.utc("2026-12-02T00:00:00Z"), by: "alice")
        var s = base
        s.overrides = [later, first]
        #expect(s.onCall(at: Self.utc("2026-12-07T12:00:00Z")) == "alice")
        #expect(s.onCall(at: Self.utc("2026-12-08T12:00:00Z")) == "carol")
        #expect(s.onCall(at: Self.utc("2026-12-09T12:00:00Z")) == "dave", "made later: it wins where both cover")
        #expect(s.onCall(at: Self.utc("2026-12-11T00:00:00Z")) == "alice", "until is exclusive")
        let shifts = s.shifts(from: Self.utc("2026-12-07T00:00:00Z"), until: Self.utc("2026-12-21T08:00:00Z"))
        #expect(shifts.map(\.user) == ["alice", "carol", "dave", "alice", "bob"], "\(shifts)")
        #expect(shifts.first?.from == Self.utc("2026-12-07T08:00:00Z"), "nobody before the start")
        #expect(shifts.map(\.override) == [false, true, true, false, false])
        #expect(shifts.last?.from == Self.utc("2026-12-14T08:00:00Z") && shifts.last?.until == Self.utc("2026-12-21T08:00:00Z"))
        #expect(s.onCallUntil(user: "carol", now: Self.utc("2026-12-08T12:00:00Z")) == Self.utc("2026-12-09T00:00:00Z"))
        #expect(s.onCallUntil(user: "bob", now: Self.utc("2026-12-08T12:00:00Z")) == nil)
        // A rotation of one: one stretch to the horizon.
        let solo = try Self.schedule(["alice"], "1d", "2026-12-07 09:00", "UTC")
        #expect(solo.onCallUntil(user: "alice", now: Self.utc("2026-12-08T00:00:00Z"), horizon: 7 * 86_400) == Self.utc("2026-12-15T00:00:00Z"))
        // The view: now, the next ones, and only overrides still to come.
        let view = OnCallView(team: "ops", schedule: s, now: Self.utc("2026-12-08T12:00:00Z"))
        #expect(view.now?.user == "carol" && view.now?.until == Self.utc("2026-12-09T00:00:00Z"))
        #expect(view.now?.from == Self.utc("2026-12-08T00:00:00Z"), "the stretch from when it began, not from the asking")
        // alice's rotation shift, begun a day before the asking, is shown from its handoff.
        let alices = OnCallView(team: "ops", schedule: base, now: Self.utc("2026-12-08T12:00:00Z")).now
        #expect(alices?.user == "alice" && alices?.from == Self.utc("2026-12-07T08:00:00Z"), "\(String(describing: alices))")
        #expect(view.next.prefix(3).map(\.user) == ["dave", "alice", "bob"])
        #expect(view.overrides.map(\.id) == ["o1", "o2"])
    }

    @Test("bad input: a shift of 0 or over 4 weeks, an unknown zone, a time that is not one: each a sentence")
    func badInput() {
        func message(_ body: () throws -> Void) -> String {
            do {
                try body()
                return ""
            } catch { return (error as? ValidationError)?.message ?? "\(error)" }
        }
        #expect(message { _ = try ShiftLength(parsing: "0h") }.contains("longer than 0"))
        #expect(message { _ = try ShiftLength(parsing: "5w") }.contains("at most 4 weeks"))
        #expect(message { _ = try ShiftLength(parsing: "29d") }.contains("at most 4 weeks"))
        #expect(message { _ = try ShiftLength(parsing: "673h") }.contains("at most 4 weeks"))
        #expect(message { _ = try ShiftLength(parsing: "weekly") }.contains("such as 12h, 1d or 1w"))
        #expect(message { _ = try ShiftLength(parsing: "4w") } == "" && message { _ = try ShiftLength(parsing: "672h") } == "")
        #expect(message { _ = try LocalTime.zone("Mars/Olympus") }.contains("unknown time zone \"Mars/Olympus\""))
        #expect(
            message { _ = try LocalTime.parse("2026-13-01 09:00", zone: .gmt, field: "start") }.contains("start \"2026-13-01 09:00\" is not a time"))
        #expect(message { _ = try LocalTime.parse("2026-02-30 09:00", zone: .gmt, field: "from") }.contains("is not a time"))
        #expect(message { _ = try LocalTime.parse("tomorrow", zone: .gmt, field: "until") }.contains("YYYY-MM-DD HH:MM"))
        #expect((try? LocalTime.parse("2026-12-24T18:00:00+01:00", zone: .gmt, field: "from")) == Self.utc("2026-12-24T17:00:00Z"))
    }

    @Test("the calendar feed: CRLF lines of at most 75 octets, escaped text, UTC times, one VEVENT per shift with a UID stable across fetches")
    func calendarFeed() throws {
        let s = try Self.schedule(["alice", "bob"], "1d", "2026-12-07 09:00", "Europe/Berlin")
        let shifts = s.shifts(from: Self.utc("2026-12-07T00:00:00Z"), until: Self.utc("2026-12-13T00:00:00Z"))
        let team = "ops, nights; and weekends with a long name to fold the calendar's name line"
        let feed = ICalendar.onCallFeed(team: team, teamId: "team-1", user: "alice", shifts: shifts, now: Self.utc("2026-12-07T00:00:00Z"))
        #expect(feed.hasPrefix("BEGIN:VCALENDAR\r\nVERSION:2.0\r\n") && feed.hasSuffix("END:VCALENDAR\r\n"))
        let lines = feed.components(separatedBy: "\r\n").dropLast()
        #expect(lines.allSatisfy { $0.utf8.count <= 75 }, "\(lines.filter { $0.utf8.count > 75 })")
        #expect(!feed.replacingOccurrences(of: "\r\n", with: "").contains("\n"))
        #expect(feed.components(separatedBy: "BEGIN:VEVENT").count - 1 == 3, "alice's shifts: the 7th, 9th and 11th")
        #expect(feed.contains("DTSTART:20261207T080000Z\r\nDTEND:20261208T080000Z"))
        #expect(feed.contains(#"ops\, nights\; and"#))
        let again = ICalendar.onCallFeed(team: team, teamId: "team-1", user: "alice", shifts: shifts, now: Self.utc("2026-12-08T00:00:00Z"))
        let uids = { (text: String) in text.components(separatedBy: "\r\n").filter { $0.hasPrefix("UID:") } }
        #expect(uids(feed) == uids(again) && Set(uids(feed)).count == 3)
    }
}
