import Foundation
import NottyCore
import NottyStore
import NottyTestSupport
import Testing

@Suite("Preferences in the local store (PROTOCOL.md §9)")
struct LocalPreferenceTests {
    @Test(
        "set here: pending and stamped after every clock seen; from the service: the later changedAt wins, a pending one keeps a tie; an acknowledgement clears only what was sent; another account starts empty"
    )
    func rule() throws {
        let directory = Repository.temporaryDirectory("notty-store")
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try LocalStore(path: directory.appendingPathComponent("store.sqlite").path)
        try store.bind(account: "alice@example")
        let set = try store.setPreference(key: "quiet", value: .bool(true), now: base)
        #expect(try store.pendingPreferences() == [set])
        // The service's older value loses; a tie keeps the pending one.
        try store.acknowledgePreferences(sent: [], answer: [PreferenceEntry(key: "quiet", value: .bool(false), changedAt: base - 60)])
        try store.acknowledgePreferences(sent: [], answer: [PreferenceEntry(key: "quiet", value: .bool(false), changedAt: set.changedAt)])
        #expect(try store.preferences() == [set])
        // A newer one set here meanwhile stays pending when the older one is acknowledged.
        let newer = try store.setPreference(key: "quiet", value: .string("strict"), now: base)
        #expect(newer.changedAt > set.changedAt, "the device's clock moves on")
        try store.acknowledgePreferences(sent: [set], answer: [set])
        #expect(try store.pendingPreferences() == [newer])
        try store.acknowledgePreferences(sent: [newer], answer: [newer])
        #expect(try store.pendingPreferences().isEmpty)
        // The service's later value wins; the device's clock moves past it.
        let later = PreferenceEntry(key: "quiet", value: .null, changedAt: base + 3600)
        try store.acknowledgePreferences(sent: [], answer: [later])
        #expect(try store.preferences() == [later])
        #expect(try store.setPreference(key: "mute.group.builds", value: .bool(true), now: base).changedAt > later.changedAt)
        // Another account: nothing of alice's.
        try store.bind(account: "bob@example")
        #expect(try store.preferences().isEmpty)
    }
}
