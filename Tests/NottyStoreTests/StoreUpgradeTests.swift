import Foundation
import GRDB
import NottyCore
import NottySQLite
import NottyTestSupport
import Testing

@testable import NottyStore

/// A device store at every schema version this build knows, a row in every table of it (but the
/// derived ones: view counts and the search index, which the schema's triggers keep), migrated
/// by this build, then read and written.
@Suite("Device stores from every earlier version")
struct StoreUpgradeTests {
    static let id = "0190a1b2-0000-7000-8000-000000000001"

    @Test(
        "every earlier version, a row in each of its tables: migrated, the row counted, shown and its unsent change kept; this build then writes",
        arguments: LocalStore.migrator.migrations.dropLast())
    func device(version: String) throws {
        let directory = Repository.temporaryDirectory("notty-store-upgrade")
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("store.sqlite").path
        let now = Date()
        let millis = ISOTime.millis(now)
        // With the functions the search index's triggers call (a store of v13 on).
        var configuration = Configuration()
        configuration.prepareDatabase { db in SearchFunctions.install(db) }
        let queue = try DatabaseQueue(path: path, configuration: configuration)
        try LocalStore.migrator.migrate(queue, upTo: version)
        let values: [String: DatabaseValueConvertible?] = [
            "id": Self.id, "notification_id": Self.id, "app_notification_id": "kept", "app": "ci.example.com", "priority": "High",
            "title": "Kept from an earlier schema", "created": millis, "modified": millis, "s_read": "Unread", "s_action": "NoInteraction",
            "read_state": "Unread", "action_state": "NoInteraction", "bucket": "unread", "hidden": 0, "announced": 1,
            "outbox.mutation_id": "m-1", "outbox.op": "patch", "outbox.read_state": "Read", "outbox.action_state": nil, "changed_at": millis,
            "popups.view": "unread", "preferences.key": "quiet", "preferences.value": #"{"until":null}"#, "state_changes.seq": 1,
        ]
        let filled = try queue.write { db in
            try FixtureRows.fill(
                db, values: values, skip: ["meta", "view_blocks", "high_unread", "search", "search_progress"], time: millis + 86_400_000)
        }
        try queue.close()

        let store = try LocalStore(path: path)
        let kept = try store.database.read { db in try filled.filter { try Int.fetchOne(db, sql: "SELECT count(*) FROM \($0)") == 1 } }
        #expect(kept == filled, "\(version): rows lost in \(Set(filled).subtracting(kept))")
        #expect(try store.database.read { db in try String.fetchAll(db, sql: "PRAGMA integrity_check") } == ["ok"])
        #expect(try store.counts(now: now).all == 1, "\(version): the row is not counted")
        #expect(try store.window(view: .all, limit: 10, now: now).map(\.displayTitle) == ["Kept from an earlier schema"], "\(version)")
        #expect(try store.pending().map(\.mutationId) == ["m-1"], "\(version): the unsent change")
        if filled.contains("preferences") { #expect(try store.preferences().contains { $0.key == "quiet" }, "\(version)") }

        // This build writes: a change of state, a page of the service, a search.
        try store.record([(Self.id, .patch(StateChange(userActionState: .dismissed)))])
        #expect(try store.counts(now: now).dismissed == 1)
        let page = ChangesPage(
            changes: [.fixture(id: UserNotification.fixtureId(2), title: "After the upgrade", created: now, expires: now + 3600)], cursor: "2",
            hasMore: false)
        _ = try store.apply(page: page, since: nil, now: now)
        #expect(try store.counts(now: now).all == 2)
        #expect(try store.window(view: .all, query: "upgrade", limit: 10, now: now).map(\.displayTitle) == ["After the upgrade"])
    }
}
