import Foundation
import NottyCore
import NottyService
import NottyServiceSQLite
import NottyStore
import NottySync
import NottyTestSupport
import Testing

@Suite("Preferences on devices (PROTOCOL.md §9)")
struct PreferenceSyncTests {
    @Test(
        "a preference set on one device reaches another through the feed; one set offline earlier loses, one set later wins; a pending one survives a pull"
    )
    func twoDevices() async throws {
        let directory = Repository.temporaryDirectory("notty-preferences")
        defer { try? FileManager.default.removeItem(at: directory) }
        let clock = ManualClock(Date(timeIntervalSince1970: 1_800_000_000))
        let (service, user, _, _) = try await inProcessService(in: directory, clock: clock)
        let network = SimulatedNetwork(seed: 1)
        network.faults = false
        func device(_ index: Int) throws -> (LocalStore, SyncEngine) {
            let store = try LocalStore(path: directory.appendingPathComponent("device\(index).sqlite").path)
            return (
                store, SyncEngine(store: store, transport: SimulatedTransport(service: service, userId: user.id, device: index, network: network))
            )
        }
        let (a, engineA) = try device(0)
        let (b, engineB) = try device(1)
        try await engineA.sync()
        try await engineB.sync()
        let now = clock.now()

        // B, offline, mutes an app at 10:00; A unmutes it at 10:05, online.
        network.offline.insert(1)
        try (await b.perform { try $0.setPreference(key: "mute.app.ci.example.com", value: .object(["until": .null]), now: now) })
        #expect(try (await b.perform { try $0.pendingPreferences() }).map(\.key) == ["mute.app.ci.example.com"])
        clock.advance(by: 300)  // the service clamps a device's clock to its own
        try (await a.perform { try $0.setPreference(key: "mute.app.ci.example.com", value: .null, now: now + 300) })
        try (await a.perform { try $0.setPreference(key: "quiet", value: .object(["until": .string("2027-01-15T07:00:00.000Z")]), now: now + 300) })
        try await engineA.sync()
        #expect(try (await a.perform { try $0.pendingPreferences() }).isEmpty)
        // B still offline: a pull fails, its pending change stays.
        await #expect(throws: SyncError.self) { try await engineB.sync() }
        #expect(try (await b.perform { try $0.pendingPreferences() }).count == 1)

        // Back online: B's older mute loses to A's later unmute; A's quiet reaches B.
        network.offline.remove(1)
        try await engineB.sync()
        try await engineA.sync()
        for store in [a, b] {
            let preferences = try (await store.perform { try $0.preferences() })
            #expect(preferences.first { $0.key == "mute.app.ci.example.com" }?.value == .null, "\(preferences)")
            #expect(preferences.first { $0.key == "quiet" }?.value == .object(["until": .string("2027-01-15T07:00:00.000Z")]))
            #expect(try (await store.perform { try $0.pendingPreferences() }).isEmpty)
        }
        #expect(try await service.inbox.preferences(userId: user.id).preferences == (try (await a.perform { try $0.preferences() })))

        // A later change on B wins everywhere.
        clock.advance(by: 300)
        try (await b.perform { try $0.setPreference(key: "quiet", value: .null, now: now + 600) })
        try await engineB.sync()
        try await engineA.sync()
        #expect(try (await a.perform { try $0.preferences() }).first { $0.key == "quiet" }?.value == .null)
        #expect(try (await a.perform { try $0.preferences() }) == (try (await b.perform { try $0.preferences() })))
    }

    @Test("a device that synced before preferences existed fetches them whole once; a first sync takes them from the feed")
    func fetchedOnce() async throws {
        let directory = Repository.temporaryDirectory("notty-preferences")
        defer { try? FileManager.default.removeItem(at: directory) }
        let (service, user, _, _) = try await inProcessService(in: directory, clock: ManualClock(Date(timeIntervalSince1970: 1_800_000_000)))
        let network = SimulatedNetwork(seed: 2)
        network.faults = false
        _ = try await service.inbox.setPreferences(userId: user.id, body: Data(#"{"preferences":[{"key":"quiet","value":true}]}"#.utf8))
        // A fresh device: the pull from the start brings it.
        let fresh = try await LocalStore.open(path: directory.appendingPathComponent("fresh.sqlite").path)
        try await SyncEngine(store: fresh, transport: SimulatedTransport(service: service, userId: user.id, device: 0, network: network)).sync()
        #expect(try (await fresh.perform { try $0.preferences() }).map(\.key) == ["quiet"])
        #expect(try (await fresh.perform { try $0.preferencesFetched() }))
        // A device whose cursor is already past the preference (as one from before them is):
        // its first pull finds nothing new, so it fetches them whole, once.
        let older = try await LocalStore.open(path: directory.appendingPathComponent("older.sqlite").path)
        let cursor = try await service.inbox.latestCursor(userId: user.id)
        _ = try (await older.perform { try $0.apply(page: ChangesPage(changes: [], cursor: String(cursor), hasMore: false), since: nil) })
        #expect(try !(await older.perform { try $0.preferencesFetched() }))
        try await SyncEngine(store: older, transport: SimulatedTransport(service: service, userId: user.id, device: 1, network: network)).sync()
        #expect(try (await older.perform { try $0.preferences() }).map(\.key) == ["quiet"])
        #expect(try (await older.perform { try $0.preferencesFetched() }))
    }
}
