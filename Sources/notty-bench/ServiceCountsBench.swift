import Foundation
import GRDB
import Logging
import NottyCore
import NottyService
import NottyServicePostgres
import NottyServiceSQLite
import NottyTestSupport
import PostgresNIO

/// `notty-bench counts [--count N] [--no-postgres]`: `GET /v1/me/notifications/counts` as the
/// storage answers it (in this process: no HTTP) over N notifications of one user (default
/// 100,000), on SQLite and on PostgreSQL: the counts kept as data beside the walk of the
/// user's rows they replace (the query before them, on the same store), checked equal, and
/// the CPU a publish and a state change cost with the counts' triggers and indexes and without
/// them.
///
/// The history: one in ten of the notifications in a team's feed the user is in, half read
/// at random, one in 17 dismissed, one in 29 snoozed (half of those snoozes still running),
/// one in 1,000 past its expiry and not swept yet.
struct ServiceCountsBench {
    var rows: Int
    var postgres: Bool

    func run() async throws {
        print("notty-bench counts — \(rows) notifications of one user (one in ten a team's)")
        let directory = Repository.temporaryDirectory("notty-counts-bench")
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("counts.sqlite").path
        let sqlite = try SQLiteStorage(path: path)
        let queue = try DatabasePool(path: path)
        try await measure(
            "SQLite", storage: sqlite, execute: { sql in try await queue.write { db in try db.execute(sql: sql) } },
            walk: { userId, now in
                try await queue.read { db in
                    let row = try Row.fetchOne(db, sql: Self.walkSQL(owners: Self.owners("?1"), now: "?2"), arguments: [userId, now])
                    return Self.counts(row.map { row in (0..<6).map { row[$0] as Int? ?? 0 } } ?? [])
                }
            },
            plan: { userId, now in
                try await queue.read { db in
                    var lines = try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + SQLiteCounts.sql, arguments: [userId, now]).map {
                        "  " + ($0["detail"] as String? ?? "")
                    }
                    for (index, part) in SQLiteCounts.sql.components(separatedBy: "\nUNION ALL\n").enumerated() {
                        let statement = try db.makeStatement(sql: part)
                        let arguments: StatementArguments = part.contains("?2") ? [userId, now] : [userId]
                        let times = try (0..<50).map { _ in try milliseconds { _ = try Row.fetchAll(statement, arguments: arguments) } }
                        lines.append("  part \(index): \(summary(times))")
                    }
                    return lines.joined(separator: "\n")
                }
            })
        try queue.close()
        try await sqlite.close()
        let search = SearchBench(rows: 0, postgres: postgres)
        try await search.publishCost("SQLite", feature: "the kept counts") { kept in
            try await SearchBench.sqliteStore(
                in: directory,
                dropping: kept ? [] : ["insert", "delete", "update"].map { "DROP TRIGGER view_counts_\($0)" } + ["DROP INDEX notifications_snoozes"])
        }
        guard postgres else { return }
        let cluster = try await TestPostgres.Cluster.start()
        defer { Task { try? await cluster.stop() } }
        let url = try await TestPostgres.createDatabase(on: cluster.url)
        let storage = try await PostgresStorage.connect(url: PostgresURL(url))
        let like = try await PostgresLike(url: url)
        try await measure(
            "PostgreSQL", storage: storage, execute: { sql in try await TestPostgres.psql(url, sql) },
            walk: { userId, now in
                let query = PostgresQuery(
                    unsafeSQL: Self.walkSQL(owners: Self.owners("$1::text"), now: "$2").replacingOccurrences(of: "deleted = 0", with: "NOT deleted"),
                    binds: {
                        var binds = PostgresBindings(); binds.append(userId); binds.append(now); return binds
                    }())
                let rows = try await like.connection.query(query, logger: Logger(label: "bench"))
                var counts = ViewCounts()
                for try await row in rows.decode((Int64, Int64, Int64, Int64, Int64, Int64).self) {
                    counts = Self.counts([row.0, row.1, row.2, row.3, row.4, row.5].map(Int.init))
                }
                return counts
            },
            plan: { userId, now in
                let sql =
                    "EXPLAIN (ANALYZE, BUFFERS) "
                    + PostgresStorage.keptCountsSQL.replacingOccurrences(of: "$1", with: "'\(userId)'")
                    .replacingOccurrences(of: "$2", with: "\(now)")
                return try await Repository.run([TestPostgres.psqlPath ?? "psql", "-X", "-qAt", url, "-c", sql]).1
            })
        try await like.connection.close()
        try await storage.close()
        try await search.publishCost("PostgreSQL", feature: "the kept counts") { kept in
            let database = try await TestPostgres.createDatabase(on: cluster.url)
            let storage = try await PostgresStorage.connect(url: PostgresURL(database))
            if !kept {
                try await TestPostgres.psql(
                    database,
                    ["insert", "delete", "update"].map { "DROP TRIGGER view_counts_\($0) ON notifications;" }.joined()
                        + "DROP INDEX notifications_snoozes; DROP INDEX notifications_owner_expiry;")
            }
            return storage
        }
    }

    /// Fills the store, moves its rows' states with `execute` (SQL straight to the store: the
    /// triggers count it as they count any write), then asks.
    func measure(
        _ name: String, storage: any ServiceStorage, execute: (String) async throws -> Void,
        walk: (_ userId: String, _ now: Int64) async throws -> ViewCounts,
        plan: (_ userId: String, _ now: Int64) async throws -> String
    ) async throws {
        let userId = try await SearchBench.addUser(storage)
        let teamId = Team.idPrefix + UUID().uuidString.lowercased()
        try await storage.createTeam(id: teamId, name: "ops", ownerId: userId, at: Date())
        let search = SearchBench(rows: rows, postgres: postgres)
        let started = ContinuousClock.now
        try await search.fill(storage, userId: userId, count: rows - rows / 10)
        try await search.fill(storage, userId: teamId, count: rows / 10, from: rows)
        let now = Date()
        let millis = ISOTime.millis(now)
        // Positions (`seq`) are drawn one a row: states spread by them are spread over the history.
        try await execute(
            """
            UPDATE notifications SET read_state = 'Read' WHERE (seq * 2654435761) % 1000 < 500;
            UPDATE notifications SET action_state = 'Dismissed' WHERE seq % 17 = 0;
            UPDATE notifications SET action_state = 'Snoozed', snoozed_until = \(millis) + (CASE WHEN seq % 2 = 0 THEN 3600000 ELSE -3600000 END) WHERE seq % 29 = 0;
            UPDATE notifications SET expires = \(millis) - 60000 WHERE seq % 1000 = 7;
            """)
        print(String(format: "%@: filled and moved in %.1f s", name, (ContinuousClock.now - started).seconds))
        var kept = ViewCounts()
        var keptTimes: [Double] = [], walkTimes: [Double] = []
        for round in 0..<(quick ? 60 : 220) {
            let time = try await milliseconds { kept = try await storage.counts(userId: userId, now: now) }
            if round >= 20 { keptTimes.append(time) }
        }
        // The walk before the counts were kept: every view's count over the user's rows.
        var walked = ViewCounts()
        for round in 0..<(quick ? 6 : 22) {
            let time = try await milliseconds { walked = try await walk(userId, millis) }
            if round >= 2 { walkTimes.append(time) }
        }
        print("  \(kept)")
        guard kept == walked else { throw BenchError("\(name): the kept counts \(kept) differ from the rows' \(walked)") }
        print("  the counts kept as data: \(summary(keptTimes))")
        print("  the walk of the rows:    \(summary(walkTimes))")
        if ProcessInfo.processInfo.environment["NOTTY_BENCH_PLANS"] != nil { print(try await plan(userId, millis)) }
    }
}

extension ServiceCountsBench {
    /// The query `counts` made before the counts were kept (both backends; `deleted = 0` is
    /// SQLite's spelling).
    static func walkSQL(owners: String, now: String) -> String {
        let views: [NotificationView] = [.unread, .read, .activated, .dismissed, .snoozed]
        return """
            SELECT count(*), \(views.map { "sum(CASE WHEN \($0.sqlCondition(now: now)) THEN 1 ELSE 0 END)" }.joined(separator: ", "))
            FROM notifications WHERE user_id IN \(owners) AND deleted = 0 AND expires > \(now)
            """
    }

    /// The user `parameter`'s feed and their teams' (`$1::text` on PostgreSQL, `?1` on SQLite).
    static func owners(_ parameter: String) -> String {
        "(SELECT \(parameter) UNION ALL SELECT team_id FROM team_members WHERE user_id = \(parameter))"
    }

    /// All, then the five views, as the walk answers them.
    static func counts(_ values: [Int]) -> ViewCounts {
        var counts = ViewCounts()
        guard values.count == 6 else { return counts }
        counts.all = values[0]
        for (index, view) in [NotificationView.unread, .read, .activated, .dismissed, .snoozed].enumerated() { counts[view] = values[index + 1] }
        return counts
    }
}

struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
