import Foundation
import NottyCore
import NottyTestSupport
import Testing

@Suite("Interruptions: quiet and mutes from the preferences (PROTOCOL.md §9)")
struct InterruptionsTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)
    static func entry(_ key: String, _ value: JSONValue) -> PreferenceEntry { PreferenceEntry(key: key, value: value, changedAt: now) }

    @Test("quiet holds back all but High, strict holds back High too; a quiet period that has ended is over")
    func quiet() {
        let normal = UserNotification.fixture(id: "1", priority: .none)
        let high = UserNotification.fixture(id: "2", priority: .high)
        let quiet = Interruptions(preferences: [Self.entry("quiet", Interruptions.quietValue(until: Self.now + 60, strict: false))], now: Self.now)
        #expect(quiet.isQuiet)
        #expect(!quiet.interrupts(normal))
        #expect(quiet.interrupts(high))
        let strict = Interruptions(preferences: [Self.entry("quiet", Interruptions.quietValue(until: Self.now + 60, strict: true))], now: Self.now)
        #expect(!strict.interrupts(high))
        let over = Interruptions(preferences: [Self.entry("quiet", Interruptions.quietValue(until: Self.now, strict: true))], now: Self.now)
        #expect(!over.isQuiet)
        #expect(over.interrupts(normal))
        #expect(Interruptions(preferences: [Self.entry("quiet", .null)], now: Self.now).interrupts(normal))
    }

    @Test("a mute of an app (any case) or a group holds back everything of it, High included, until it ends or is lifted; other values are ignored")
    func mutes() {
        let preferences = [
            Self.entry(Interruptions.key(.app("CI.example.com")), Interruptions.muteValue(until: nil)),
            Self.entry(Interruptions.key(.group("noisy")), Interruptions.muteValue(until: Self.now + 60)),
            Self.entry(Interruptions.key(.group("old")), Interruptions.muteValue(until: Self.now - 1)),
            Self.entry(Interruptions.key(.group("lifted")), .null),
            Self.entry("mute.app.", .object([:])),
            Self.entry("something.else", .bool(true)),
        ]
        let interruptions = Interruptions(preferences: preferences, now: Self.now)
        #expect(interruptions.mutes.map(\.target) == [.app("ci.example.com"), .group("noisy")])
        #expect(!interruptions.interrupts(.fixture(id: "1", app: "ci.example.com", priority: .high)))
        #expect(!interruptions.interrupts(.fixture(id: "2", app: "mon.example.com", group: "noisy")))
        #expect(interruptions.interrupts(.fixture(id: "3", app: "mon.example.com", group: "old")))
        #expect(interruptions.interrupts(.fixture(id: "4", app: "mon.example.com", group: "lifted")))
        #expect(!interruptions.isQuiet)
    }

    @Test("a maintenance window mutes only from its start to its end; before it, it is listed to come (soonest first) and holds nothing back")
    func windows() {
        let db = UserNotification.fixture(id: "1", app: "db.example.com", priority: .high)
        let preferences = [
            Self.entry(Interruptions.key(.app("db.example.com")), Interruptions.muteValue(until: Self.now + 7200, from: Self.now + 3600)),
            Self.entry(Interruptions.key(.group("backups")), Interruptions.muteValue(until: Self.now + 600, from: Self.now + 60)),
        ]
        let before = Interruptions(preferences: preferences, now: Self.now)
        #expect(before.mutes.isEmpty && before.interrupts(db))
        #expect(before.scheduled.map(\.target) == [.group("backups"), .app("db.example.com")])
        #expect(before.scheduled.last?.from == Self.now + 3600 && before.scheduled.last?.until == Self.now + 7200)
        let inside = Interruptions(preferences: preferences, now: Self.now + 3600)
        #expect(inside.mutes.map(\.target) == [.app("db.example.com")] && !inside.interrupts(db) && inside.scheduled.isEmpty)
        #expect(Interruptions(preferences: preferences, now: Self.now + 7200).interrupts(db), "over at its end")
    }

    @Test("a team's window (team.T.mute.…) holds back that team's notifications only, not the member's own nor another team's")
    func teamWindows() {
        var ops = UserNotification.fixture(id: "1", app: "db.example.com", priority: .high)
        ops.team = "ops"
        var web = ops
        web.team = "web"
        let own = UserNotification.fixture(id: "2", app: "db.example.com", priority: .high)
        let key = Interruptions.key(.app("db.example.com"), team: "ops")
        #expect(key == "team.ops.mute.app.db.example.com")
        let preferences = [Self.entry(key, Interruptions.muteValue(until: Self.now + 7200, from: Self.now + 3600))]
        let before = Interruptions(preferences: preferences, now: Self.now)
        #expect(before.interrupts(ops) && before.scheduled.first?.team == "ops")
        let inside = Interruptions(preferences: preferences, now: Self.now + 3600)
        #expect(!inside.interrupts(ops) && inside.isMuted(ops))
        #expect(inside.interrupts(own) && inside.interrupts(web))
        #expect(inside.mutes.map(\.team) == ["ops"])
        // Not a mute: ignored.
        for odd in ["team.ops.quiet", "team..mute.app.x", "team.ops.mute.other.x"] {
            #expect(Interruptions(preferences: [Self.entry(odd, Interruptions.muteValue(until: nil))], now: Self.now).mutes.isEmpty, "\(odd)")
        }
    }
}

@Suite("Quiet schedules (PROTOCOL.md §9)")
struct QuietScheduleTests {
    static let berlin = TimeZone(identifier: "Europe/Berlin")!
    static func at(_ iso: String) -> Date { ISOTime.parse(iso)! }

    @Test("a window that wraps midnight belongs to the day it starts on; days and the zone are honoured")
    func wrapsAndDays() throws {
        let window = try #require(QuietSchedule.window("22:00-07:00"))
        let schedule = QuietSchedule(from: window.from, to: window.to, days: try #require(QuietSchedule.days("mon-fri")), zone: Self.berlin)
        // 2027-01-15 is a Friday; Berlin is UTC+1 in winter.
        #expect(schedule.end(containing: Self.at("2027-01-15T22:30:00Z")) == Self.at("2027-01-16T06:00:00Z"), "Friday 23:30 local")
        #expect(schedule.end(containing: Self.at("2027-01-16T05:00:00Z")) == Self.at("2027-01-16T06:00:00Z"), "Saturday 06:00, Friday's window")
        #expect(schedule.end(containing: Self.at("2027-01-16T22:30:00Z")) == nil, "Saturday night: not a day of the schedule")
        #expect(schedule.end(containing: Self.at("2027-01-18T05:00:00Z")) == nil, "Monday 06:00 belongs to Sunday's window")
        #expect(schedule.end(containing: Self.at("2027-01-18T12:00:00Z")) == nil, "midday")
        #expect(schedule.end(containing: Self.at("2027-01-18T21:00:00Z")) == Self.at("2027-01-19T06:00:00Z"), "Monday 22:00 sharp")
        #expect(schedule.end(containing: Self.at("2027-01-19T06:00:00Z")) == nil, "07:00 sharp has ended")
        let day = QuietSchedule(
            from: try #require(QuietSchedule.timeOfDay("12:00")), to: try #require(QuietSchedule.timeOfDay("13:30")), zone: Self.berlin)
        #expect(day.end(containing: Self.at("2027-01-17T11:15:00Z")) == Self.at("2027-01-17T12:30:00Z"), "every day, not wrapping")
    }

    @Test("across daylight-saving changes the window keeps its local times")
    func daylightSaving() throws {
        let window = try #require(QuietSchedule.window("22:00-07:00"))
        let schedule = QuietSchedule(from: window.from, to: window.to, zone: Self.berlin)
        // 2027-03-28: Berlin moves from UTC+1 to UTC+2 at 02:00. Saturday 22:00 is 21:00Z, Sunday 07:00 is 05:00Z.
        #expect(schedule.end(containing: Self.at("2027-03-27T21:30:00Z")) == Self.at("2027-03-28T05:00:00Z"))
        #expect(schedule.end(containing: Self.at("2027-03-28T04:30:00Z")) == Self.at("2027-03-28T05:00:00Z"), "06:30 local, summer time")
        #expect(schedule.end(containing: Self.at("2027-03-28T05:30:00Z")) == nil, "07:30 local")
        // 2027-10-31: back to UTC+1 at 03:00. Saturday 22:00 is 20:00Z, Sunday 07:00 is 06:00Z.
        #expect(schedule.end(containing: Self.at("2027-10-30T20:00:00Z")) == Self.at("2027-10-31T06:00:00Z"))
        #expect(schedule.end(containing: Self.at("2027-10-31T05:30:00Z")) == Self.at("2027-10-31T06:00:00Z"), "06:30 local, winter time")
    }

    @Test("parsing: times, windows, day lists; a schedule round-trips through its preference value and quiets the interruptions in its window")
    func parsing() throws {
        #expect(QuietSchedule.timeOfDay("24:00") == nil)
        #expect(QuietSchedule.timeOfDay("7:00") == nil)
        #expect(QuietSchedule.window("07:00-07:00") == nil)
        #expect(QuietSchedule.days("mon-fri") == [2, 3, 4, 5, 6])
        #expect(QuietSchedule.days("fri-mon") == [6, 7, 1, 2])
        #expect(QuietSchedule.days("sat,sun") == [7, 1])
        #expect(QuietSchedule.days("funday") == nil)
        let window = try #require(QuietSchedule.window("22:00-07:00"))
        let schedule = QuietSchedule(from: window.from, to: window.to, days: [2, 3], zone: Self.berlin, strict: true)
        #expect(QuietSchedule(schedule.value) == schedule)
        #expect(schedule.description == "22:00-07:00 mon,tue Europe/Berlin, High included")
        let monday = Self.at("2027-01-18T22:00:00Z")
        let interruptions = Interruptions(
            preferences: [PreferenceEntry(key: Interruptions.scheduleKey, value: schedule.value, changedAt: monday)], now: monday)
        #expect(interruptions.quietUntil == Self.at("2027-01-19T06:00:00Z"))
        #expect(interruptions.strict)
        #expect(!interruptions.interrupts(.fixture(id: "1", priority: .high)))
        #expect(
            Interruptions(
                preferences: [PreferenceEntry(key: Interruptions.scheduleKey, value: schedule.value, changedAt: monday)],
                now: Self.at("2027-01-19T12:00:00Z")
            ).isQuiet == false)
    }

    @Test("quiet off inside a scheduled window ends that window only; outside one it is null; a later quiet --for still quiets")
    func offInsideAWindow() throws {
        let window = try #require(QuietSchedule.window("22:00-07:00"))
        let schedule = QuietSchedule(from: window.from, to: window.to, days: [], zone: Self.berlin, strict: false)
        let night = Self.at("2027-01-18T22:30:00Z")  // 23:30 in Berlin
        let scheduled = PreferenceEntry(key: Interruptions.scheduleKey, value: schedule.value, changedAt: night)
        let before = Interruptions(preferences: [scheduled], now: night)
        #expect(before.isQuiet)
        let off = before.offValue(now: night)
        #expect(off == .object(["skip": .string(ISOTime.format(Self.at("2027-01-19T06:00:00Z")))]))
        let skipped = PreferenceEntry(key: Interruptions.quietKey, value: off, changedAt: night)
        #expect(!Interruptions(preferences: [skipped, scheduled], now: night).isQuiet, "the window goes on after quiet off")
        #expect(!Interruptions(preferences: [scheduled, skipped], now: Self.at("2027-01-19T05:59:00Z")).isQuiet)
        let nextNight = Interruptions(preferences: [scheduled, skipped], now: Self.at("2027-01-19T21:30:00Z"))
        #expect(nextNight.quietUntil == Self.at("2027-01-20T06:00:00Z"), "the next window is quiet again")
        #expect(Interruptions(preferences: [scheduled], now: Self.at("2027-01-19T12:00:00Z")).offValue(now: Self.at("2027-01-19T12:00:00Z")) == .null)
        let hour = PreferenceEntry(
            key: Interruptions.quietKey, value: Interruptions.quietValue(until: Self.at("2027-01-18T23:30:00Z"), strict: false), changedAt: night)
        #expect(Interruptions(preferences: [scheduled, hour], now: night).quietUntil == Self.at("2027-01-19T06:00:00Z"))
        // Quiet for an hour after quiet off in the window: the hour, then not the window again.
        let skippedThen = Interruptions(preferences: [scheduled, skipped], now: night)
        #expect(skippedThen.skip == Self.at("2027-01-19T06:00:00Z"))
        let hourAfterOff = PreferenceEntry(
            key: Interruptions.quietKey,
            value: Interruptions.quietValue(until: Self.at("2027-01-18T23:30:00Z"), strict: false, skip: skippedThen.skip), changedAt: night)
        #expect(Interruptions(preferences: [scheduled, hourAfterOff], now: night).quietUntil == Self.at("2027-01-18T23:30:00Z"))
        #expect(!Interruptions(preferences: [scheduled, hourAfterOff], now: Self.at("2027-01-18T23:45:00Z")).isQuiet)
        #expect(Interruptions(preferences: [scheduled, skipped], now: Self.at("2027-01-19T12:00:00Z")).skip == nil, "a skip that has passed is over")
    }
}
