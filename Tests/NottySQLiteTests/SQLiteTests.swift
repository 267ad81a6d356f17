import Foundation
import GRDB
import NottyTestSupport
import Testing

@testable import NottySQLite

@Suite("SQLite's configuration: kept plans, the WAL checkpointed beside the writer")
struct SQLiteTests {
    @Test("the query planner stability guarantee is taken, and statements still answer with any bound value")
    func keptPlans() throws {
        let queue = try DatabaseQueue()
        try queue.inDatabase { db in
            try QueryPlans.keep(db)
            try db.execute(sql: "CREATE TABLE t (name TEXT); INSERT INTO t VALUES ('alpha'), ('beta'), ('alphabet')")
            let statement = try db.cachedStatement(sql: "SELECT count(*) FROM t WHERE name LIKE ?")
            #expect(try Int.fetchOne(statement, arguments: ["alpha%"]) == 2)
            #expect(try Int.fetchOne(statement, arguments: ["%bet%"]) == 2)
            #expect(try Int.fetchOne(statement, arguments: ["%"]) == 3)
        }
    }

    @Test("past the mark, a checkpoint runs on the checkpointer's own connection, and the log stays bounded")
    func checkpoints() async throws {
        let directory = Repository.temporaryDirectory("notty-sqlite")
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("store.sqlite").path
        let pool = try DatabasePool(path: path)
        let checkpointer = WALCheckpointer(path: path)
        try await pool.writeWithoutTransaction { db in checkpointer.install(on: db) }
        try await pool.write { db in try db.execute(sql: "CREATE TABLE t (body BLOB)") }
        let blob = Data(repeating: 7, count: 4096)
        for _ in 0..<(3 * Int(WALCheckpointer.pages)) {
            try await pool.write { db in try db.execute(sql: "INSERT INTO t VALUES (?)", arguments: [blob]) }
        }
        try await pool.writeWithoutTransaction { db in checkpointer.uninstall(from: db) }
        await checkpointer.finished()
        #expect(checkpointer.runCount > 0, "no checkpoint ran")
        let walBytes = (try? FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? Int) ?? 0
        #expect(walBytes < 5 * Int(WALCheckpointer.pages) * 4096, "the WAL grew to \(walBytes) bytes")
        #expect(try await pool.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM t") } == 3 * Int(WALCheckpointer.pages))
    }
}
