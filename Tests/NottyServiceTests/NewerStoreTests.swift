import Foundation
import GRDB
import NottyCore
import NottyTestSupport
import Testing

@testable import NottyService
@testable import NottyServicePostgres
@testable import NottyServiceSQLite

@Suite("A store from a newer build is refused and left as it is", .timeLimit(.minutes(5)))
struct NewerStoreTests {
    @Test("SQLite: a store with a migration this build does not know is refused, naming it and this build's newest; nothing is written to it")
    func sqlite() async throws {
        let directory = Repository.temporaryDirectory("notty-newer")
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("server.sqlite").path
        try await SQLiteStorage(path: path).close()
        let queue = try DatabaseQueue(path: path)
        try await queue.write { db in try db.execute(sql: "INSERT INTO grdb_migrations (identifier) VALUES ('v99 from the future')") }
        func fingerprint() async throws -> [String] {
            try await queue.read { db in
                try String.fetchAll(db, sql: "SELECT coalesce(sql, name) FROM sqlite_master WHERE name NOT LIKE 'grdb_issue%' ORDER BY name")
                    + String.fetchAll(db, sql: "SELECT identifier FROM grdb_migrations ORDER BY identifier")
                    + String.fetchAll(db, sql: "SELECT key || '=' || value FROM meta ORDER BY key")
            }
        }
        let before = try await fingerprint()
        do {
            _ = try SQLiteStorage(path: path)
            Issue.record("a store of a newer build was opened")
        } catch let error as NewerStoreError {
            #expect(error.unknown == ["v99 from the future"] && error.newestKnown == SQLiteStorage.migrator.migrations.last)
            #expect(error.description.contains("newer notty-server") && error.description.contains("v99 from the future"), "\(error)")
        }
        #expect(try await fingerprint() == before)
        #expect(throws: SQLiteBackup.Failure.self) { try SQLiteBackup.check(path) }
    }

    @Test(
        "PostgreSQL: a database with a migration this build does not know is refused before any statement of this build's migrations",
        .enabled(if: TestPostgres.testsRun))
    func postgres() async throws {
        let url = try await TestPostgres.createDatabase()
        try await PostgresStorage.connect(url: PostgresURL(url), logger: .quiet, timeout: .seconds(30)).close()
        try await TestPostgres.psql(url, "INSERT INTO notty_migrations (name) VALUES ('v99-from-the-future'); DROP INDEX IF EXISTS action_runs_user;")
        do {
            let storage = try await PostgresStorage.connect(url: PostgresURL(url), logger: .quiet, timeout: .seconds(30))
            try? await storage.close()
            Issue.record("a database of a newer build was used")
        } catch let error as NewerStoreError {
            #expect(error.unknown == ["v99-from-the-future"] && error.newestKnown == PostgresStorage.migrations.last?.name, "\(error)")
        }
    }
}
