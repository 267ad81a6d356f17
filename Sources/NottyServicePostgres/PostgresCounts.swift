import Foundation
import NottyCore
import NottyService
import PostgresNIO

/// Every feed's view counts kept as data (``KeptCounts``): `view_counts` holds each owner's (a
/// user's or a team's) live rows by read state and action state, kept by statement triggers
/// in the statement that writes the rows: one grouped upsert a statement, however many rows
/// it wrote (a batch of publishes, a page of state changes), so every way a row is written
/// counts it. A counter row changes only under its owner's feed lock (every write of a feed
/// holds it, ``FeedLock``), so counters never deadlock and a statement that moves nothing
/// (a row written over with the same states) writes none.
extension PostgresStorage {
    static let keptCountsMigration: (name: String, statements: [String]) = {
        /// The function of a trigger: `rows` are the moved rows as (owner, read state, action state, ±1).
        func function(_ name: String, _ rows: String) -> String {
            """
            CREATE FUNCTION \(name)() RETURNS trigger LANGUAGE plpgsql AS $count$
            BEGIN
                INSERT INTO view_counts (owner, read_state, action_state, n)
                SELECT owner, read_state, action_state, sum(d) FROM (\(rows)) AS moved (owner, read_state, action_state, d)
                GROUP BY 1, 2, 3 HAVING sum(d) <> 0 ORDER BY 1, 2, 3
                ON CONFLICT (owner, read_state, action_state) DO UPDATE SET n = view_counts.n + EXCLUDED.n;
                RETURN NULL;
            END
            $count$
            """
        }
        let added = "SELECT user_id, read_state, action_state, 1 FROM new_rows WHERE NOT deleted"
        let removed = "SELECT user_id, read_state, action_state, -1 FROM old_rows WHERE NOT deleted"
        return (
            "v21",
            [
                """
                CREATE TABLE view_counts (owner TEXT NOT NULL, read_state TEXT NOT NULL, action_state TEXT NOT NULL, n BIGINT NOT NULL,
                                          PRIMARY KEY (owner, read_state, action_state))
                """,
                function("notty_count_inserted", added),
                function("notty_count_deleted", removed),
                function("notty_count_updated", "\(added) UNION ALL \(removed)"),
                // The triggers first: they lock the table against writers until the counts below are in.
                """
                CREATE TRIGGER view_counts_insert AFTER INSERT ON notifications REFERENCING NEW TABLE AS new_rows
                FOR EACH STATEMENT EXECUTE FUNCTION notty_count_inserted()
                """,
                """
                CREATE TRIGGER view_counts_delete AFTER DELETE ON notifications REFERENCING OLD TABLE AS old_rows
                FOR EACH STATEMENT EXECUTE FUNCTION notty_count_deleted()
                """,
                """
                CREATE TRIGGER view_counts_update AFTER UPDATE ON notifications REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
                FOR EACH STATEMENT EXECUTE FUNCTION notty_count_updated()
                """,
                "INSERT INTO view_counts SELECT user_id, read_state, action_state, count(*) FROM notifications WHERE NOT deleted GROUP BY 1, 2, 3",
                // The running snoozes from the index (their read state in it), and each feed's
                // expired rows not swept yet (the expiry index alone is read as a whole table's
                // when its statistics count the tombstones' past expiries).
                """
                CREATE INDEX notifications_snoozes ON notifications (user_id, snoozed_until) INCLUDE (read_state)
                WHERE action_state = 'Snoozed' AND NOT deleted
                """,
                "CREATE INDEX notifications_owner_expiry ON notifications (user_id, expires) WHERE NOT deleted",
            ]
        )
    }()

    /// The counts of user `$1` at `$2` (milliseconds): the kept cells of their feeds, the
    /// snoozes still running, the rows expired and not swept.
    public static let keptCountsSQL = """
        WITH owners AS (SELECT $1::text AS id UNION ALL SELECT team_id FROM team_members WHERE user_id = $1)
        SELECT 0, read_state, action_state, false, sum(n)::bigint FROM view_counts WHERE owner IN (SELECT id FROM owners) GROUP BY 2, 3
        UNION ALL
        SELECT 1, read_state, '', false, count(*) FROM notifications
        WHERE user_id IN (SELECT id FROM owners) AND action_state = 'Snoozed' AND NOT deleted AND snoozed_until > $2 GROUP BY 2
        UNION ALL
        SELECT 2, read_state, action_state, action_state = 'Snoozed' AND snoozed_until > $2, count(*) FROM notifications
        WHERE NOT deleted AND expires <= $2 AND user_id IN (SELECT id FROM owners) GROUP BY 2, 3, 4
        """

    func keptCounts(_ connection: PostgresConnection, userId: String, now: Int64) async throws -> ViewCounts {
        var binds = PostgresBindings()
        binds.append(userId)
        binds.append(now)
        var kept = KeptCounts()
        let rows = try await connection.query(PostgresQuery(unsafeSQL: Self.keptCountsSQL, binds: binds), logger: logger)
            .collect((Int32, String, String, Bool, Int64).self)
        for (part, read, action, running, count) in rows {
            switch part {
            case 0: kept.kept(readState: read, actionState: action, count: Int(count))
            case 1: kept.running(readState: read, count: Int(count))
            default: kept.expired(readState: read, actionState: action, running: running, count: Int(count))
            }
        }
        return kept.counts
    }
}
