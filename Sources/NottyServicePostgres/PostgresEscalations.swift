import Foundation
import Logging
import NottyCore
import NottyService
import PostgresNIO

/// The user's escalation rules (SPEC §11) on PostgreSQL: a row each, its targets as a JSON
/// array. A new rule locks the user's row, so that two instances adding at once keep the limit.
extension PostgresStorage {
    static let escalationColumns = "id, name, after_seconds, repeat_seconds, targets, priority, app, group_name, created"
    typealias EscalationRow = (String, String, Int64, Int64?, String, String, String?, String?, Int64)

    public func escalationRules(userId: String) async throws -> [EscalationRule] {
        try await run { connection in
            try await connection.query(
                "SELECT \(unescaped: Self.escalationColumns) FROM escalation_rules WHERE user_id = \(userId) ORDER BY created, id", logger: self.logger
            ).collect(EscalationRow.self).map(Self.escalationRule)
        }
    }

    public func insertEscalationRule(_ rule: EscalationRule, userId: String, limit: Int) async throws -> Bool {
        let targets = JSONValue.array(rule.targets.map(JSONValue.string)).jsonText
        return try await transaction { connection in
            _ = try await connection.query("SELECT 1 FROM users WHERE id = \(userId) FOR UPDATE", logger: self.logger).collect()
            let counted: [Int64] = try await connection.query("SELECT count(*) FROM escalation_rules WHERE user_id = \(userId)", logger: self.logger)
                .collect(Int64.self)
            guard (counted.first ?? 0) < Int64(limit) else { return false }
            let inserted = try await connection.query("""
                INSERT INTO escalation_rules (id, user_id, name, after_seconds, repeat_seconds, targets, priority, app, group_name, created)
                VALUES (\(rule.id), \(userId), \(rule.name), \(Int64(rule.afterSeconds)), \(rule.repeatSeconds.map(Int64.init)), \(targets),
                        \(rule.priority), \(rule.app), \(rule.group), \(ISOTime.millis(rule.createdDateTime)))
                ON CONFLICT (user_id, name) DO NOTHING RETURNING id
                """, logger: self.logger).collect(String.self)
            return !inserted.isEmpty
        }
    }

    public func deleteEscalationRule(id: String, userId: String) async throws -> Bool {
        try await run { connection in
            try await !connection.query("DELETE FROM escalation_rules WHERE id = \(id) AND user_id = \(userId) RETURNING id", logger: self.logger)
                .collect(String.self).isEmpty
        }
    }

    static func escalationRule(_ r: EscalationRow) -> EscalationRule {
        let targets: [String]
        if case .array(let items)? = JSONParser.parse(Data(r.4.utf8)) {
            targets = items.compactMap { if case .string(let text) = $0 { text } else { nil } }
        } else {
            targets = []
        }
        return EscalationRule(id: r.0, name: r.1, afterSeconds: Int(r.2), repeatSeconds: r.3.map(Int.init), targets: targets, priority: r.5,
                              app: r.6, group: r.7, createdDateTime: ISOTime.date(millis: r.8))
    }
}
