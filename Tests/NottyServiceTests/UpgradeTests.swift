import Foundation
import GRDB
import NottyCore
import NottyTestSupport
import Testing
@testable import NottyService
@testable import NottyServiceSQLite

/// A store at every schema version this build knows, with a row in every table of that version
/// (the migrations are never edited once shipped, so migrating an empty store up to a version
/// gives that version's schema), migrated by this build, then read and written.
@Suite("Upgrades from every earlier store", .timeLimit(.minutes(5)))
struct UpgradeTests {
    static let notificationId = "0190a1b2-0000-7000-8000-000000000001"
    static let now = Date()

    /// The values a build of that version would have written (the rest: FixtureRows' rules).
    static var values: [String: DatabaseValueConvertible?] {
        let millis = ISOTime.millis(now)
        return [
            "users.user_name": "alice", "users.display_name": "Alice", "apps.client_id": "apps-1", "host_name": "ci.example.com",
            "tokens.kind": "access", "tokens.subject": "users-1", "subscriptions.platform": "websocket", "subscriptions.device_id": "device-1",
            "notifications.id": notificationId, "notification_id": notificationId, "app_notification_id": "kept", "priority": "High",
            "has_visual": 1, "title": "Kept from an earlier schema", "read_state": "Unread", "action_state": "NoInteraction", "read_at": 0,
            "action_at": 0, "created": millis, "modified": millis, "deleted": 0, "notifications.seq": 1, "preferences.seq": 2,
            "mutations.status": 200, "mutations.mutation_id": "m-1", "guesses.key": "user:alice", "guesses.failures": 1, "guesses.strikes": 0,
            "guesses.window_start": millis, "delayed.subscription_id": "subscriptions-1",
            "delayed.body": #"{"appNotificationId":"later","payload":{"visualContent":{"title":"Later"}}}"#,
            "preferences.key": "quiet", "preferences.value": #"{"until":null}"#, "escalation_rules.name": "phone",
            "escalation_rules.targets": #"["ntfy:https://ntfy.example.com/alerts"]"#, "escalation_rules.after_seconds": 600,
            "rule_id": "escalation_rules-1", "rule_name": "phone", "target": "ntfy:https://ntfy.example.com/alerts", "event": "escalated",
            "payload": "{}", "last_event": "escalated", "outcome": "sent", "escalation_cursors.seq": 0, "action_runs.status": "done",
            "action_runs.label": "Silence 1h", "action_runs.idx": 1, "actions": nil, "since": millis,
        ]
    }

    @Test("SQLite: every earlier version, a row in each of its tables: migrated, every row kept and readable, integrity and foreign keys sound; this build then writes each kind of row", arguments: SQLiteStorage.migrator.migrations.dropLast())
    func sqlite(version: String) async throws {
        let directory = Repository.temporaryDirectory("notty-upgrade")
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("server.sqlite").path
        try await SQLiteStorage(path: path, migratingUpTo: version).close()
        let queue = try DatabaseQueue(path: path)
        let filled = try await queue.write { db in try FixtureRows.fill(db, values: Self.values, skip: ["meta"], time: ISOTime.millis(Self.now) + 86_400_000) }
        try await queue.write { db in try db.execute(sql: "UPDATE meta SET value = 2 WHERE key = 'seq'") }
        try queue.close()

        let storage = try SQLiteStorage(path: path)
        let (integrity, foreignKeys, kept) = try await storage.read { db in
            (try String.fetchAll(db, sql: "PRAGMA integrity_check"), try Row.fetchAll(db, sql: "PRAGMA foreign_key_check").count,
             try filled.filter { try Int.fetchOne(db, sql: "SELECT count(*) FROM \($0)") == 1 })
        }
        #expect(integrity == ["ok"] && foreignKeys == 0, "\(version): \(integrity), \(foreignKeys) foreign key problems")
        #expect(kept == filled, "\(version): rows lost in \(Set(filled).subtracting(kept))")

        // Read through this build: every kind of row the version had.
        #expect(try await storage.user(id: "users-1")?.userName == "alice")
        #expect(try await storage.subscription(id: "subscriptions-1")?.userId == "users-1")
        let page = try #require(try await storage.changes(userId: "users-1", since: 0, limit: 10), "\(version): no feed")
        #expect(page.changes.map(\.payload.visualContent?.title) == ["Kept from an earlier schema"], "\(version)")
        #expect(try await storage.list(userId: "users-1", view: .unread, top: 10, skip: 0, now: Self.now).map(\.id) == [Self.notificationId])
        if filled.contains("preferences") { #expect(try await storage.preferences(userId: "users-1").map(\.key) == ["quiet"], "\(version)") }
        if filled.contains("escalation_rules") {
            #expect(try await storage.escalationRules(userId: "users-1").map(\.targets) == [["ntfy:https://ntfy.example.com/alerts"]], "\(version)")
        }
        if filled.contains("guesses") { #expect(try await storage.allGuesses().count == 1, "\(version)") }

        // Write through this build: a publish, a change of state, a preference, a rule.
        let request = try PublishRequest(body: Data(#"{"appNotificationId":"after","payload":{"visualContent":{"title":"After the upgrade"}}}"#.utf8))
        let published = try await storage.publish(PublishInput(userId: "users-1", hostName: "ci.example.com", request: request, expiration: Self.now + 3600, now: Self.now))
        #expect(published.payload.visualContent?.title == "After the upgrade")
        let results = try await storage.mutate(userId: "users-1", mutations: [Mutation(id: Self.notificationId, change: StateChange(readState: .read), mutationId: "m-2")], now: Self.now)
        #expect(results.map(\.status) == [200], "\(version): \(results)")
        _ = try await storage.setPreferences(userId: "users-1", [PreferenceEntry(key: "mute", value: .bool(true), changedAt: Self.now)])
        let rule = EscalationRule(id: "rule-2", name: "mail", afterSeconds: 60, repeatSeconds: nil, targets: ["webhook:https://hooks.example.com/x"],
                                  priority: "High", app: nil, group: nil, createdDateTime: Self.now)
        #expect(try await storage.insertEscalationRule(rule, userId: "users-1", limit: 100))
        let after = try #require(try await storage.changes(userId: "users-1", since: 0, limit: 10))
        #expect(Set(after.changes.map(\.id)).isSuperset(of: [Self.notificationId, published.id]))
        #expect(after.changes.first { $0.id == Self.notificationId }?.readState == .read)

        // And the user goes with every row of theirs.
        #expect(try await storage.deleteUser(name: "alice"))
        let left = try await storage.read { db in try Row.fetchAll(db, sql: "PRAGMA foreign_key_check").count }
        #expect(left == 0)
        try await storage.close()
    }
}
