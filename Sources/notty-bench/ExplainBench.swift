import Foundation
import NottyTestSupport

/// `notty-bench explain`: the plans PostgreSQL chooses for the service's hot queries on a
/// 1,000,000-row `notifications` table, as `EXPLAIN (ANALYZE, BUFFERS)` of the very statements
/// `notty serve` sends (PostgreSQL's `auto_explain` logs them: no copy of the SQL here).
///
/// A throwaway cluster (`.ci/postgres-server`) gets the schema from a real `notty serve`, then
/// 1,000 users and their notifications with SQL: one heavy user (alice, 100,900 rows) and 999
/// with 900 each; a third read, a tenth dismissed, a fiftieth deleted (tombstones). The service
/// is started again with auto_explain on and asked, as alice, what a device asks (each request
/// twice: the second's plans are shown).
struct ExplainBench {
    var heavyRows = 100_900
    var users = 999
    var rowsPerUser = 900

    func run() async throws {
        let cluster = try await TestPostgres.Cluster.start()
        let database = try await TestPostgres.createDatabase(on: cluster.url)
        let bench = try await ServiceBench.start(environment: ["NOTTY_POSTGRES_URL": database])
        // The cluster is stopped and removed by its watcher when this process exits.
        await bench.serve.stop()

        let total = heavyRows + users * rowsPerUser
        print("notty-bench explain — PostgreSQL, \(total) notifications: alice \(heavyRows), \(users) other users \(rowsPerUser) each")
        let fill = try await duration {
            try await TestPostgres.psql(database, fillSQL)
        }
        // What autovacuum does to a table after such an insert (index-only scans need it).
        let vacuum = try await duration { try await TestPostgres.psql(database, "VACUUM ANALYZE notifications") }
        print(String(format: "filled in %.1f s (one INSERT … SELECT, then ANALYZE); VACUUM %.1f s", fill, vacuum))
        let name = String(database.split(separator: "/").last!.split(separator: "?").first!)
        try await TestPostgres.psql(
            database,
            """
            ALTER DATABASE \(name) SET session_preload_libraries = 'auto_explain';
            ALTER DATABASE \(name) SET auto_explain.log_min_duration = 0;
            ALTER DATABASE \(name) SET auto_explain.log_analyze = on;
            ALTER DATABASE \(name) SET auto_explain.log_buffers = on;
            ALTER DATABASE \(name) SET auto_explain.log_timing = on;
            """)
        let log = URL(fileURLWithPath: cluster.directory).appendingPathComponent("server.log")
        try await bench.serve.start(extraArguments: ServiceBench.unlimited)

        // What a device and an app do; the plans each request's statements got.
        let latest = try Self.scalar(database, "SELECT max(seq) FROM notifications WHERE user_id = (SELECT id FROM users WHERE user_name = 'alice')")
        let requests: [(String, String)] = [
            ("the change feed, first page", "/v1/me/notifications/changes?since=0"),
            ("the change feed, caught up but for 50", "/v1/me/notifications/changes?since=\(Int64(latest)! - 50)"),
            ("a view's first window (Unread)", "/v1/me/notifications?view=unread&top=50"),
            ("a sparse view's first window (Snoozed)", "/v1/me/notifications?view=snoozed&top=50"),
            ("a deep window (Unread, skip 50,000)", "/v1/me/notifications?view=unread&top=50&skip=50000"),
            ("the counts of every view", "/v1/me/notifications/counts"),
        ]
        var seen = (try? Data(contentsOf: log).count) ?? 0
        func newPlans() throws -> [Plan] {
            let data = try Data(contentsOf: log)
            defer { seen = data.count }
            return Self.plans(in: String(decoding: data.dropFirst(seen), as: UTF8.self)).filter {
                $0.query.contains("notifications") && !$0.query.contains("expires <=")
            }  // not the expiry sweep
        }
        var sections: [(String, [Plan])] = []
        for (label, path) in requests {
            // Twice: the plans of the second, with PostgreSQL's cache warm as for a route in use.
            for _ in 0..<2 {
                _ = try newPlans()
                let (status, text) = try await bench.request(.GET, path, token: bench.userToken)
                guard status == 200 else { throw SupportError("\(path): \(status) \(text.prefix(200))") }
            }
            sections.append(("\(label): GET \(path)", try newPlans()))
        }
        let published = try await bench.publish("explain-1")
        guard published == 201 else { throw SupportError("publish: \(published)") }
        sections.append(("a publish (new notification): POST /beta/me/notifications", try newPlans()))

        // What the index of migration v5 buys: the same requests without it, in the same run.
        try await TestPostgres.psql(database, "DROP INDEX notifications_state")
        var without: [(String, [Plan])] = []
        for (label, path) in requests where label.contains("Snoozed") || label.contains("counts") {
            for _ in 0..<2 {
                _ = try newPlans()
                _ = try await bench.request(.GET, path, token: bench.userToken)
            }
            without.append(("\(label), without notifications_state", try newPlans()))
        }
        await bench.serve.stop()

        for (label, plans) in sections + without {
            print("")
            print("### \(label)")
            for plan in plans {
                print("")
                print("```")
                print(plan.query)
                print("")
                print(plan.plan)
                print("```")
            }
        }
        await bench.stop()
    }

    /// One value from `psql`.
    static func scalar(_ url: String, _ sql: String) throws -> String {
        let (status, output) = try Repository.runWaiting([TestPostgres.psqlPath ?? "psql", "-X", "-At", url, "-c", sql])
        guard status == 0 else { throw SupportError("psql failed (\(sql)): \(output)") }
        return output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The SQL that fills the database: the users, then every user's notifications in one
    /// statement (positions from the service's own sequence, in order per user).
    var fillSQL: String {
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        return """
            INSERT INTO users (id, user_name, display_name, password_hash)
            SELECT 'bench-' || g, 'bench-user-' || g, 'Bench user ' || g, 'x' FROM generate_series(1, \(users)) AS g;
            INSERT INTO notifications (id, user_id, host_name, app_notification_id, group_name, priority, raw_content, has_visual, title, body,
                                       display_ttl, expires, created, modified, deleted, read_state, read_at, action_state, snoozed_until, action_at,
                                       target_policy, fallback_policy, seq)
            SELECT u.id || '-' || g, u.id, 'ci.example.com', 'n' || g, 'CI', 'High', NULL, true, 'Build ' || g || ' failed', '3 tests failed on main',
                   NULL, \(now) + 2592000000, \(now) - (n - g) * 1000, \(now) - (n - g) * 1000, g % 50 = 0,
                   CASE WHEN g % 3 = 0 THEN 'Read' ELSE 'Unread' END, \(now) - (n - g) * 1000,
                   CASE WHEN g % 10 = 0 THEN 'Dismissed' WHEN g % 997 = 0 THEN 'Snoozed' ELSE 'NoInteraction' END,
                   CASE WHEN g % 997 = 0 THEN \(now) + 3600000 END, \(now) - (n - g) * 1000, NULL, NULL, nextval('notty_seq')
            FROM (SELECT id, CASE WHEN user_name = 'alice' THEN \(heavyRows) ELSE \(rowsPerUser) END AS n FROM users ORDER BY id) AS u,
                 LATERAL generate_series(1, u.n) AS g
            ORDER BY u.id, g;
            ANALYZE;
            """
    }

    struct Plan { var query: String, plan: String }

    /// The plans auto_explain logged: each entry is "… LOG:  duration: … plan:", a line
    /// "Query Text: …" (its SQL may go on for lines) and the plan, indented.
    static func plans(in log: String) -> [Plan] {
        var plans: [Plan] = []
        var current: [Substring] = []
        func flush() {
            defer { current = [] }
            guard let head = current.first, head.contains("plan:") else { return }
            let body = current.dropFirst().map { $0.hasPrefix("\t") ? $0.dropFirst() : $0 }
            guard let start = body.firstIndex(where: { $0.hasPrefix("Query Text:") }) else { return }
            // The plan begins at the first line that names a plan node: "Name  (cost=…" or "Name  (actual…".
            let planStart = body[start...].firstIndex { $0.contains("(cost=") || $0.contains("(actual") } ?? body.endIndex
            let query = body[start..<planStart].joined(separator: "\n").replacingOccurrences(of: "Query Text: ", with: "")
            plans.append(Plan(query: query.trimmingCharacters(in: .whitespacesAndNewlines), plan: body[planStart...].joined(separator: "\n")))
        }
        for line in log.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.first?.isNumber == true { flush() }  // a new entry: its time stamp
            current.append(line)
        }
        flush()
        return plans
    }

    private func duration(_ body: () async throws -> Void) async rethrows -> Double {
        try await milliseconds(body) / 1000
    }
}
