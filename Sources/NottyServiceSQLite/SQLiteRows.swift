import Foundation
import GRDB
import NottyCore
import NottyRecords
import NottyService
import NottyStorageSupport

/// The row adapter: what the shared mutation logic (`MutationApplier`) and the shared column
/// mapping (`NotificationColumns`) need of a GRDB connection and row.
extension SQLiteStorage {
    struct SQLiteRowStore: MutationRowStore {
        let db: Database

        func row(id: String, userId: String) throws -> StoredNotification? {
            try SQLiteStorage.fetchStored(db, sql: SQLiteStorage.byIdSQL, [id, userId])
        }

        func save(_ row: StoredNotification) throws {
            try SQLiteStorage.save(row, db)
        }

        func priorMutation(userId: String, mutationId: String) throws -> Int? {
            try Int.fetchOne(
                db.cachedStatement(sql: "SELECT status FROM mutations WHERE user_id = ? AND mutation_id = ?"), arguments: [userId, mutationId])
        }

        func recordMutation(userId: String, mutationId: String, notificationId: String, status: Int, now: Date) throws {
            try db.cachedStatement(
                sql: "INSERT OR IGNORE INTO mutations (user_id, mutation_id, notification_id, status, created) VALUES (?, ?, ?, ?, ?)"
            )
            .execute(arguments: [userId, mutationId, notificationId, status, ISOTime.millis(now)])
        }
    }
}

/// A GRDB row read by position.
struct SQLiteColumns: ColumnReader {
    let row: Row
    func text(_ index: Int) -> String { row[index] }
    func optionalText(_ index: Int) -> String? { row[index] }
    func integer(_ index: Int) -> Int64 { row[index] }
    func optionalInteger(_ index: Int) -> Int64? { row[index] }
    func flag(_ index: Int) -> Bool { row[index] }
}

/// A row's values as GRDB binds them.
struct SQLiteValues: ColumnWriter {
    var values: [(any DatabaseValueConvertible)?] = []
    mutating func text(_ value: String?) { values.append(value) }
    mutating func integer(_ value: Int64?) { values.append(value) }
    mutating func flag(_ value: Bool) { values.append(value) }
}
