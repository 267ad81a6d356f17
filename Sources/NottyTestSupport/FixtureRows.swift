import Foundation
import GRDB

/// A row in every table of a store at some schema version, for upgrade tests: each column gets
/// `values["table.column"]`, else `values["column"]`, else — when it refers to another table — that
/// table's fixture id (`TABLE-1`), else — when it is the key — its own, else, when it may not be
/// NULL and has no default, a value of its declared type (text: `table.column`; integer: `time`,
/// a time in milliseconds a day ahead). Tables are filled in the order their references need;
/// `skip` lists tables left alone (the schema's own rows, e.g. `meta`).
public enum FixtureRows {
    @discardableResult
    public static func fill(_ db: Database, values: [String: DatabaseValueConvertible?], skip: Set<String> = [], time: Int64) throws -> [String] {
        // Virtual tables (full-text indexes) and their shadow tables are written by triggers, not rows.
        let virtual = try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table' AND sql LIKE 'CREATE VIRTUAL TABLE%'")
        let tables = try String.fetchAll(
            db,
            sql: """
                SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE 'grdb_%' ORDER BY name
                """
        ).filter { name in
            !skip.contains(name) && !name.contains("_fts") && !name.hasPrefix("search_")
                && !virtual.contains { name == $0 || name.hasPrefix($0 + "_") }
        }
        var references: [String: [(from: String, table: String)]] = [:]
        for table in tables {
            references[table] = try Row.fetchAll(db, sql: "PRAGMA foreign_key_list(\(table))").map { (from: $0["from"], table: $0["table"]) }
        }
        var filled: [String] = []
        var left = tables
        while !left.isEmpty {
            guard
                let next = left.first(where: { table in
                    (references[table] ?? []).allSatisfy { $0.table == table || filled.contains($0.table) || !tables.contains($0.table) }
                })
            else {
                throw FixtureError("the tables' references go round: \(left)")
            }
            left.removeAll { $0 == next }
            var columns: [String] = [], arguments: [DatabaseValueConvertible?] = []
            for column in try Row.fetchAll(db, sql: "PRAGMA table_info(\(next))") {
                let name: String = column["name"]
                let type = (column["type"] as String? ?? "").uppercased()
                let value: DatabaseValueConvertible??
                if let given = values["\(next).\(name)"] ?? values[name] {
                    value = .some(given)
                } else if let reference = references[next]?.first(where: { $0.from == name }) {
                    value = .some("\(reference.table)-1")
                } else if (column["pk"] as Int) > 0 {
                    value = .some(type.contains("INT") ? 1 : "\(next)-1")
                } else if (column["notnull"] as Int) == 1 && (column["dflt_value"] as String?) == nil {
                    value = .some(type.contains("INT") ? time : type.contains("REAL") ? 1.0 : "\(next).\(name)")
                } else {
                    value = nil  // NULL or its default
                }
                if let value {
                    columns.append(name)
                    arguments.append(value)
                }
            }
            try db.execute(
                sql: "INSERT INTO \(next) (\(columns.joined(separator: ", "))) VALUES (\(columns.map { _ in "?" }.joined(separator: ", ")))",
                arguments: StatementArguments(arguments))
            filled.append(next)
        }
        return filled
    }

    public struct FixtureError: Error, CustomStringConvertible {
        public var description: String
        init(_ description: String) { self.description = description }
    }
}
