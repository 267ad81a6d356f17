import Foundation
import Logging
import NottyCore
import NottyService
import PostgresNIO

/// The user's preferences (PROTOCOL.md §9) on PostgreSQL: a write locks the user's feed and takes
/// positions from the shared sequence, as a notification's change does.
extension PostgresStorage {
    public func preferences(userId: String) async throws -> [PreferenceEntry] {
        try await run { connection in try await self.preferences(connection, userId: userId) }
    }

    /// A team's preference as its members see it (PROTOCOL.md §16.4), and the rows of their
    /// teams' (`m`, `t`, `p`).
    static let teamKey = "'\(Interruptions.teamPrefix)' || t.name || '.' || p.key"
    static let teamRows = "FROM team_members m JOIN teams t ON t.id = m.team_id JOIN preferences p ON p.user_id = m.team_id"

    /// Every preference of the user, by key (their teams' mutes as `team.<name>.<key>`), on `connection`.
    func preferences(_ connection: PostgresConnection, userId: String) async throws -> [PreferenceEntry] {
        try await connection.query(
            """
            SELECT key, value, changed_at FROM preferences WHERE user_id = \(userId)
            UNION ALL SELECT \(unescaped: Self.teamKey), p.value, p.changed_at \(unescaped: Self.teamRows) WHERE m.user_id = \(userId)
            ORDER BY 1
            """, logger: logger
        )
        .collect((String, String, Int64).self)
        .map { PreferenceRules.entry(key: $0.0, value: $0.1, changedAt: $0.2) }
    }

    public func setPreferences(userId: String, _ entries: [PreferenceEntry]) async throws -> [PreferenceEntry] {
        try await groupedFeedWrite(user: userId, positions: entries.count) { connection, context in
            let keys = entries.map(\.key)
            var stored: [String: (value: String, changedAt: Int64)] = [:]
            for (key, value, changedAt) in try await connection.query(
                "SELECT key, value, changed_at FROM preferences WHERE user_id = \(userId) AND key = ANY(\(keys)) FOR UPDATE", logger: self.logger
            ).collect((String, String, Int64).self) {
                stored[key] = (value, changedAt)
            }
            for entry in entries {
                let value = entry.value.jsonText, changedAt = ISOTime.millis(entry.changedAt)
                guard PreferenceRules.applies(value: value, changedAt: changedAt, over: stored[entry.key]) else { continue }
                stored[entry.key] = (value, changedAt)
                let seq = context.nextSeq(for: userId)
                try await connection.exec(
                    """
                    INSERT INTO preferences (user_id, key, value, changed_at, seq) VALUES (\(userId), \(entry.key), \(value), \(changedAt), \(seq))
                    ON CONFLICT (user_id, key) DO UPDATE SET value = excluded.value, changed_at = excluded.changed_at, seq = excluded.seq
                    """, logger: self.logger)
            }
            return try await self.preferences(connection, userId: userId)
        }
    }

    /// The preferences changed after `since` and at most at `through` (nil: all after `since`),
    /// in the feed's order, with the newest position among them.
    func preferencesChanged(_ connection: PostgresConnection, userId: String, since: Int64, through: Int64?) async throws -> (
        entries: [PreferenceEntry], lastSeq: Int64?
    ) {
        let rows = try await connection.query(
            """
            SELECT key, value, changed_at, seq FROM preferences WHERE user_id = \(userId) AND seq > \(since) AND seq <= \(through ?? Int64.max)
            UNION ALL SELECT \(unescaped: Self.teamKey), p.value, p.changed_at, p.seq \(unescaped: Self.teamRows)
            WHERE m.user_id = \(userId) AND p.seq > \(since) AND p.seq <= \(through ?? Int64.max)
            ORDER BY 4
            """, logger: logger
        ).collect((String, String, Int64, Int64).self)
        return (rows.map { PreferenceRules.entry(key: $0.0, value: $0.1, changedAt: $0.2) }, rows.last?.3)
    }
}
