import Foundation
import GRDB
import NottyCore
import NottyService

/// The user's preferences (PROTOCOL.md §9): one row per key, each write a position in the feed.
extension SQLiteStorage {
    public func preferences(userId: String) async throws -> [PreferenceEntry] {
        try await read { db in try Self.preferences(db, userId: userId) }
    }

    public func setPreferences(userId: String, _ entries: [PreferenceEntry]) async throws -> [PreferenceEntry] {
        try await write { db, context in
            for entry in entries {
                let value = entry.value.jsonText, changedAt = ISOTime.millis(entry.changedAt)
                let stored = try Row.fetchOne(
                    db.cachedStatement(sql: "SELECT value, changed_at FROM preferences WHERE user_id = ? AND key = ?"),
                    arguments: [userId, entry.key]
                ).map { (value: $0[0] as String, changedAt: $0[1] as Int64) }
                guard PreferenceRules.applies(value: value, changedAt: changedAt, over: stored) else { continue }
                try db.cachedStatement(
                    sql: """
                        INSERT INTO preferences (user_id, key, value, changed_at, seq) VALUES (?, ?, ?, ?, ?)
                        ON CONFLICT (user_id, key) DO UPDATE SET value = excluded.value, changed_at = excluded.changed_at, seq = excluded.seq
                        """
                ).execute(arguments: [userId, entry.key, value, changedAt, context.nextSeq(for: userId)])
            }
            return try Self.preferences(db, userId: userId)
        }
    }

    /// Every preference of the user, by key, with their teams' mutes as `team.<name>.<key>`
    /// (PROTOCOL.md §16.4).
    static func preferences(_ db: Database, userId: String) throws -> [PreferenceEntry] {
        try Row.fetchAll(
            db.cachedStatement(
                sql: """
                    SELECT key, value, changed_at FROM preferences WHERE user_id = ?1
                    UNION ALL SELECT \(teamKey), p.value, p.changed_at \(teamRows) WHERE m.user_id = ?1
                    ORDER BY 1
                    """), arguments: [userId]
        )
        .map { PreferenceRules.entry(key: $0[0], value: $0[1], changedAt: $0[2]) }
    }

    /// A team's preference as its members see it, and the rows of their teams' (`m`, `t`, `p`).
    static let teamKey = "'\(Interruptions.teamPrefix)' || t.name || '.' || p.key"
    static let teamRows = "FROM team_members m JOIN teams t ON t.id = m.team_id JOIN preferences p ON p.user_id = m.team_id"

    /// The preferences changed after `since` and at most at `through` (nil: all after `since`),
    /// their teams' too, in the feed's order, with the newest position among them.
    static func preferencesChanged(_ db: Database, userId: String, since: Int64, through: Int64?) throws -> (
        entries: [PreferenceEntry], lastSeq: Int64?
    ) {
        let rows = try Row.fetchAll(
            db.cachedStatement(
                sql: """
                    SELECT key, value, changed_at, seq FROM preferences WHERE user_id = ?1 AND seq > ?2 AND seq <= ?3
                    UNION ALL SELECT \(teamKey), p.value, p.changed_at, p.seq \(teamRows) WHERE m.user_id = ?1 AND p.seq > ?2 AND p.seq <= ?3
                    ORDER BY 4
                    """),
            arguments: [userId, since, through ?? Int64.max])
        return (rows.map { PreferenceRules.entry(key: $0[0], value: $0[1], changedAt: $0[2]) }, rows.last.map { $0[3] as Int64 })
    }
}
