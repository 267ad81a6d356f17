import Foundation
import GRDB
import NottyComposition
import NottyCore
import NottySQLite
import NottyTestSupport
import Testing

@testable import NottyHTTP
@testable import NottyService
@testable import NottyServicePostgres
@testable import NottyServiceSQLite

@Suite("SQLite schema", .timeLimit(.minutes(5)))
struct SQLiteSchemaTests {
    private func publish(_ storage: SQLiteStorage, userId: String, _ appNotificationId: String, title: String, now: Date) async throws
        -> UserNotification
    {
        let request = try PublishRequest(
            body: Data(#"{"appNotificationId":"\#(appNotificationId)","payload":{"visualContent":{"title":"\#(title)"}}}"#.utf8))
        return try await storage.publish(PublishInput(userId: userId, hostName: "ci.example.com", request: request, expiration: now + 3600, now: now))
    }

    private static func alter(_ path: String, _ sql: String) throws {
        let queue = try DatabaseQueue(path: path)
        try queue.write { db in try db.execute(sql: sql) }
        try queue.close()
    }

    @Test(
        "The WAL is checkpointed beside the writer, not in its commits: it stays bounded, every commit is in the database file after close, and SQLite's own checkpoints are back once closed"
    )
    func walCheckpointsBesideTheWriter() async throws {
        let directory = Repository.temporaryDirectory("notty-schema")
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("server.sqlite").path
        let now = Date(timeIntervalSince1970: 1_790_000_000)
        let storage = try SQLiteStorage(path: path)
        let userId = try await NotificationService(storage: storage, secrets: .ephemeral()).admin.addUser(name: "alice", password: "s3cret-pw").id
        // One commit each, ~4 pages each: past the 1,000-page mark several times.
        var ids: [String] = []
        for i in 0..<800 { ids.append(try await publish(storage, userId: userId, "wal-\(i)", title: "WAL \(i)", now: now).id) }
        for id in ids {
            _ = try await storage.mutate(
                userId: userId, mutations: [Mutation(id: id, change: StateChange(readState: .read), changedAt: ISOTime.millis(now) + 1)], now: now + 1
            )
        }
        await storage.checkpointer.finished()
        #expect(storage.checkpointer.runCount >= 2, "the writer's WAL hook asked for checkpoints")
        let walPages = ((try? FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? Int) ?? 0) / 4096
        #expect(walPages < 5 * Int(WALCheckpointer.pages), "the WAL grew to \(walPages) pages")
        try await storage.close()
        // Everything committed is in the file (a plain connection of another library's kind).
        let queue = try DatabaseQueue(path: path)
        let read = try await queue.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM notifications WHERE read_state = 'Read'") }
        try queue.close()
        #expect(read == ids.count)
    }

    @Test("Migration v2 keeps a v1 store's notifications, their order and their ids, old and new")
    func migrationKeepsNotifications() async throws {
        let directory = Repository.temporaryDirectory("notty-schema")
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("server.sqlite").path
        let now = Date(timeIntervalSince1970: 1_790_000_000)

        // A store as notty left it before v2: random version 4 ids, a read one, a deleted one.
        let old = try SQLiteStorage(path: path, migratingUpTo: "v1")
        // Today's reads and writes name launch_url (migration v4): the v1 store gets it for the
        // time it is written here, and loses it again before it is migrated.
        try Self.alter(path, "ALTER TABLE notifications ADD COLUMN launch_url TEXT")
        try Self.alter(path, "ALTER TABLE notifications ADD COLUMN actions TEXT")  // v11, likewise
        // The same for the preferences the feed reads (migration v8), and a team's (v13, v14).
        try Self.alter(path, "CREATE TABLE preferences (user_id TEXT, key TEXT, value TEXT, changed_at INTEGER, seq INTEGER)")
        try Self.alter(path, "CREATE TABLE team_members (team_id TEXT, user_id TEXT, role TEXT, since INTEGER)")
        try Self.alter(path, "CREATE TABLE teams (id TEXT, name TEXT, created INTEGER)")  // the teams' mutes a member reads (§16.4)
        try Self.alter(path, "ALTER TABLE notifications ADD COLUMN team TEXT")
        try Self.alter(path, "ALTER TABLE notifications ADD COLUMN changed_by TEXT")
        try Self.alter(path, "ALTER TABLE users ADD COLUMN disabled INTEGER NOT NULL DEFAULT 0")  // v17, likewise
        try Self.alter(path, "ALTER TABLE users ADD COLUMN created INTEGER")
        let userId = try await NotificationService(storage: old, secrets: .ephemeral()).admin.addUser(name: "alice", password: "s3cret-pw").id
        var published: [String] = []
        for i in 0..<3 { published.append(try await publish(old, userId: userId, "build-\(i)", title: "v1 \(i)", now: now).id) }
        let made = published
        try await old.close()
        let v4Ids = (0..<3).map { _ in UUID().uuidString.lowercased() }
        let queue = try DatabaseQueue(path: path)
        let indexesBefore = try await queue.read(Self.notificationIndexes)
        try await queue.write { db in
            for (made, id) in zip(made, v4Ids) { try db.execute(sql: "UPDATE notifications SET id = ? WHERE id = ?", arguments: [id, made]) }
        }
        try queue.close()
        let reopenedOld = try SQLiteStorage(path: path, migratingUpTo: "v1")
        _ = try await reopenedOld.mutate(
            userId: userId, mutations: [Mutation(id: v4Ids[0], change: StateChange(readState: .read), changedAt: ISOTime.millis(now) + 1)],
            now: now + 1)
        _ = try await reopenedOld.mutate(userId: userId, mutations: [Mutation(id: v4Ids[1], operation: .delete)], now: now + 1)
        let before = try #require(try await reopenedOld.changes(userId: userId, since: 0, limit: 100))
        try await reopenedOld.close()
        try Self.alter(path, "ALTER TABLE notifications DROP COLUMN launch_url")
        try Self.alter(path, "ALTER TABLE notifications DROP COLUMN actions")
        try Self.alter(path, "DROP TABLE preferences")
        try Self.alter(path, "DROP TABLE team_members")
        try Self.alter(path, "DROP TABLE teams")
        try Self.alter(path, "ALTER TABLE notifications DROP COLUMN team")
        try Self.alter(path, "ALTER TABLE notifications DROP COLUMN changed_by")
        try Self.alter(path, "ALTER TABLE users DROP COLUMN disabled")
        try Self.alter(path, "ALTER TABLE users DROP COLUMN created")

        // Opened by this notty: migrated, and everything is where it was.
        let storage = try SQLiteStorage(path: path)
        let after = try #require(try await storage.changes(userId: userId, since: 0, limit: 100))
        #expect(after.changes == before.changes)
        #expect(after.lastSeq == before.lastSeq)
        #expect(try await storage.notification(id: v4Ids[0], userId: userId)?.readState == .read)
        #expect(try await storage.notification(id: v4Ids[2], userId: userId)?.payload.visualContent?.title == "v1 2")
        // Only the exact id finds a row: the index's key leaves out the ninth character ("-").
        let ninthChanged = String(v4Ids[2].prefix(8)) + "x" + String(v4Ids[2].dropFirst(9))
        #expect(try await storage.notification(id: ninthChanged, userId: userId) == nil)
        #expect(try await storage.notification(id: String(v4Ids[2].prefix(8)), userId: userId) == nil)

        // Writes keep working on old and new ids: a re-publish updates the old row in place (the
        // app's unique index is still the conflict target), a new publish gets a version 8 id.
        let republished = try await publish(storage, userId: userId, "build-2", title: "v2 2", now: now + 2)
        #expect(republished.id == v4Ids[2])
        let fresh = try await publish(storage, userId: userId, "build-3", title: "v2 3", now: now + 2)
        #expect(fresh.id.wholeMatch(of: /[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}/) != nil)
        let results = try await storage.mutate(
            userId: userId,
            mutations: [
                Mutation(id: fresh.id, change: StateChange(userActionState: .dismissed), changedAt: ISOTime.millis(now) + 3),
                Mutation(id: v4Ids[0], change: StateChange(userActionState: .activated), changedAt: ISOTime.millis(now) + 3),
            ], now: now + 3)
        #expect(results.map(\.status) == [200, 200])
        let list = try await storage.list(userId: userId, view: .all, top: 10, skip: 0, now: now + 4)
        #expect(Set(list.map(\.id)) == [v4Ids[0], v4Ids[2], fresh.id])

        // A tombstone replaces its row through the ids' index alone (the app's index covers
        // only live rows): deleting an old and a new id, and expiring the rest, leaves one
        // row per id.
        let deletes = try await storage.mutate(
            userId: userId, mutations: [Mutation(id: v4Ids[0], operation: .delete), Mutation(id: fresh.id, operation: .delete)], now: now + 5)
        #expect(deletes.map(\.status) == [204, 204])
        #expect(try await storage.expire(now: now + 7200) == 1)
        try await storage.close()
        let migrated = try DatabaseQueue(path: path)
        defer { try? migrated.close() }
        let rows = try migrated.read { db in
            try Row.fetchAll(db, sql: "SELECT id, count(*) AS n, max(deleted) AS deleted FROM notifications GROUP BY id")
        }
        #expect(rows.count == 4 && rows.allSatisfy { $0["n"] == 1 && $0["deleted"] == 1 }, "\(rows)")
        // The other indexes are v1's, unchanged; the ids' index is new, and so is the running
        // snoozes' of the kept counts (v20).
        let indexesAfter = try await migrated.read(Self.notificationIndexes)
        #expect(indexesAfter.filter { !$0.contains("notifications_id") && !$0.contains("notifications_snoozes") } == indexesBefore)
        #expect(indexesAfter.contains("CREATE UNIQUE INDEX notifications_id ON notifications (substr(id, 10), substr(id, 1, 8))"))
    }

    /// The SQL of the `notifications` table's own indexes, by name.
    private static func notificationIndexes(_ db: Database) throws -> [String] {
        try String.fetchAll(
            db, sql: "SELECT sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'notifications' AND sql IS NOT NULL ORDER BY name")
    }

    @Test("A notification is found by id through the ids' own index, not by a scan")
    func lookupsByIdUseTheIndex() async throws {
        let directory = Repository.temporaryDirectory("notty-schema")
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("server.sqlite").path
        try await SQLiteStorage(path: path).close()
        let queue = try DatabaseQueue(path: path)
        defer { try? queue.close() }
        let plan = try await queue.read { db in
            try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN \(SQLiteStorage.byIdSQL)", arguments: ["a", "b"])
                .map { $0["detail"] as String }
        }
        #expect(plan.count == 1 && plan[0].contains("USING INDEX notifications_id"), "\(plan)")
        // A reader's lookup (their own or a team's) finds the row through the same index first.
        let readerPlan = try await queue.read { db in
            try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN \(SQLiteStorage.byIdForReaderSQL)", arguments: ["a", "b"]).map { $0["detail"] as String }
        }
        #expect(readerPlan.first?.contains("USING INDEX notifications_id") == true, "\(readerPlan)")
    }
}
