import Foundation
import GRDB
import NottyCore
import NottyService

/// On call (PROTOCOL.md §13.2): each team's schedule, one JSON document rewritten whole in the
/// writer's one transaction (two owners' overrides at once both stay), and each user's contacts.
extension SQLiteStorage {
    public func onCallSchedule(teamId: String) async throws -> String? {
        try await read { db in try String.fetchOne(db, sql: "SELECT schedule FROM oncall WHERE team_id = ?", arguments: [teamId]) }
    }

    public func onCallSchedules(teamIds: [String]) async throws -> [String: String] {
        guard !teamIds.isEmpty else { return [:] }
        return try await read { db in
            Dictionary(
                try Row.fetchAll(
                    db, sql: "SELECT team_id, schedule FROM oncall WHERE team_id IN (\(databaseQuestionMarks(count: teamIds.count)))",
                    arguments: StatementArguments(teamIds)
                ).map { ($0[0] as String, $0[1] as String) },
                uniquingKeysWith: { first, _ in first })
        }
    }

    public func updateOnCallSchedule(teamId: String, at: Date, _ update: @escaping @Sendable (String?) throws -> String?) async throws {
        try await write { db, _ in
            let old = try String.fetchOne(db, sql: "SELECT schedule FROM oncall WHERE team_id = ?", arguments: [teamId])
            guard let new = try update(old) else { return }
            try db.execute(
                sql: """
                    INSERT INTO oncall (team_id, schedule, updated) VALUES (?, ?, ?)
                    ON CONFLICT (team_id) DO UPDATE SET schedule = excluded.schedule, updated = excluded.updated
                    """, arguments: [teamId, new, ISOTime.millis(at)])
        }
    }

    public func contacts(userId: String) async throws -> [Contact] {
        try await read { db in
            try Row.fetchAll(db, sql: "SELECT id, target, created FROM contacts WHERE user_id = ? ORDER BY created, id", arguments: [userId]).map {
                Contact(id: $0["id"], target: $0["target"], created: ISOTime.date(millis: $0["created"]))
            }
        }
    }

    public func contacts(userNames: [String]) async throws -> [String: [Contact]] {
        guard !userNames.isEmpty else { return [:] }
        return try await read { db in
            var all: [String: [Contact]] = [:]
            for row in try Row.fetchAll(
                db,
                sql: """
                    SELECT u.user_name, c.id, c.target, c.created FROM contacts c JOIN users u ON u.id = c.user_id
                    WHERE u.user_name IN (\(databaseQuestionMarks(count: userNames.count))) ORDER BY c.created, c.id
                    """, arguments: StatementArguments(userNames))
            {
                all[row["user_name"], default: []].append(
                    Contact(id: row["id"], target: row["target"], created: ISOTime.date(millis: row["created"])))
            }
            return all
        }
    }

    public func insertContact(_ contact: Contact, userId: String, limit: Int) async throws -> Bool {
        try await write { db, _ in
            let count = try Int.fetchOne(db, sql: "SELECT count(*) FROM contacts WHERE user_id = ?", arguments: [userId]) ?? 0
            guard count < limit else { return false }
            try db.execute(
                sql: "INSERT INTO contacts (id, user_id, target, created) VALUES (?, ?, ?, ?)",
                arguments: [contact.id, userId, contact.target, ISOTime.millis(contact.created)])
            return true
        }
    }

    public func deleteContact(id: String, userId: String) async throws -> Bool {
        try await write { db, _ in
            try db.execute(sql: "DELETE FROM contacts WHERE id = ? AND user_id = ?", arguments: [id, userId])
            return db.changesCount > 0
        }
    }
}
