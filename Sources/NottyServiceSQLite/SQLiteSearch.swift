import Foundation
import GRDB
import NottyCore
import NottySQLite
import NottyService
import NottyStorageSupport

/// The full-text index of a SQLite store's notifications (PROTOCOL.md §17): `notification_words`,
/// a contentless FTS5 table of each row's folded words and keys in one column
/// (``SearchIndexTerms/document(title:body:app:group:team:)``), kept in step by triggers in the
/// transaction that writes the row.
///
/// Folding is Swift's, so every connection has the functions `notty_document(…)` and
/// `notty_text_matches(query, …)` for rows not indexed yet
/// (a store that had notifications before the index came is indexed from its newest row down,
/// in the background: every row whose rowid is at least `search_index.below` is in the index).
/// `recursive_triggers` is on so that `INSERT OR REPLACE`, which deletes the row it replaces,
/// takes that row out of the index too.
enum SQLiteSearch {
    static let table = "notification_words"
    /// The index's one column, and its value from a `notifications` row named `row`.
    static let columns = ["words"]
    static func values(_ row: String) -> String {
        "notty_document(\(row).title, coalesce(\(row).body, \(row).raw_content), \(row).host_name, \(row).group_name, \(row).team)"
    }
    /// Rows a backfill step indexes in one transaction.
    static let backfillRows = 5000
    /// A store with at most this many rows is indexed while it migrates; a larger one in the
    /// background.
    static let indexWhileMigrating = 50_000

    /// Registers the functions on `db` (every connection, from `prepareDatabase`).
    static func install(_ db: Database) throws {
        try db.execute(sql: "PRAGMA recursive_triggers = ON")
        SearchFunctions.install(db)
    }

    /// The index, its progress mark and its triggers (migration v19): every row there is now is
    /// below the mark.
    static func migrate(_ db: Database) throws {
        let list = columns.joined(separator: ", ")
        let below = "(SELECT below FROM search_index)"
        let changed = ["title", "body", "raw_content", "host_name", "group_name", "team"]
        try db.execute(
            sql: """
                CREATE VIRTUAL TABLE \(table) USING fts5(\(list), content = '', tokenize = "unicode61 remove_diacritics 0 categories 'L* N* Co M*'");
                -- Segments merged 8 at a time, not FTS5's 4: a write rewrites less of the index.
                INSERT INTO \(table) (\(table), rank) VALUES ('automerge', 8);
                CREATE TABLE search_index (below INTEGER NOT NULL, folding INTEGER NOT NULL);
                INSERT INTO search_index SELECT coalesce(max(rowid), 0) + 1, \(SearchIndexTerms.foldingVersion) FROM notifications;
                CREATE TRIGGER notification_words_insert AFTER INSERT ON notifications WHEN new.rowid >= \(below) BEGIN
                    INSERT INTO \(table) (rowid, \(list)) VALUES (new.rowid, \(values("new")));
                END;
                CREATE TRIGGER notification_words_delete AFTER DELETE ON notifications WHEN old.rowid >= \(below) BEGIN
                    INSERT INTO \(table) (\(table), rowid, \(list)) VALUES ('delete', old.rowid, \(values("old")));
                END;
                CREATE TRIGGER notification_words_update AFTER UPDATE OF \(changed.joined(separator: ", ")) ON notifications
                WHEN old.rowid >= \(below) AND (\(changed.map { "old.\($0) IS NOT new.\($0)" }.joined(separator: " OR "))) BEGIN
                    INSERT INTO \(table) (\(table), rowid, \(list)) VALUES ('delete', old.rowid, \(values("old")));
                    INSERT INTO \(table) (rowid, \(list)) VALUES (new.rowid, \(values("new")));
                END;
                """)
        if try Int.fetchOne(db, sql: "SELECT count(*) FROM notifications") ?? 0 <= indexWhileMigrating {
            while try backfill(db, rows: indexWhileMigrating) {}
        }
    }

    /// An index made with another folding than this build's (``SearchIndexTerms/foldingVersion``)
    /// is emptied and made again in the background: its words would not match this build's
    /// queries, and its triggers could not take out what they did not make.
    static func checkFolding(_ db: Database) throws {
        guard try Int.fetchOne(db, sql: "SELECT folding FROM search_index") != SearchIndexTerms.foldingVersion else { return }
        try db.execute(
            sql: """
                INSERT INTO \(table) (\(table)) VALUES ('delete-all');
                UPDATE search_index SET below = (SELECT coalesce(max(rowid), 0) + 1 FROM notifications), folding = ?
                """, arguments: [SearchIndexTerms.foldingVersion])
    }

    /// The mark: rows below it are not indexed yet (0 once every row is).
    static func below(_ db: Database) throws -> Int64 {
        try Int64.fetchOne(db.cachedStatement(sql: "SELECT below FROM search_index")) ?? 0
    }

    /// Indexes up to `rows` rows below the mark, newest first, and moves it; returns whether
    /// rows remain.
    static func backfill(_ db: Database, rows: Int = backfillRows) throws -> Bool {
        let below = try below(db)
        guard below > 0 else { return false }
        let low = try Int64.fetchOne(
            db.cachedStatement(sql: "SELECT min(rowid) FROM (SELECT rowid FROM notifications WHERE rowid < ? ORDER BY rowid DESC LIMIT ?)"),
            arguments: [below, rows])
        guard let low else {
            try db.execute(sql: "UPDATE search_index SET below = 0")
            return false
        }
        try db.cachedStatement(
            sql: """
                INSERT INTO \(table) (rowid, \(columns.joined(separator: ", ")))
                SELECT rowid, \(values("notifications")) FROM notifications WHERE rowid >= ? AND rowid < ?
                """
        ).execute(arguments: [low, below])
        try db.cachedStatement(sql: "UPDATE search_index SET below = ?").execute(arguments: [low])
        return true
    }

    /// The rows below the mark, for the log's progress.
    static func unindexed(_ db: Database) throws -> Int {
        try Int.fetchOne(db, sql: "SELECT count(*) FROM notifications WHERE rowid < (SELECT below FROM search_index)") ?? 0
    }

    /// Above this many rows of the index that a query's words find, a window of a search steps
    /// over the feed's rows in its order (finding its first rows soon); at most this many, it
    /// reads those rows and sorts them.
    static let fewCandidates = 7000

    /// How a window of `search` reads `notifications` (a hint after the table's name): from the
    /// rows its words find when they are few (` NOT INDEXED`: by rowid), along the view's order
    /// when they are many (` INDEXED BY notifications_view`); SQLite's own choice when the query
    /// has no words or the index is not whole yet.
    static func plan(_ db: Database, _ search: SearchQuery) throws -> String {
        let sql = SearchSQL(search, dialect: .sqlite, now: .expression("0")) { _ in "?" }
        guard let match = sql.match, try below(db) == 0 else { return "" }
        let candidates =
            try Int.fetchOne(
                db.cachedStatement(sql: "SELECT count(*) FROM (SELECT 1 FROM \(table) WHERE \(table) MATCH ? LIMIT ?)"),
                arguments: [match, fewCandidates + 1]) ?? 0
        return candidates <= fewCandidates ? " NOT INDEXED" : " INDEXED BY notifications_view"
    }

    /// The condition that a `notifications` row matches `search`'s text (`search.match`,
    /// `search.exclude`), its parameters numbered from `first`, with its arguments; nil when
    /// the query has no text. `below` is the mark: rows under it are matched by
    /// `notty_text_matches`.
    static func textCondition(_ search: SearchSQL, query: String, below: Int64, first: Int) -> (String, StatementArguments)? {
        var parts: [String] = []
        var arguments: StatementArguments = []
        var next = first
        func parameter() -> String {
            defer { next += 1 }
            return "?\(next)"
        }
        if let match = search.match {
            parts.append("rowid IN (SELECT rowid FROM \(table) WHERE \(table) MATCH \(parameter()))")
            arguments += [match]
        }
        if let exclude = search.exclude {
            parts.append("rowid NOT IN (SELECT rowid FROM \(table) WHERE \(table) MATCH \(parameter()))")
            arguments += [exclude]
        }
        guard !parts.isEmpty else { return nil }
        let indexed = parts.joined(separator: " AND ")
        guard below > 0 else { return (indexed, arguments) }
        let (mark, text) = (parameter(), parameter())
        let unindexed = "notty_text_matches(\(text), title, coalesce(body, raw_content), host_name, group_name, team)"
        return ("(CASE WHEN rowid >= \(mark) THEN \(indexed) ELSE \(unindexed) END)", arguments + [below, query])
    }
}
