import Foundation
import GRDB
import NottyCore
import NottyService

/// Runs of actions (PROTOCOL.md §12): a row per action of a notification, its latest run.
extension SQLiteStorage {
    /// Inserts a running row, or takes over one that may be run again; the `WHERE` is the rule
    /// of ``ActionStorage/claimActionRun(_:)``, applied by the one statement (so by one press).
    static let claimActionSQL = """
        INSERT INTO action_runs (notification_id, idx, user_id, published, label, status, device, at, lease_until)
        VALUES (?, ?, ?, ?, ?, 'running', ?, ?, ?)
        ON CONFLICT (notification_id, idx) DO UPDATE SET
            published = excluded.published, label = excluded.label, status = 'running', http_status = NULL, error = NULL,
            device = excluded.device, at = excluded.at, lease_until = excluded.lease_until
        WHERE action_runs.published <> excluded.published OR action_runs.status = 'failed'
            OR (action_runs.status = 'running' AND action_runs.lease_until <= excluded.at)
        RETURNING 1
        """

    public func claimActionRun(_ claim: ActionClaim) async throws -> ActionResult? {
        try await write { db, _ in
            let claimed =
                try Row.fetchOne(
                    db.cachedStatement(sql: Self.claimActionSQL),
                    arguments: [
                        claim.notificationId, claim.index, claim.userId, claim.published, claim.label, claim.device,
                        ISOTime.millis(claim.at), ISOTime.millis(claim.leaseUntil),
                    ]) != nil
            if claimed { return nil }
            guard
                let row = try Row.fetchOne(
                    db, sql: "SELECT * FROM action_runs WHERE notification_id = ? AND idx = ?",
                    arguments: [claim.notificationId, claim.index])
            else { return nil }
            return Self.actionResult(row)
        }
    }

    public func finishActionRun(_ claim: ActionClaim, result: ActionResult) async throws {
        try await write { db, context in
            try db.cachedStatement(
                sql: """
                    UPDATE action_runs SET status = ?, http_status = ?, error = ?, at = ?, lease_until = 0
                    WHERE notification_id = ? AND idx = ? AND published = ?
                    """
            ).execute(arguments: [
                result.status.rawValue, result.httpStatus, result.error, ISOTime.millis(result.at),
                claim.notificationId, claim.index, claim.published,
            ])
            guard db.changesCount == 1,
                let row = try Self.fetchStored(db, sql: Self.byIdSQL, [claim.notificationId, claim.userId]), row.notification.status == .active
            else { return }
            // It moves in the feed (every device shows the outcome); only its position changes.
            try db.cachedStatement(sql: "UPDATE notifications SET seq = ?3 WHERE \(Self.idMatches) AND user_id = ?2")
                .execute(arguments: [claim.notificationId, claim.userId, context.nextSeq(for: claim.userId)])
        }
    }

    public func actionResults(userId: String, published: [String: Int64]) async throws -> [String: [ActionResult]] {
        guard !published.isEmpty else { return [:] }
        return try await read { db in
            var results: [String: [ActionResult]] = [:]
            let statement = try db.cachedStatement(
                sql: """
                    SELECT * FROM action_runs WHERE notification_id = ? AND published = ? AND status <> 'running' ORDER BY idx
                    """)
            for (id, at) in published {
                for row in try Row.fetchAll(statement, arguments: [id, at]) { results[id, default: []].append(Self.actionResult(row)) }
            }
            return results
        }
    }

    static func actionResult(_ row: Row) -> ActionResult {
        ActionResult(
            action: row["idx"], label: row["label"], status: ActionResult.Status(rawValue: row["status"]) ?? .failed,
            httpStatus: row["http_status"], error: row["error"], device: row["device"], at: ISOTime.date(millis: row["at"]))
    }
}
