import Foundation
import GRDB
import NottyCore
import NottyService

/// Every feed's view counts kept as data (``KeptCounts``): `view_counts` holds each owner's
/// (a user's or a team's) live rows by read state and action state, kept by triggers in the
/// transaction that writes a row, so every way a row is written (a publish, a state change, a
/// delete, the sweeper, a restore) counts it. `notifications_snoozes` counts the snoozes still
/// running from the index alone (it holds their read state); `notifications_expiry` finds the
/// rows the sweeper (every half second) has not reached.
public enum SQLiteCounts {
    static func migrate(_ db: Database) throws {
        let cell = "owner = old.user_id AND read_state = old.read_state AND action_state = old.action_state"
        let moved = ["user_id", "read_state", "action_state", "deleted"]
        try db.execute(
            sql: """
                CREATE TABLE view_counts (
                    owner TEXT NOT NULL, read_state TEXT NOT NULL, action_state TEXT NOT NULL, n INTEGER NOT NULL,
                    PRIMARY KEY (owner, read_state, action_state)
                ) WITHOUT ROWID;
                INSERT INTO view_counts SELECT user_id, read_state, action_state, count(*) FROM notifications WHERE deleted = 0 GROUP BY 1, 2, 3;
                CREATE INDEX notifications_snoozes ON notifications (user_id, snoozed_until, read_state) WHERE deleted = 0 AND action_state = 'Snoozed';
                CREATE TRIGGER view_counts_insert AFTER INSERT ON notifications WHEN new.deleted = 0 BEGIN
                    INSERT INTO view_counts VALUES (new.user_id, new.read_state, new.action_state, 1)
                    ON CONFLICT DO UPDATE SET n = n + 1;
                END;
                CREATE TRIGGER view_counts_delete AFTER DELETE ON notifications WHEN old.deleted = 0 BEGIN
                    UPDATE view_counts SET n = n - 1 WHERE \(cell);
                END;
                CREATE TRIGGER view_counts_update AFTER UPDATE OF \(moved.joined(separator: ", ")) ON notifications
                WHEN \(moved.map { "old.\($0) IS NOT new.\($0)" }.joined(separator: " OR ")) BEGIN
                    UPDATE view_counts SET n = n - 1 WHERE old.deleted = 0 AND \(cell);
                    INSERT INTO view_counts SELECT new.user_id, new.read_state, new.action_state, 1 WHERE new.deleted = 0
                    ON CONFLICT DO UPDATE SET n = n + 1;
                END;
                """)
    }

    /// The counts of user `?1` at `?2` (milliseconds): the kept cells of their feeds, the
    /// snoozes still running, the rows expired and not swept.
    public static let sql = """
        SELECT 0, read_state, action_state, 0, sum(n) FROM view_counts WHERE owner IN \(SQLiteStorage.owners("?1")) GROUP BY 2, 3
        UNION ALL
        SELECT 1, read_state, '', 0, count(*) FROM notifications INDEXED BY notifications_snoozes
        WHERE user_id IN \(SQLiteStorage.owners("?1")) AND deleted = 0 AND action_state = 'Snoozed' AND snoozed_until > ?2 GROUP BY 2
        UNION ALL
        SELECT 2, read_state, action_state, action_state = 'Snoozed' AND snoozed_until > ?2, count(*) FROM notifications INDEXED BY notifications_expiry
        WHERE deleted = 0 AND expires <= ?2 AND user_id IN \(SQLiteStorage.owners("?1")) GROUP BY 2, 3, 4
        """

    static func counts(_ db: Database, userId: String, now: Int64) throws -> ViewCounts {
        var kept = KeptCounts()
        for row in try Row.fetchAll(db.cachedStatement(sql: sql), arguments: [userId, now]) {
            let (part, read, action, running, count): (Int, String, String, Bool, Int) = (row[0], row[1], row[2], row[3], row[4])
            switch part {
            case 0: kept.kept(readState: read, actionState: action, count: count)
            case 1: kept.running(readState: read, count: count)
            default: kept.expired(readState: read, actionState: action, running: running, count: count)
            }
        }
        return kept.counts
    }
}
