import CSQLiteConfig
import GRDB

/// Statements that keep their plan whatever values are bound to them.
///
/// SQLite chooses some plans by looking at bound values: a `LIKE ?` pattern (whether it has a
/// fixed prefix) and a `column = ?` that a partial index's `WHERE` names. A statement planned
/// that way is prepared again, parsed and planned anew, each time a value is bound to that
/// parameter, which is every time GRDB runs a cached statement. notty's searches start with
/// `%` (no prefix to use) and its views write their bucket into the SQL, so the plans would be
/// the same anyway: the query planner stability guarantee turns the re-preparing off.
public enum QueryPlans {
    /// Turns the guarantee on for `db` (from `Configuration.prepareDatabase`).
    public static func keep(_ db: Database) throws {
        let code = notty_sqlite3_keep_plans(db.sqliteConnection)
        guard code == SQLITE_OK else {
            throw DatabaseError(resultCode: ResultCode(rawValue: code), message: "SQLite refused the query planner stability guarantee")
        }
    }
}
