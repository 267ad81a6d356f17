import Foundation
import GRDB
import NottyCore
import NottyTestSupport
import PostgresNIO
import Testing

@testable import NottySecrets
@testable import NottyService
@testable import NottyServicePostgres
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
            "action_runs.label": "Silence 1h", "action_runs.idx": 1, "since": millis,
            // Secrets an earlier build kept in the clear: sealed on the first start with a key.
            "actions":
                #"[{"action":"http","clear":true,"headers":{"Authorization":"Bearer tk_upgrade"},"label":"Silence","url":"http://am.example/api"}]"#,
            "subscriptions.webhook_secret": "whsec_upgrade", "subscriptions.alertmanager_url": "http://am.example:9093",
        ]
    }

    @Test(
        "SQLite: every earlier version, a row in each of its tables: migrated, every row kept and readable, integrity and foreign keys sound; this build then writes each kind of row",
        arguments: SQLiteStorage.migrator.migrations.dropLast())
    func sqlite(version: String) async throws {
        let directory = Repository.temporaryDirectory("notty-upgrade")
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("server.sqlite").path
        try await SQLiteStorage(path: path, migratingUpTo: version).close()
        // With the functions the search index's triggers call (a store of v19 on).
        var configuration = Configuration()
        configuration.prepareDatabase { db in try SQLiteSearch.install(db) }
        let queue = try DatabaseQueue(path: path, configuration: configuration)
        let filled = try await queue.write { db in
            try FixtureRows.fill(db, values: Self.values, skip: ["meta"], time: ISOTime.millis(Self.now) + 86_400_000)
        }
        try await queue.write { db in try db.execute(sql: "UPDATE meta SET value = 2 WHERE key = 'seq'") }
        try queue.close()

        let storage = try SQLiteStorage(path: path)
        let (integrity, foreignKeys, kept) = try await storage.read { db in
            (
                try String.fetchAll(db, sql: "PRAGMA integrity_check"), try Row.fetchAll(db, sql: "PRAGMA foreign_key_check").count,
                try filled.filter { try Int.fetchOne(db, sql: "SELECT count(*) FROM \($0)") == 1 }
            )
        }
        #expect(integrity == ["ok"] && foreignKeys == 0, "\(version): \(integrity), \(foreignKeys) foreign key problems")
        #expect(kept == filled, "\(version): rows lost in \(Set(filled).subtracting(kept))")

        try await Self.exercise(storage, version: version, filled: filled)

        // And the user goes with every row of theirs.
        #expect(try await storage.deleteUser(name: "alice"))
        let left = try await storage.read { db in try Row.fetchAll(db, sql: "PRAGMA foreign_key_check").count }
        #expect(left == 0)
        try await storage.close()
    }

    @Test(
        "PostgreSQL: every earlier version, a row in each of its tables: migrated by this build, every row kept and readable; this build then writes each kind of row",
        .enabled(if: TestPostgres.testsRun), arguments: PostgresStorage.migrations.dropLast().map(\.name))
    func postgres(version: String) async throws {
        let url = try await TestPostgres.createDatabase()
        var sql = "CREATE TABLE notty_migrations (name TEXT PRIMARY KEY, applied TIMESTAMPTZ NOT NULL DEFAULT now());\n"
        for migration in PostgresStorage.migrations.prefix(through: PostgresStorage.migrations.firstIndex { $0.name == version }!) {
            sql += migration.statements.joined(separator: ";\n") + ";\nINSERT INTO notty_migrations (name) VALUES ('\(migration.name)');\n"
        }
        try await TestPostgres.psql(url, sql)
        let filled = try await Self.fillPostgres(url)
        let storage = try await PostgresStorage.connect(url: PostgresURL(url), logger: .quiet, timeout: .seconds(30))
        defer { Task { try? await storage.close() } }
        for table in filled {
            let count = try await storage.run { connection in
                try await connection.query(PostgresQuery(unsafeSQL: "SELECT count(*)::bigint FROM \(table)"), logger: .quiet).collect(Int64.self)
            }
            #expect(count == [1], "\(version): \(table) has \(count) rows")
        }
        try await Self.exercise(storage, version: version, filled: filled)
        #expect(try await storage.deleteUser(name: "alice"))
    }

    /// A row in every table of the PostgreSQL database at `url` (but `notty_migrations`), as
    /// ``FixtureRows`` does for SQLite, read from its catalog with psql.
    static func fillPostgres(_ url: String) async throws -> [String] {
        func query(_ sql: String) async throws -> [[String]] {
            let (status, output) = try await Repository.run([TestPostgres.psqlPath ?? "psql", "-X", "-qAt", "-F", "\t", url, "-c", sql])
            guard status == 0 else { throw SupportError("psql: \(output)") }
            return output.split(separator: "\n").map { $0.split(separator: "\t", omittingEmptySubsequences: false).map(String.init) }
        }
        let columns = try await query(
            """
            SELECT table_name, column_name, data_type, is_nullable, coalesce(column_default, '') FROM information_schema.columns
            WHERE table_schema = 'public' AND table_name <> 'notty_migrations' ORDER BY table_name, ordinal_position
            """)
        let references = try await query(
            """
            SELECT tc.table_name, kcu.column_name, ccu.table_name FROM information_schema.table_constraints tc
            JOIN information_schema.key_column_usage kcu ON kcu.constraint_name = tc.constraint_name
            JOIN information_schema.constraint_column_usage ccu ON ccu.constraint_name = tc.constraint_name
            WHERE tc.constraint_type = 'FOREIGN KEY' AND tc.table_schema = 'public'
            """)
        let keys = Set(
            try await query(
                """
                SELECT tc.table_name || '.' || kcu.column_name FROM information_schema.table_constraints tc
                JOIN information_schema.key_column_usage kcu ON kcu.constraint_name = tc.constraint_name
                WHERE tc.constraint_type = 'PRIMARY KEY' AND tc.table_schema = 'public'
                """
            ).map { $0[0] })
        let time = ISOTime.millis(now) + 86_400_000
        func literal(_ value: DatabaseValueConvertible?) -> String {
            guard let value else { return "NULL" }
            switch value.databaseValue.storage {
            case .null: return "NULL"
            case .int64(let number): return String(number)
            case .double(let number): return String(number)
            case .string(let text): return "'" + text.replacingOccurrences(of: "'", with: "''") + "'"
            case .blob: return "NULL"
            }
        }
        var tables: [String] = []
        for row in columns where !tables.contains(row[0]) { tables.append(row[0]) }
        var filled: [String] = [], sql = ""
        var left = tables
        while !left.isEmpty {
            guard
                let next = left.first(where: { table in references.filter { $0[0] == table }.allSatisfy { $0[2] == table || filled.contains($0[2]) } }
                )
            else {
                throw SupportError("the tables' references go round: \(left)")
            }
            left.removeAll { $0 == next }
            var names: [String] = [], items: [String] = []
            for column in columns where column[0] == next {
                let (name, type, nullable, hasDefault) = (column[1], column[2], column[3] == "YES", !column[4].isEmpty)
                let item: String?
                if let given = values["\(next).\(name)"] ?? values[name] {
                    item = type == "boolean" ? (literal(given) == "1" ? "true" : "false") : literal(given)
                } else if let reference = references.first(where: { $0[0] == next && $0[1] == name }) {
                    item = "'\(reference[2])-1'"
                } else if keys.contains("\(next).\(name)") {
                    item = type.contains("int") ? "1" : "'\(next)-1'"
                } else if !nullable && !hasDefault {
                    item = type == "boolean" ? "true" : type == "integer" ? "60" : type.contains("int") ? String(time) : "'\(next).\(name)'"
                } else {
                    item = nil
                }
                if let item {
                    names.append(name)
                    items.append(item)
                }
            }
            sql += "INSERT INTO \(next) (\(names.joined(separator: ", "))) VALUES (\(items.joined(separator: ", ")));\n"
            filled.append(next)
        }
        sql += "SELECT setval('notty_seq', 10);\n"
        try await TestPostgres.psql(url, sql)
        return filled
    }

    /// Reads every kind of row the version had through this build, then writes each kind.
    static func exercise(_ storage: any ServiceStorage, version: String, filled: [String]) async throws {
        // Read through this build: every kind of row the version had.
        #expect(try await storage.user(id: "users-1")?.userName == "alice")
        #expect(try await storage.subscription(id: "subscriptions-1")?.userId == "users-1")
        let page = try #require(try await storage.changes(userId: "users-1", since: 0, limit: 10), "\(version): no feed")
        #expect(page.changes.map(\.payload.visualContent?.title) == ["Kept from an earlier schema"], "\(version)")
        #expect(try await storage.list(userId: "users-1", view: .unread, top: 10, skip: 0, now: now).map(\.id) == [notificationId])
        if filled.contains("preferences") { #expect(try await storage.preferences(userId: "users-1").map(\.key) == ["quiet"], "\(version)") }
        if filled.contains("escalation_rules") {
            #expect(try await storage.escalationRules(userId: "users-1").map(\.targets) == [["ntfy:https://ntfy.example.com/alerts"]], "\(version)")
        }
        if filled.contains("guesses") { #expect(try await storage.allGuesses().count == 1, "\(version)") }

        // The first start with a key seals what was clear, in every column that holds secrets.
        let box = SecretBox.ephemeral()
        #expect(try await SecretKeeping.verify(box, storage: storage) == .first)
        try await SecretKeeping.sweep(box, storage: storage)  // versions before webhooks have nothing to seal
        #expect(try await SecretKeeping.sweep(box, storage: storage) == 0, "\(version): a second sweep found more")
        if let subscription = try await storage.subscription(id: "subscriptions-1"), let secret = subscription.webhookSecret {
            let opened = try box.open(secret)
            #expect(SecretBox.isSealed(secret.stored) && opened == "whsec_upgrade", "\(version)")
            #expect(subscription.alertmanagerURL.map { (try? box.open($0)) ?? $0.stored } ?? "http://am.example:9093" == "http://am.example:9093")
        }
        if filled.contains("escalation_rules") {
            let targets = try #require(try await storage.escalationRules(userId: "users-1").first?.targets)
            let opened = try targets.map { try box.open(stored: $0) }
            #expect(targets.allSatisfy(SecretBox.isSealed) && opened == ["ntfy:https://ntfy.example.com/alerts"], "\(version)")
        }
        if let stored = try await storage.notification(id: notificationId, userId: "users-1"), let actions = stored.actions,
            let action = actions.first
        {
            #expect(action.sealed != nil && action.headers.isEmpty, "\(version): \(action)")
            #expect(try await box.opened(actions).first?.headers == ["Authorization": "Bearer tk_upgrade"], "\(version)")
        }

        // Write through this build: a publish, a change of state, a preference, a rule.
        let request = try PublishRequest(body: Data(#"{"appNotificationId":"after","payload":{"visualContent":{"title":"After the upgrade"}}}"#.utf8))
        let published = try await storage.publish(
            PublishInput(userId: "users-1", hostName: "ci.example.com", request: request, expiration: now + 3600, now: now))
        #expect(published.payload.visualContent?.title == "After the upgrade")
        let results = try await storage.mutate(
            userId: "users-1", mutations: [Mutation(id: notificationId, change: StateChange(readState: .read), mutationId: "m-2")], now: now)
        #expect(results.map(\.status) == [200], "\(version): \(results)")
        _ = try await storage.setPreferences(userId: "users-1", [PreferenceEntry(key: "mute", value: .bool(true), changedAt: now)])
        let rule = EscalationRule(
            id: "rule-2", name: "mail", afterSeconds: 60, repeatSeconds: nil, targets: ["webhook:https://hooks.example.com/x"],
            priority: "High", app: nil, group: nil, createdDateTime: now)
        #expect(try await storage.insertEscalationRule(rule, userId: "users-1", limit: 100))
        // A team (a store of any earlier version has none): made, joined, read back.
        try await storage.createTeam(id: "team-upgraded", name: "upgraded", ownerId: "users-1", at: now)
        #expect(try await storage.team(name: "upgraded")?.summary == "upgraded  alice (owner)", "\(version)")
        let after = try #require(try await storage.changes(userId: "users-1", since: 0, limit: 10))
        #expect(Set(after.changes.map(\.id)).isSuperset(of: [notificationId, published.id]))
        #expect(after.changes.first { $0.id == notificationId }?.readState == .read)

    }
}
