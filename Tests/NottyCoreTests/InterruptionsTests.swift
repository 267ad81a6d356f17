import Foundation
import NottyCore
import NottyTestSupport
import Testing

@Suite("Interruptions: quiet and mutes from the preferences (SPEC §9)")
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
}
