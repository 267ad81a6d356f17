import Foundation
import Logging
import NottyCore
import NottyService
import PostgresNIO

/// Heartbeats (PROTOCOL.md §16.3) on PostgreSQL: overdue ones claimed with `FOR UPDATE SKIP
/// LOCKED`, so that of several instances looking at once each announces different ones.
extension PostgresStorage {
    public func insertHeartbeat(_ heartbeat: HeartbeatRecord, limit: Int) async throws -> HeartbeatInsertOutcome {
        try await transaction { connection in
            // The owner's row locked: two adds at once count one after the other.
            _ = try await connection.query("SELECT 1 FROM users WHERE id = \(heartbeat.ownerId) FOR UPDATE", logger: self.logger).collect()
            let counted = try await connection.query(
                "SELECT count(*) FROM heartbeats WHERE owner_id = \(heartbeat.ownerId)", logger: self.logger
            ).collect(Int64.self)
            guard (counted.first ?? 0) < Int64(limit) else { return .full }
            let inserted = try await connection.query(
                """
                INSERT INTO heartbeats (id, owner_id, name, token_hash, every, grace, priority, message, created_by, created, last_ping, failed,
                                        due, paused, alerting, claimed_until)
                VALUES (\(heartbeat.id), \(heartbeat.ownerId), \(heartbeat.name), \(heartbeat.tokenHash), \(Int32(heartbeat.every)),
                        \(Int32(heartbeat.grace)), \(heartbeat.priority.rawValue), \(heartbeat.message), \(heartbeat.createdBy),
                        \(ISOTime.millis(heartbeat.created)), \(heartbeat.lastPing.map(ISOTime.millis)), \(heartbeat.failed),
                        \(ISOTime.millis(heartbeat.due)), \(heartbeat.paused), \(heartbeat.alerting), \(heartbeat.claimedUntil.map(ISOTime.millis)))
                ON CONFLICT (owner_id, name) DO NOTHING RETURNING 1
                """, logger: self.logger
            ).collect(Int32.self)
            return inserted.isEmpty ? .nameTaken : .added
        }
    }

    public func heartbeats(ownerId: String) async throws -> [HeartbeatRecord] {
        try await run { connection in try await Self.heartbeatRows(connection, "WHERE owner_id = \(ownerId) ORDER BY name", logger: self.logger) }
    }

    public func heartbeat(tokenHash: String) async throws -> HeartbeatRecord? {
        try await run { connection in try await Self.heartbeatRows(connection, "WHERE token_hash = \(tokenHash)", logger: self.logger).first }
    }

    public func heartbeat(ownerId: String, name: String) async throws -> HeartbeatRecord? {
        try await run { connection in
            try await Self.heartbeatRows(connection, "WHERE owner_id = \(ownerId) AND name = \(name)", logger: self.logger).first
        }
    }

    public func deleteHeartbeat(ownerId: String, name: String) async throws -> HeartbeatRecord? {
        try await transaction { connection in
            guard let found = try await self.lockedHeartbeat(ownerId: ownerId, name: name, connection) else { return nil }
            try await connection.exec("DELETE FROM heartbeats WHERE id = \(found.id)", logger: self.logger)
            return found
        }
    }

    public func pauseHeartbeat(ownerId: String, name: String, paused: Bool, now: Date) async throws -> HeartbeatRecord? {
        try await transaction { connection in
            guard let found = try await self.lockedHeartbeat(ownerId: ownerId, name: name, connection) else { return nil }
            if paused {
                try await connection.exec(
                    "UPDATE heartbeats SET paused = true, alerting = false, claimed_until = NULL WHERE id = \(found.id)", logger: self.logger)
            } else {
                try await connection.exec(
                    "UPDATE heartbeats SET paused = false, due = \(ISOTime.millis(now) + found.window) WHERE id = \(found.id)", logger: self.logger)
            }
            return found
        }
    }

    public func updateHeartbeat(ownerId: String, name: String, every: Int?, grace: Int?, priority: Priority?, message: String?) async throws
        -> HeartbeatRecord?
    {
        try await transaction { connection in
            guard let found = try await self.lockedHeartbeat(ownerId: ownerId, name: name, connection) else { return nil }
            var after = found
            (after.every, after.grace) = (every ?? found.every, grace ?? found.grace)
            let due = ISOTime.millis(found.lastPing ?? found.created) + after.window
            try await connection.exec(
                """
                UPDATE heartbeats SET every = \(Int32(after.every)), grace = \(Int32(after.grace)), priority = \((priority ?? found.priority).rawValue),
                message = \(message ?? found.message), due = \(due) WHERE id = \(found.id)
                """, logger: self.logger)
            return found
        }
    }

    public func pingHeartbeat(id: String, at: Date, failed: Bool, alerting: Bool) async throws -> HeartbeatRecord? {
        try await transaction { connection in
            guard let found = try await Self.heartbeatRows(connection, "WHERE id = \(id) FOR UPDATE", logger: self.logger).first else { return nil }
            let now = ISOTime.millis(at)
            try await connection.exec(
                """
                UPDATE heartbeats SET last_ping = \(now), failed = \(failed), due = \(now + found.window), alerting = \(alerting && !found.paused),
                claimed_until = NULL WHERE id = \(id)
                """, logger: self.logger)
            return found
        }
    }

    public func nextHeartbeatDue() async throws -> Date? {
        let rows: [Int64?] = try await run { connection in
            try await connection.query("SELECT min(due) FROM heartbeats WHERE NOT paused AND NOT alerting", logger: self.logger)
                .collect(Int64?.self)
        }
        return rows.first.flatMap { $0 }.map(ISOTime.date(millis:))
    }

    public func claimOverdueHeartbeats(now: Date, until: Date, limit: Int) async throws -> [HeartbeatRecord] {
        let nowMillis = ISOTime.millis(now), untilMillis = ISOTime.millis(until)
        return try await transaction { connection in
            let claimed = try await Self.heartbeatRows(
                connection,
                """
                WHERE NOT paused AND NOT alerting AND due <= \(nowMillis) AND (claimed_until IS NULL OR claimed_until <= \(nowMillis))
                ORDER BY due LIMIT \(Int64(limit)) FOR UPDATE SKIP LOCKED
                """, logger: self.logger)
            guard !claimed.isEmpty else { return [] }
            try await connection.exec(
                "UPDATE heartbeats SET claimed_until = \(untilMillis) WHERE id = ANY(\(claimed.map(\.id)))", logger: self.logger)
            return claimed.map {
                var claimed = $0
                claimed.claimedUntil = until
                return claimed
            }
        }
    }

    public func heartbeatsAnnounced(ids: [String], claimedUntil: Date) async throws -> [HeartbeatRecord] {
        guard !ids.isEmpty else { return [] }
        return try await transaction { connection in
            try await connection.exec(
                "UPDATE heartbeats SET alerting = true, claimed_until = NULL WHERE id = ANY(\(ids)) AND claimed_until = \(ISOTime.millis(claimedUntil))",
                logger: self.logger)
            return try await Self.heartbeatRows(connection, "WHERE id = ANY(\(ids))", logger: self.logger)
        }
    }

    /// The owner's heartbeat `name`, its row locked for the transaction.
    private func lockedHeartbeat(ownerId: String, name: String, _ connection: PostgresConnection) async throws -> HeartbeatRecord? {
        try await Self.heartbeatRows(connection, "WHERE owner_id = \(ownerId) AND name = \(name) FOR UPDATE", logger: logger).first
    }

    private static func heartbeatRows(_ connection: PostgresConnection, _ condition: PostgresQuery, logger: Logger) async throws -> [HeartbeatRecord]
    {
        var query = PostgresQuery(
            unsafeSQL: "SELECT id, owner_id, name, token_hash, every, grace, priority, message, created_by, created, last_ping, failed, due, paused, "
                + "alerting, claimed_until FROM heartbeats ")
        query.sql += condition.sql
        query.binds = condition.binds
        return try await connection.query(query, logger: logger).collect(
            (String, String, String, String, Int32, Int32, String, String?, String, Int64, Int64?, Bool, Int64, Bool, Bool, Int64?).self
        )
        .map { row in
            HeartbeatRecord(
                id: row.0, ownerId: row.1, name: row.2, tokenHash: row.3, every: Int(row.4), grace: Int(row.5),
                priority: Priority(rawValue: row.6) ?? .high, message: row.7, createdBy: row.8, created: ISOTime.date(millis: row.9),
                lastPing: row.10.map(ISOTime.date(millis:)), failed: row.11, due: ISOTime.date(millis: row.12), paused: row.13, alerting: row.14,
                claimedUntil: row.15.map(ISOTime.date(millis:)))
        }
    }
}
