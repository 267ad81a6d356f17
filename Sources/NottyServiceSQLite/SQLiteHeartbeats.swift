import Foundation
import GRDB
import NottyCore
import NottyService

/// The heartbeats table (PROTOCOL.md §16.3); `due` is indexed where a heartbeat may go late
/// (not paused, nothing out), so the job's look each tick reads only what is overdue.
enum SQLiteHeartbeatSchema {
    static let create = """
        CREATE TABLE heartbeats (
            id TEXT PRIMARY KEY,
            owner_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
            name TEXT NOT NULL,
            token_hash TEXT NOT NULL UNIQUE,
            every INTEGER NOT NULL,
            grace INTEGER NOT NULL,
            priority TEXT NOT NULL,
            message TEXT,
            created_by TEXT NOT NULL,
            created INTEGER NOT NULL,
            last_ping INTEGER,
            failed INTEGER NOT NULL DEFAULT 0,
            due INTEGER NOT NULL,
            paused INTEGER NOT NULL DEFAULT 0,
            alerting INTEGER NOT NULL DEFAULT 0,
            claimed_until INTEGER,
            UNIQUE (owner_id, name)
        );
        CREATE INDEX heartbeats_due ON heartbeats (due) WHERE paused = 0 AND alerting = 0;
        """
}

extension SQLiteStorage {
    public func insertHeartbeat(_ heartbeat: HeartbeatRecord, limit: Int) async throws -> HeartbeatInsertOutcome {
        try await write { db, _ in
            let count = try Int.fetchOne(db, sql: "SELECT count(*) FROM heartbeats WHERE owner_id = ?", arguments: [heartbeat.ownerId]) ?? 0
            guard count < limit else { return .full }
            guard try Self.heartbeatRows(db, "WHERE owner_id = ? AND name = ?", [heartbeat.ownerId, heartbeat.name]).isEmpty else {
                return .nameTaken
            }
            try db.execute(
                sql: """
                    INSERT INTO heartbeats (id, owner_id, name, token_hash, every, grace, priority, message, created_by, created, last_ping, failed,
                                            due, paused, alerting, claimed_until)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    heartbeat.id, heartbeat.ownerId, heartbeat.name, heartbeat.tokenHash, heartbeat.every, heartbeat.grace,
                    heartbeat.priority.rawValue, heartbeat.message, heartbeat.createdBy, ISOTime.millis(heartbeat.created),
                    heartbeat.lastPing.map(ISOTime.millis), heartbeat.failed, ISOTime.millis(heartbeat.due), heartbeat.paused, heartbeat.alerting,
                    heartbeat.claimedUntil.map(ISOTime.millis),
                ])
            return .added
        }
    }

    public func heartbeats(ownerId: String) async throws -> [HeartbeatRecord] {
        try await read { db in try Self.heartbeatRows(db, "WHERE owner_id = ? ORDER BY name", [ownerId]) }
    }

    public func heartbeat(tokenHash: String) async throws -> HeartbeatRecord? {
        try await read { db in try Self.heartbeatRows(db, "WHERE token_hash = ?", [tokenHash]).first }
    }

    public func heartbeat(ownerId: String, name: String) async throws -> HeartbeatRecord? {
        try await read { db in try Self.heartbeatRows(db, "WHERE owner_id = ? AND name = ?", [ownerId, name]).first }
    }

    public func deleteHeartbeat(ownerId: String, name: String) async throws -> HeartbeatRecord? {
        try await write { db, _ in
            guard let found = try Self.heartbeatRows(db, "WHERE owner_id = ? AND name = ?", [ownerId, name]).first else { return nil }
            try db.execute(sql: "DELETE FROM heartbeats WHERE id = ?", arguments: [found.id])
            return found
        }
    }

    public func pauseHeartbeat(ownerId: String, name: String, paused: Bool, now: Date) async throws -> HeartbeatRecord? {
        try await write { db, _ in
            guard let found = try Self.heartbeatRows(db, "WHERE owner_id = ? AND name = ?", [ownerId, name]).first else { return nil }
            if paused {
                try db.execute(sql: "UPDATE heartbeats SET paused = 1, alerting = 0, claimed_until = NULL WHERE id = ?", arguments: [found.id])
            } else {
                try db.execute(
                    sql: "UPDATE heartbeats SET paused = 0, due = ? WHERE id = ?", arguments: [ISOTime.millis(now) + found.window, found.id])
            }
            return found
        }
    }

    public func updateHeartbeat(ownerId: String, name: String, every: Int?, grace: Int?, priority: Priority?, message: String?) async throws
        -> HeartbeatRecord?
    {
        try await write { db, _ in
            guard let found = try Self.heartbeatRows(db, "WHERE owner_id = ? AND name = ?", [ownerId, name]).first else { return nil }
            var after = found
            (after.every, after.grace) = (every ?? found.every, grace ?? found.grace)
            let due = ISOTime.millis(found.lastPing ?? found.created) + after.window
            try db.execute(
                sql: "UPDATE heartbeats SET every = ?, grace = ?, priority = ?, message = ?, due = ? WHERE id = ?",
                arguments: [after.every, after.grace, (priority ?? found.priority).rawValue, message ?? found.message, due, found.id])
            return found
        }
    }

    public func pingHeartbeat(id: String, at: Date, failed: Bool, alerting: Bool) async throws -> HeartbeatRecord? {
        try await write { db, _ in
            guard let found = try Self.heartbeatRows(db, "WHERE id = ?", [id]).first else { return nil }
            let now = ISOTime.millis(at)
            try db.execute(
                sql: "UPDATE heartbeats SET last_ping = ?, failed = ?, due = ?, alerting = ?, claimed_until = NULL WHERE id = ?",
                arguments: [now, failed, now + found.window, alerting && !found.paused, id])
            return found
        }
    }

    public func nextHeartbeatDue() async throws -> Date? {
        try await read { db in
            try Int64.fetchOne(db, sql: "SELECT min(due) FROM heartbeats WHERE paused = 0 AND alerting = 0").map(ISOTime.date(millis:))
        }
    }

    public func claimOverdueHeartbeats(now: Date, until: Date, limit: Int) async throws -> [HeartbeatRecord] {
        try await write { db, _ in
            let claimed = try Self.heartbeatRows(
                db,
                """
                WHERE paused = 0 AND alerting = 0 AND due <= ? AND (claimed_until IS NULL OR claimed_until <= ?)
                ORDER BY due LIMIT ?
                """, [ISOTime.millis(now), ISOTime.millis(now), limit])
            for heartbeat in claimed {
                try db.execute(sql: "UPDATE heartbeats SET claimed_until = ? WHERE id = ?", arguments: [ISOTime.millis(until), heartbeat.id])
            }
            return claimed.map {
                var claimed = $0; claimed.claimedUntil = until; return claimed
            }
        }
    }

    public func heartbeatsAnnounced(ids: [String], claimedUntil: Date) async throws -> [HeartbeatRecord] {
        guard !ids.isEmpty else { return [] }
        return try await write { db, _ in
            let marks = databaseQuestionMarks(count: ids.count)
            try db.execute(
                sql: "UPDATE heartbeats SET alerting = 1, claimed_until = NULL WHERE id IN (\(marks)) AND claimed_until = ?",
                arguments: StatementArguments(ids) + StatementArguments([ISOTime.millis(claimedUntil)]))
            return try Self.heartbeatRows(db, "WHERE id IN (\(marks))", StatementArguments(ids))
        }
    }

    static func heartbeatRows(_ db: Database, _ clause: String, _ arguments: StatementArguments) throws -> [HeartbeatRecord] {
        try Row.fetchAll(db, sql: "SELECT * FROM heartbeats \(clause)", arguments: arguments).map { row in
            HeartbeatRecord(
                id: row["id"], ownerId: row["owner_id"], name: row["name"], tokenHash: row["token_hash"], every: row["every"], grace: row["grace"],
                priority: Priority(rawValue: row["priority"]) ?? .high, message: row["message"], createdBy: row["created_by"],
                created: ISOTime.date(millis: row["created"]), lastPing: (row["last_ping"] as Int64?).map(ISOTime.date(millis:)),
                failed: row["failed"], due: ISOTime.date(millis: row["due"]), paused: row["paused"], alerting: row["alerting"],
                claimedUntil: (row["claimed_until"] as Int64?).map(ISOTime.date(millis:)))
        }
    }
}
