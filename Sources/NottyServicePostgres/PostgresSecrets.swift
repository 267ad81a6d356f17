import Foundation
import NottySecrets
import NottyService
import PostgresNIO

/// The secret keys' records and the sweep that seals stored secrets anew, on PostgreSQL. The
/// sweep walks a table by `ctid` (its rows' place) and writes a row only if its value is still
/// the one read, so that what an instance writes meanwhile is never overwritten.
extension PostgresStorage {
    public func secretKeyRecord(_ name: String) async throws -> String? {
        try await run { connection in
            try await connection.query("SELECT value FROM secret_keys WHERE name = \(name)", logger: self.logger).collect(String.self).first
        }
    }

    public func setSecretKeyRecord(_ name: String, value: String?) async throws {
        try await run { connection in
            if let value {
                try await connection.exec(
                    "INSERT INTO secret_keys (name, value) VALUES (\(name), \(value)) ON CONFLICT (name) DO UPDATE SET value = excluded.value",
                    logger: self.logger)
            } else {
                try await connection.exec("DELETE FROM secret_keys WHERE name = \(name)", logger: self.logger)
            }
        }
    }

    public func resealSecrets(
        _ column: SecretColumn, after position: String?, limit: Int,
        _ reseal: @escaping @Sendable (String) -> String?
    ) async throws -> (position: String?, written: Int) {
        let (table, name) = column.place
        let start = position ?? "(0,0)"
        let rows: [(String, String)] = try await run { connection in
            try await connection.query(
                """
                SELECT ctid::text, \(unescaped: name) FROM \(unescaped: table)
                WHERE ctid > \(start)::tid AND \(unescaped: name) IS NOT NULL ORDER BY ctid LIMIT \(Int64(limit))
                """, logger: self.logger
            ).collect((String, String).self)
        }
        let changes = rows.compactMap { row in reseal(row.1).map { (row.0, row.1, $0) } }
        var written = 0
        if !changes.isEmpty {
            written = try await transaction { connection in
                var count = 0
                for (place, old, new) in changes {
                    let updated = try await connection.query(
                        """
                        UPDATE \(unescaped: table) SET \(unescaped: name) = \(new) WHERE ctid = \(place)::tid AND \(unescaped: name) = \(old) RETURNING 1
                        """, logger: self.logger
                    ).collect(Int32.self)
                    count += updated.count
                }
                return count
            }
        }
        return (rows.count < limit ? nil : rows.last?.0, written)
    }
}
