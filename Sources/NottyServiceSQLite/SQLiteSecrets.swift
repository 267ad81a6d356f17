import Foundation
import GRDB
import NottySecrets
import NottyService

/// The secret keys' records and the sweep that seals stored secrets anew.
extension SQLiteStorage {
    public func secretKeyRecord(_ name: String) async throws -> String? {
        try await read { db in try String.fetchOne(db, sql: "SELECT value FROM secret_keys WHERE name = ?", arguments: [name]) }
    }

    public func setSecretKeyRecord(_ name: String, value: String?) async throws {
        try await write { db, _ in
            if let value {
                try db.execute(
                    sql: "INSERT INTO secret_keys (name, value) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value",
                    arguments: [name, value])
            } else {
                try db.execute(sql: "DELETE FROM secret_keys WHERE name = ?", arguments: [name])
            }
        }
    }

    public func resealSecrets(
        _ column: SecretColumn, after position: String?, limit: Int,
        _ reseal: @escaping @Sendable (String) -> String?
    ) async throws -> (position: String?, written: Int) {
        let (table, name) = column.place
        let start = position.flatMap { Int64($0) } ?? 0
        let rows = try await read { db in
            try Row.fetchAll(
                db, sql: "SELECT rowid, \(name) FROM \(table) WHERE rowid > ? AND \(name) IS NOT NULL ORDER BY rowid LIMIT ?",
                arguments: [start, limit]
            ).map { (rowid: $0[0] as Int64, value: $0[1] as String) }
        }
        let changes = rows.compactMap { row in reseal(row.value).map { (row.rowid, row.value, $0) } }
        let written =
            changes.isEmpty
            ? 0
            : try await write { db, _ in
                var count = 0
                let update = try db.cachedStatement(sql: "UPDATE \(table) SET \(name) = ? WHERE rowid = ? AND \(name) = ?")
                for (rowid, old, new) in changes {
                    try update.execute(arguments: [new, rowid, old])  // unless it changed meanwhile
                    count += db.changesCount
                }
                return count
            }
        return (rows.count < limit ? nil : rows.last.map { String($0.rowid) }, written)
    }
}
