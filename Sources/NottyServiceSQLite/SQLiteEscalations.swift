import Foundation
import GRDB
import NottyCore
import NottyService

/// The user's escalation rules (SPEC §11): a row each, its targets as a JSON array.
extension SQLiteStorage {
    public func escalationRules(userId: String) async throws -> [EscalationRule] {
        try await read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM escalation_rules WHERE user_id = ? ORDER BY created, id", arguments: [userId]).map(Self.escalationRule)
        }
    }

    public func insertEscalationRule(_ rule: EscalationRule, userId: String, limit: Int) async throws -> Bool {
        try await write { db, _ in
            let count = try Int.fetchOne(db, sql: "SELECT count(*) FROM escalation_rules WHERE user_id = ?", arguments: [userId]) ?? 0
            guard count < limit else { return false }
            try db.execute(
                sql: """
                    INSERT INTO escalation_rules (id, user_id, name, after_seconds, repeat_seconds, targets, priority, app, group_name, created)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (user_id, name) DO NOTHING
                    """,
                arguments: [rule.id, userId, rule.name, rule.afterSeconds, rule.repeatSeconds, JSONValue.array(rule.targets.map(JSONValue.string)).jsonText,
                            rule.priority, rule.app, rule.group, ISOTime.millis(rule.createdDateTime)])
            return db.changesCount == 1
        }
    }

    public func deleteEscalationRule(id: String, userId: String) async throws -> Bool {
        try await write { db, _ in
            try db.execute(sql: "DELETE FROM escalation_rules WHERE id = ? AND user_id = ?", arguments: [id, userId])
            return db.changesCount == 1
        }
    }

    static func escalationRule(_ row: Row) -> EscalationRule {
        let targets: [String]
        if case .array(let items)? = JSONParser.parse(Data((row["targets"] as String).utf8)) {
            targets = items.compactMap { if case .string(let text) = $0 { text } else { nil } }
        } else {
            targets = []
        }
        return EscalationRule(id: row["id"], name: row["name"], afterSeconds: row["after_seconds"], repeatSeconds: row["repeat_seconds"],
                              targets: targets, priority: row["priority"], app: row["app"], group: row["group_name"],
                              createdDateTime: ISOTime.date(millis: row["created"]))
    }
}
