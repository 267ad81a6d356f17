import Foundation
import GRDB
import NottyCore
import Synchronization

/// Searching with the query language (PROTOCOL.md §17, ``SearchQuery``): its words, phrases
/// and `app:`/`group:`/`team:` from a word index, its other fields as conditions on the row.
///
/// The index (`search_words`, contentless FTS5, migration v13; a trigram index before it) holds
/// each row's folded words and keys (``SearchIndexTerms``, through ``SearchFunctions``). It is
/// built after the rows arrive, not while they are synced (the initial sync would take longer):
/// every row whose rowid is at most `search_progress.indexed` is in it, triggers keep those rows
/// current, and ``indexForSearch(rows:)`` adds the rest in small transactions. Rows above the
/// mark are matched by `notty_text_matches`, so the answer is the same whatever part of the
/// store is indexed.
///
/// A query with few candidates (``SearchPlan/candidateLimit``) is answered from their keys,
/// sorted here. One with many has many matches in most views, and its rows are found by
/// stepping over the view's index in order until the window is full (``ViewFilter``); how
/// many there are is then a scan of the view, which a UI counts in the background.
enum SearchIndex {
    static func migrate(_ db: Database) throws {
        let columns = ["title", "body", "raw_content", "app", "group_name"]  // ViewFilter.searched, as of v4
        func values(_ row: String) -> String { columns.map { "\(row).\($0)" }.joined(separator: ", ") }
        let list = columns.joined(separator: ", ")
        let indexed = "(SELECT indexed FROM search_progress)"
        try db.execute(
            sql: """
                CREATE TABLE search_progress (indexed INTEGER NOT NULL);
                INSERT INTO search_progress VALUES (0);
                CREATE VIRTUAL TABLE search USING fts5(\(list), content = 'notifications', content_rowid = 'rowid', tokenize = 'trigram');
                CREATE TRIGGER search_insert AFTER INSERT ON notifications WHEN new.rowid <= \(indexed) BEGIN
                    INSERT INTO search (rowid, \(list)) VALUES (new.rowid, \(values("new")));
                END;
                CREATE TRIGGER search_delete AFTER DELETE ON notifications WHEN old.rowid <= \(indexed) BEGIN
                    INSERT INTO search (search, rowid, \(list)) VALUES ('delete', old.rowid, \(values("old")));
                END;
                CREATE TRIGGER search_update AFTER UPDATE OF \(list) ON notifications
                WHEN old.rowid <= \(indexed) AND (\(columns.map { "old.\($0) IS NOT new.\($0)" }.joined(separator: " OR "))) BEGIN
                    INSERT INTO search (search, rowid, \(list)) VALUES ('delete', old.rowid, \(values("old")));
                    INSERT INTO search (rowid, \(list)) VALUES (new.rowid, \(values("new")));
                END;
                """)
    }

    /// The word index's table, its columns, and each one's value from a `notifications` row named `row`.
    static let table = "search_words"
    static let columns = ["words"]
    static func values(_ row: String) -> String {
        let team = "CASE WHEN json_valid(\(row).policies) THEN json_extract(\(row).policies, '$.team') END"
        return "notty_document(\(row).title, coalesce(\(row).body, \(row).raw_content), \(row).app, \(row).group_name, \(team))"
    }

    /// v13: the trigram index gives way to the word index, built again in the background.
    static func migrateToWords(_ db: Database) throws {
        let list = columns.joined(separator: ", ")
        let indexed = "(SELECT indexed FROM search_progress)"
        let changed = ["title", "body", "raw_content", "app", "group_name", "policies"]
        try db.execute(
            sql: """
                DROP TRIGGER search_insert;
                DROP TRIGGER search_delete;
                DROP TRIGGER search_update;
                DROP TABLE search;
                UPDATE search_progress SET indexed = 0;
                CREATE VIRTUAL TABLE \(table) USING fts5(\(list), content = '', tokenize = "unicode61 remove_diacritics 0 categories 'L* N* Co M*'");
                -- Segments merged 8 at a time, not FTS5's 4: a write rewrites less of the index.
                INSERT INTO \(table) (\(table), rank) VALUES ('automerge', 8);
                CREATE TRIGGER search_words_insert AFTER INSERT ON notifications WHEN new.rowid <= \(indexed) BEGIN
                    INSERT INTO \(table) (rowid, \(list)) VALUES (new.rowid, \(values("new")));
                END;
                CREATE TRIGGER search_words_delete AFTER DELETE ON notifications WHEN old.rowid <= \(indexed) BEGIN
                    INSERT INTO \(table) (\(table), rowid, \(list)) VALUES ('delete', old.rowid, \(values("old")));
                END;
                CREATE TRIGGER search_words_update AFTER UPDATE OF \(changed.joined(separator: ", ")) ON notifications
                WHEN old.rowid <= \(indexed) AND (\(changed.map { "old.\($0) IS NOT new.\($0)" }.joined(separator: " OR "))) BEGIN
                    INSERT INTO \(table) (\(table), rowid, \(list)) VALUES ('delete', old.rowid, \(values("old")));
                    INSERT INTO \(table) (rowid, \(list)) VALUES (new.rowid, \(values("new")));
                END;
                """)
    }

    /// The most rows a sync's page indexes besides its own (a store not caught up yet).
    static let rowsPerSync = 2000

    /// Indexes up to `rows` rows above the mark, oldest first, and moves it; returns whether
    /// rows remain.
    static func catchUp(_ db: Database, rows: Int) throws -> Bool {
        let from = try indexed(db)
        let last = try Int64.fetchOne(
            db.cachedStatement(sql: "SELECT max(rowid) FROM (SELECT rowid FROM notifications WHERE rowid > ? ORDER BY rowid LIMIT ?)"),
            arguments: [from, rows])
        guard let last else { return false }
        try db.cachedStatement(
            sql: """
                INSERT INTO \(table) (rowid, \(columns.joined(separator: ", ")))
                SELECT rowid, \(values("notifications")) FROM notifications WHERE rowid > ? AND rowid <= ?
                """
        ).execute(arguments: [from, last])
        try db.cachedStatement(sql: "UPDATE search_progress SET indexed = ?").execute(arguments: [last])
        return try Bool.fetchOne(db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 FROM notifications WHERE rowid > ?)"), arguments: [last]) ?? false
    }

    /// The highest rowid up to which every row is indexed.
    static func indexed(_ db: Database) throws -> Int64 {
        try Int64.fetchOne(db.cachedStatement(sql: "SELECT indexed FROM search_progress")) ?? 0
    }

    /// An index made with another folding than this build's (``SearchIndexTerms/foldingVersion``,
    /// kept in `meta`) is forgotten and made again in the background.
    static func checkFolding(_ db: Database) throws {
        let version = String(SearchIndexTerms.foldingVersion)
        guard try String.fetchOne(db, sql: "SELECT value FROM meta WHERE key = 'search_folding'") != version else { return }
        try reset(db)
        try db.execute(
            sql: "INSERT INTO meta (key, value) VALUES ('search_folding', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            arguments: [version])
    }

    /// The whole index forgotten (every row deleted with it): the next rows arrive unindexed.
    static func reset(_ db: Database) throws {
        try db.execute(sql: "INSERT INTO \(table) (\(table)) VALUES ('delete-all'); UPDATE search_progress SET indexed = 0")
    }
}

/// What a search needs of a matching row to place it: its order and its view.
struct SearchKey: Sendable {
    static let columns = "rowid, created, id, hidden, read_state, action_state, snoozed_until, expires"
    var rowid: Int64
    var created: Int64
    var id: String
    var hidden: Bool
    var readState: String
    var actionState: String
    var snoozedUntil: Int64?
    var expires: Int64

    /// A row of ``columns``.
    init(_ row: Row) {
        (rowid, created, id, hidden) = (row[0], row[1], row[2], row[3])
        (readState, actionState, snoozedUntil, expires) = (row[4], row[5], row[6], row[7])
    }

    func isIn(_ view: NotificationView, now: Int64) -> Bool {
        guard !hidden,
            let shown = ViewIndex.view(readState: readState, actionState: actionState, snoozedUntil: snoozedUntil, expires: expires, now: now)
        else { return false }
        return view == .all || view == shown
    }
}

/// The matches of the last query with few candidates, kept for the next question about the
/// same query while the store has not changed (a window load asks for the count, the
/// position and the rows).
struct SearchPlan: Sendable {
    /// At most this many candidates are sorted here; more are found in index order.
    static let candidateLimit = 1000
    var query: String
    var revision: Int64
    /// Every row matching the query, any view, newest first; nil when there are too many
    /// candidates to list.
    var keys: [SearchKey]?
}

extension LocalStore {
    /// Adds up to `rows` not yet indexed rows to the search index in one transaction; returns
    /// whether rows remain. The TUI calls it in the background after the store changes.
    @available(
        *, noasync, message: "blocks on SQLite: call it inside `await store.perform { … }` (a thread of its own), never on Swift's cooperative pool"
    )
    @discardableResult
    public func indexForSearch(rows: Int = 2000) throws -> Bool {
        try write { db in
            let more = try SearchIndex.catchUp(db, rows: rows)
            // Indexing filled this connection's page cache with pages nothing reads again.
            if !more { db.releaseMemory() }
            return more
        }
    }

    /// How many rows are not in the search index yet.
    @available(
        *, noasync, message: "blocks on SQLite: call it inside `await store.perform { … }` (a thread of its own), never on Swift's cooperative pool"
    )
    public func rowsToIndexForSearch() throws -> Int {
        try database.read { db in
            try Int.fetchOne(db, sql: "SELECT count(*) FROM notifications WHERE rowid > ?", arguments: [try SearchIndex.indexed(db)]) ?? 0
        }
    }

    /// How many rows of `view` match `query` at `now` when that is quick to know (no query,
    /// or few candidates); nil when it takes a scan of the view (``count(view:query:now:)``).
    @available(
        *, noasync, message: "blocks on SQLite: call it inside `await store.perform { … }` (a thread of its own), never on Swift's cooperative pool"
    )
    public func quickCount(view: NotificationView, query: String, now: Date = Date()) throws -> Int? {
        try database.read { db in try quickCount(db, view: view, query: query, now: now) }
    }

    func quickCount(_ db: Database, view: NotificationView, query: String, now: Date) throws -> Int? {
        if ViewFilter.isEmpty(query) { return try ViewIndex(db, view: view, now: now).total() }
        // A group is counted in one pass over the view (the groups are read the same way).
        if GroupQuery.key(in: query) != nil { return try count(db, branches(db, view, now: now, query: query)) }
        return try searchKeys(db, query: query, view: view, now: now)?.count
    }

    /// The rows of `view` at `now` matching `query`, newest first, when ``searchKeys(_:query:)``
    /// lists them.
    func searchKeys(_ db: Database, query: String, view: NotificationView, now: Date) throws -> [SearchKey]? {
        let millis = ISOTime.millis(now)
        return try searchKeys(db, query: query, now: now)?.filter { $0.isIn(view, now: millis) }
    }

    /// Every row matching `query` (any view, newest first) when the word index lists at most
    /// ``SearchPlan/candidateLimit`` candidates, counting every row not indexed yet as one; nil
    /// when there are more, or the query requires no words.
    func searchKeys(_ db: Database, query: String, now: Date) throws -> [SearchKey]? {
        let text = query.trimmingCharacters(in: .whitespaces)
        guard GroupQuery.key(in: text) == nil, let filter = try SearchFilter(text, now: now), filter.sql.match != nil else { return nil }
        let revision = try self.revision(db)
        if let plan = searchPlan.withLock({ $0 }), plan.query == text, plan.revision == revision {
            return plan.keys
        }
        let keys = try listKeys(db, filter)
        searchPlan.withLock { $0 = SearchPlan(query: text, revision: revision, keys: keys) }
        return keys
    }

    private func listKeys(_ db: Database, _ filter: SearchFilter) throws -> [SearchKey]? {
        guard let match = filter.sql.match else { return nil }
        let indexed = try SearchIndex.indexed(db)
        // Rows not indexed yet are all candidates (at most this many).
        let unindexed = max(0, (try Int.fetchOne(db.cachedStatement(sql: "SELECT max(rowid) FROM notifications")) ?? 0) - Int(indexed))
        guard unindexed <= SearchPlan.candidateLimit else { return nil }
        let table = SearchIndex.table
        let candidates =
            try Int.fetchOne(
                db.cachedStatement(sql: "SELECT count(*) FROM (SELECT 1 FROM \(table) WHERE \(table) MATCH ? LIMIT ?)"),
                arguments: [match, SearchPlan.candidateLimit + 1 - unindexed]) ?? 0
        guard candidates + unindexed <= SearchPlan.candidateLimit else { return nil }
        let keys = SearchKey.columns
        let rows = try Row.fetchCursor(
            db.cachedStatement(
                sql: """
                    SELECT \(keys) FROM notifications WHERE rowid IN (SELECT rowid FROM \(table) WHERE \(table) MATCH ?) AND \(filter.condition)
                    UNION ALL
                    SELECT \(keys) FROM notifications WHERE rowid > ? AND \(filter.condition)
                    """),
            arguments: [match] + filter.arguments + [indexed] + filter.arguments)
        var found: [SearchKey] = []
        while let row = try rows.next() { found.append(SearchKey(row)) }
        found.sort { ($0.created, $0.id) > ($1.created, $1.id) }
        return found
    }

    /// The rows with these rowids, newest first.
    static func rows(_ db: Database, rowids: [Int64]) throws -> [UserNotification] {
        guard !rowids.isEmpty else { return [] }
        let marks = Array(repeating: "?", count: rowids.count).joined(separator: ", ")
        return try notifications(
            db.makeStatement(sql: "SELECT \(columns) FROM notifications WHERE rowid IN (\(marks)) ORDER BY created DESC, id DESC"),
            arguments: StatementArguments(rowids))
    }
}

/// A search of a device's store: the query read (``SearchQuery``; a refusal is
/// ``StoreError/search(_:)``), as one condition on a `notifications` row with its arguments,
/// bound in order. Its text is asked of the word index for the rows it holds and of
/// `notty_text_matches` for the rows above its mark.
struct SearchFilter {
    let sql: SearchSQL
    let condition: String
    let arguments: StatementArguments
    /// The fields alone (not the words), for a read that starts from the index's rows.
    let fieldsCondition: String
    let fieldsArguments: StatementArguments

    /// nil when `text` has no terms.
    init?(_ text: String, now: Date) throws {
        let query: SearchQuery
        do {
            query = try SearchQuery.parse(text)
        } catch {
            throw StoreError.search(error.message)
        }
        guard !query.isEmpty else { return nil }
        sql = SearchSQL(query, dialect: .sqlite, columns: .device, now: .value(ISOTime.millis(now))) { _ in "?" }
        var parts = sql.conditions
        var arguments = sql.arguments
        fieldsCondition = parts.isEmpty ? "1 = 1" : "(" + parts.joined(separator: " AND ") + ")"
        fieldsArguments = arguments
        let table = SearchIndex.table
        var indexed: [String] = []
        if let match = sql.match {
            indexed.append("rowid IN (SELECT rowid FROM \(table) WHERE \(table) MATCH ?)")
            arguments += [match]
        }
        if let exclude = sql.exclude {
            indexed.append("rowid NOT IN (SELECT rowid FROM \(table) WHERE \(table) MATCH ?)")
            arguments += [exclude]
        }
        if !indexed.isEmpty {
            let team = "CASE WHEN json_valid(policies) THEN json_extract(policies, '$.team') END"
            parts.append(
                """
                (CASE WHEN rowid <= (SELECT indexed FROM search_progress) THEN \(indexed.joined(separator: " AND "))
                 ELSE notty_text_matches(?, title, coalesce(body, raw_content), app, group_name, \(team)) END)
                """)
            arguments += [text]
        }
        condition = parts.isEmpty ? "1 = 1" : "(" + parts.joined(separator: " AND ") + ")"
        self.arguments = arguments
    }
}
