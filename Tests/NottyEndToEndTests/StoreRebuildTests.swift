import Foundation
import GRDB
import NottyCore
import NottyStore
import NottyTestSupport
import Testing

@Suite("A device store that can always be rebuilt: notty resync", .timeLimit(.minutes(5)), .serialized)
struct StoreRebuildTests {
    /// B dismisses one of three notifications while the service is away (queued), then the
    /// service comes back: B's store holds a change the service has not seen.
    static func worldWithAQueuedChange() async throws -> (world: TwoDevices, ids: [String]) {
        let world = try await TwoDevices()
        var ids: [String] = []
        for title in ["Disk full on db-1", "Backup done", "Deploy failed"] { ids.append(try await world.publish(title)) }
        #expect(try await world.b.run(["sync"]).status == 0)
        await world.service.stop()
        let queued = try await world.b.run(["dismiss", ids[0]])
        #expect(queued.status == 0 && queued.err.contains("queued"), "\(queued.err)")
        try await world.service.start(port: world.service.port)
        return (world, ids)
    }

    /// The store's file with the pages of one table overwritten by garbage (its WAL emptied
    /// into it first, so that SQLite reads the garbage).
    static func damage(_ device: NottyCLI, table: String) throws {
        let path = device.home.appendingPathComponent("store.sqlite").path
        let (root, pageSize) = try DatabaseQueue(path: path).writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)")
            return (
                try Int.fetchOne(db, sql: "SELECT rootpage FROM sqlite_master WHERE name = ?", arguments: [table]) ?? 0,
                try Int.fetchOne(db, sql: "PRAGMA page_size") ?? 4096
            )
        }
        try #require(root > 1, "no table \(table)")
        let file = try #require(FileHandle(forUpdatingAtPath: path))
        defer { try? file.close() }
        try file.seek(toOffset: UInt64((root - 1) * pageSize))
        try file.write(contentsOf: Data((0..<pageSize).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }))
    }

    @Test(
        "garbage pages: every command says in one line that the store is damaged and to run notty resync; resync rebuilds it from the service, keeps the change not sent yet (A sees it) and says so; the old file stays beside it"
    )
    func damagedStore() async throws {
        let (world, ids) = try await Self.worldWithAQueuedChange()
        try Self.damage(world.b, table: "notifications")

        for arguments in [["list"], ["list", "--view", "all", "--json"], ["show", ids[1]]] {
            let broken = try await world.b.run(arguments)
            #expect(broken.status != 0, "\(arguments) exited 0 on a damaged store: \(broken.out)")
            #expect(broken.err.split(separator: "\n").count == 1, "\(arguments): \(broken.err)")
            #expect(broken.err.contains("is damaged") && broken.err.contains("notty resync"), "\(arguments): \(broken.err)")
            #expect(!broken.err.contains("permissions"), "the wrong advice: \(broken.err)")
        }

        let rebuilt = try await world.b.run(["resync"])
        #expect(rebuilt.status == 0, "resync: \(rebuilt.err)")
        #expect(rebuilt.out.contains("3 notification(s)") && rebuilt.out.contains("kept 1 change(s) not sent yet"), "\(rebuilt.out)")
        let aside = try FileManager.default.contentsOfDirectory(atPath: world.b.home.path).filter { $0.hasPrefix("store.sqlite.before-resync-") }
        #expect(!aside.isEmpty, "the old store was not kept")

        let listed = try await world.b.run(["list", "--view", "all", "--json"])
        #expect(listed.status == 0 && listed.out.split(separator: "\n").count == 3, "\(listed.out) \(listed.err)")
        #expect(try await world.a.run(["sync"]).status == 0)
        #expect(
            try await world.a.run(["show", ids[0], "--json"]).out.contains(#""userActionState":"Dismissed""#), "B's queued dismiss did not reach A")
        #expect(try await world.a.run(["show", ids[1], "--json"]).out.contains(#""userActionState":"NoInteraction""#))
    }

    @Test("a truncated file: one line says to run notty resync; resync rebuilds it with the whole history")
    func truncatedStore() async throws {
        let (world, ids) = try await Self.worldWithAQueuedChange()
        let path = world.b.home.appendingPathComponent("store.sqlite").path
        try await DatabaseQueue(path: path).writeWithoutTransaction { db in try db.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)") }
        let size = try #require(try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int)
        try #require(truncate(path, off_t(size / 2)) == 0)

        let broken = try await world.b.run(["list", "--view", "all"])
        #expect(broken.status != 0 && broken.err.split(separator: "\n").count == 1 && broken.err.contains("notty resync"), "\(broken.err)")
        // notty count (its read-only open refused) says the same, in one line.
        let count = try await world.b.run(["count"])
        #expect(count.status != 0 && count.err.split(separator: "\n").count == 1 && count.err.contains("notty resync"), "\(count.err)")
        let rebuilt = try await world.b.run(["resync"])
        #expect(rebuilt.status == 0 && rebuilt.out.contains("3 notification(s)"), "\(rebuilt.out) \(rebuilt.err)")
        #expect(try await world.b.run(["show", ids[2], "--json"]).status == 0)
    }

    @Test("a store from a newer build is refused in one line and left as it is; resync rebuilds it for this build, keeping its unsent change")
    func newerStore() async throws {
        let (world, ids) = try await Self.worldWithAQueuedChange()
        let path = world.b.home.appendingPathComponent("store.sqlite").path
        try await DatabaseQueue(path: path).write { db in
            try db.execute(sql: "INSERT INTO grdb_migrations (identifier) VALUES ('v99 from the future')")
        }
        // What this build would change: the schema, the migrations, the rows (GRDB itself may
        // write a table and drop it again to make the WAL file exist: not a change).
        func fingerprint() throws -> [String] {
            try DatabaseQueue(path: path).read { db in
                try String.fetchAll(db, sql: "SELECT coalesce(sql, name) FROM sqlite_master ORDER BY name")
                    + String.fetchAll(db, sql: "SELECT identifier FROM grdb_migrations ORDER BY identifier")
                    + String.fetchAll(db, sql: "SELECT id || read_state || action_state FROM notifications ORDER BY id")
                    + String.fetchAll(db, sql: "SELECT mutation_id FROM outbox ORDER BY seq")
                    + String.fetchAll(db, sql: "SELECT key || '=' || value FROM meta ORDER BY key")
            }
        }
        let before = try fingerprint()

        let refused = try await world.b.run(["list"])
        #expect(refused.status != 0 && refused.err.contains("newer notty") && refused.err.contains("notty resync"), "\(refused.err)")
        let count = try await world.b.run(["count", "--format", "tmux"])
        #expect(count.status != 0 && count.err.contains("newer notty") && count.out.isEmpty, "\(count.out) \(count.err)")
        #expect(try fingerprint() == before, "the newer store was changed")

        let rebuilt = try await world.b.run(["resync"])
        #expect(rebuilt.status == 0 && rebuilt.out.contains("kept 1 change(s)"), "\(rebuilt.out) \(rebuilt.err)")
        #expect(try await world.a.run(["sync"]).status == 0)
        #expect(try await world.a.run(["show", ids[0], "--json"]).out.contains(#""userActionState":"Dismissed""#))
    }
}
