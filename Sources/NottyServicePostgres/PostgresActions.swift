import Foundation
import NottyCore
import NottyService
import PostgresNIO

/// Runs of actions (PROTOCOL.md §12): a row per action of a notification, its latest run. Two
/// instances pressing at once meet on the row: the second insert waits for the first's
/// commit, then finds a run in flight and answers it.
extension PostgresStorage {
    static let actionRunColumns = "idx, label, status, http_status, error, device, at"
    typealias ActionRunRow = (Int, String, String, Int?, String?, String?, Int64)

    public func claimActionRun(_ claim: ActionClaim) async throws -> ActionResult? {
        let (at, lease) = (ISOTime.millis(claim.at), ISOTime.millis(claim.leaseUntil))
        return try await transaction { connection in
            let claimed =
                try await connection.query(
                    """
                    INSERT INTO action_runs (notification_id, idx, user_id, published, label, status, device, at, lease_until)
                    VALUES (\(claim.notificationId), \(claim.index), \(claim.userId), \(claim.published), \(claim.label), 'running', \(claim.device), \(at), \(lease))
                    ON CONFLICT (notification_id, idx) DO UPDATE SET
                        published = excluded.published, label = excluded.label, status = 'running', http_status = NULL, error = NULL,
                        device = excluded.device, at = excluded.at, lease_until = excluded.lease_until
                    WHERE action_runs.published <> excluded.published OR action_runs.status = 'failed'
                        OR (action_runs.status = 'running' AND action_runs.lease_until <= excluded.at)
                    RETURNING 1
                    """, logger: self.logger
                ).collect().count == 1
            if claimed { return nil }
            return try await connection.query(
                """
                SELECT \(unescaped: Self.actionRunColumns) FROM action_runs WHERE notification_id = \(claim.notificationId) AND idx = \(claim.index)
                """, logger: self.logger
            ).collect(ActionRunRow.self).first.map(Self.actionResult)
        }
    }

    public func finishActionRun(_ claim: ActionClaim, result: ActionResult) async throws {
        try await feedWrite(users: [claim.userId], positions: 1) { connection, context in
            let updated =
                try await connection.query(
                    """
                    UPDATE action_runs SET status = \(result.status.rawValue), http_status = \(result.httpStatus), error = \(result.error),
                        at = \(ISOTime.millis(result.at)), lease_until = 0
                    WHERE notification_id = \(claim.notificationId) AND idx = \(claim.index) AND published = \(claim.published) RETURNING 1
                    """, logger: self.logger
                ).collect().count == 1
            guard updated,
                var row = try await self.fetchStored(
                    connection,
                    "SELECT \(unescaped: Self.columns) FROM notifications WHERE id = \(claim.notificationId) AND user_id = \(claim.userId)"
                ).first, row.notification.status == .active
            else { return }
            // It moves in the feed (every device shows the outcome); only its position changes.
            row.seq = context.nextSeq(for: claim.userId)
            try await self.save([row], connection)
        }
    }

    public func actionResults(userId: String, published: [String: Int64]) async throws -> [String: [ActionResult]] {
        guard !published.isEmpty else { return [:] }
        let ids = Array(published.keys)
        return try await run { connection in
            var results: [String: [ActionResult]] = [:]
            for row in try await connection.query(
                """
                SELECT notification_id, published, \(unescaped: Self.actionRunColumns) FROM action_runs
                WHERE notification_id = ANY(\(ids)) AND status <> 'running' ORDER BY idx
                """, logger: self.logger
            ).collect((String, Int64, Int, String, String, Int?, String?, String?, Int64).self)
            where published[row.0] == row.1 {
                results[row.0, default: []].append(Self.actionResult((row.2, row.3, row.4, row.5, row.6, row.7, row.8)))
            }
            return results
        }
    }

    static func actionResult(_ row: ActionRunRow) -> ActionResult {
        ActionResult(
            action: row.0, label: row.1, status: ActionResult.Status(rawValue: row.2) ?? .failed, httpStatus: row.3, error: row.4,
            device: row.5, at: ISOTime.date(millis: row.6))
    }
}
