import Foundation
import NottyCore
import NottyService
import PostgresNIO

/// On call (PROTOCOL.md §13.2) on PostgreSQL: a team's schedule is rewritten under a lock of its
/// row (two owners' overrides at once, from any instances, both stay); each user's contacts.
extension PostgresStorage {
    public func onCallSchedule(teamId: String) async throws -> String? {
        try await run { connection in
            try await connection.query("SELECT schedule FROM oncall WHERE team_id = \(teamId)", logger: self.logger).collect(String.self).first
        }
    }

    public func onCallSchedules(teamIds: [String]) async throws -> [String: String] {
        guard !teamIds.isEmpty else { return [:] }
        return try await run { connection in
            Dictionary(
                try await connection.query("SELECT team_id, schedule FROM oncall WHERE team_id = ANY(\(teamIds))", logger: self.logger)
                    .collect((String, String).self),
                uniquingKeysWith: { first, _ in first })
        }
    }

    public func updateOnCallSchedule(teamId: String, at: Date, _ update: @escaping @Sendable (String?) throws -> String?) async throws {
        try await transaction { connection in
            // The team's row is the lock: a schedule not yet made has no row of its own to lock.
            _ = try await connection.query("SELECT 1 FROM teams WHERE id = \(teamId) FOR UPDATE", logger: self.logger).collect()
            let old = try await connection.query("SELECT schedule FROM oncall WHERE team_id = \(teamId)", logger: self.logger)
                .collect(String.self).first
            guard let new = try update(old) else { return }
            try await connection.exec(
                """
                INSERT INTO oncall (team_id, schedule, updated) VALUES (\(teamId), \(new), \(ISOTime.millis(at)))
                ON CONFLICT (team_id) DO UPDATE SET schedule = excluded.schedule, updated = excluded.updated
                """, logger: self.logger)
        }
    }

    public func contacts(userId: String) async throws -> [Contact] {
        try await run { connection in
            try await connection.query(
                "SELECT id, target, created FROM contacts WHERE user_id = \(userId) ORDER BY created, id", logger: self.logger
            ).collect((String, String, Int64).self).map { Contact(id: $0.0, target: $0.1, created: ISOTime.date(millis: $0.2)) }
        }
    }

    public func contacts(userNames: [String]) async throws -> [String: [Contact]] {
        guard !userNames.isEmpty else { return [:] }
        return try await run { connection in
            var all: [String: [Contact]] = [:]
            for row in try await connection.query(
                """
                SELECT u.user_name, c.id, c.target, c.created FROM contacts c JOIN users u ON u.id = c.user_id
                WHERE u.user_name = ANY(\(userNames)) ORDER BY c.created, c.id
                """,
                logger: self.logger
            ).collect((String, String, String, Int64).self) {
                all[row.0, default: []].append(Contact(id: row.1, target: row.2, created: ISOTime.date(millis: row.3)))
            }
            return all
        }
    }

    public func insertContact(_ contact: Contact, userId: String, limit: Int) async throws -> Bool {
        try await transaction { connection in
            _ = try await connection.query("SELECT 1 FROM users WHERE id = \(userId) FOR UPDATE", logger: self.logger).collect()
            let counted: [Int64] = try await connection.query("SELECT count(*) FROM contacts WHERE user_id = \(userId)", logger: self.logger)
                .collect(Int64.self)
            let count = counted.first ?? 0
            guard count < Int64(limit) else { return false }
            try await connection.exec(
                """
                INSERT INTO contacts (id, user_id, target, created)
                VALUES (\(contact.id), \(userId), \(contact.target), \(ISOTime.millis(contact.created)))
                """, logger: self.logger)
            return true
        }
    }

    public func deleteContact(id: String, userId: String) async throws -> Bool {
        try await run { connection in
            !(try await connection.query("DELETE FROM contacts WHERE id = \(id) AND user_id = \(userId) RETURNING 1", logger: self.logger)
                .collect(Int32.self).isEmpty)
        }
    }
}
