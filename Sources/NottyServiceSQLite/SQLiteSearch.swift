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
/// The store writes a row over in place (``SQLiteStorage/save(_:_:)``); `recursive_triggers` is
/// on so that an `INSERT OR REPLACE`, which deletes the row it replaces, would take that row
/// out of the index too.
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
        // The index's words, in order (a temporary table of this connection's: nothing stored).
        try db.execute(sql: "CREATE VIRTUAL TABLE IF NOT EXISTS temp.\(terms) USING fts5vocab(main, \(table), 'row')")
        SearchFunctions.install(db)
    }

    static let terms = "notification_terms"
    /// A word that starts at most this many longer words of the index is asked as those words.
    static let longestExpansion = 16

    /// A query word as FTS5 is asked for it: the words of the index that start with it, each
    /// whole, when there are few — FTS5 streams a whole word's list and steps over it to the
    /// rows the other words find, where a word's start (`"word"*`) has it read every matching
    /// word's whole list first (tens of milliseconds for a word in most rows). The longer words
    /// are found from the word followed by the least character a longer word can have (`0`:
    /// the index's words are letters and digits), so the word's own list is not read. Each
    /// word is looked up once however often the closure is asked (one closure a request).
    static func expansion(_ db: Database) -> (String) -> String {
        var known: [String: String] = [:]
        return { word in
            if let expression = known[word] { return expression }
            let longer = try? String.fetchAll(
                db.cachedStatement(sql: "SELECT term FROM temp.\(terms) WHERE term >= ? AND term < ? LIMIT ?"),
                arguments: [word + "0", word + "\u{10FFFF}", longestExpansion + 1])
            let expression: String
            if let longer, longer.count <= longestExpansion {
                let words = ([word] + longer).map { SearchSQL.exact($0, .sqlite) }
                expression = words.count == 1 ? words[0] : "(" + words.joined(separator: " OR ") + ")"
            } else {
                expression = SearchSQL.prefix([word], .sqlite)
            }
            known[word] = expression
            return expression
        }
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

    /// How a window of a search reads `notifications`.
    enum Plan: Equatable {
        /// No words, or an index that is not whole yet: SQLite's own choice.
        case automatic
        /// Along the view's order over at most the feed's newest `rows` rows, each row's text
        /// matched in Swift (`notty_text_matches`): a search whose words are in one row of N
        /// together fills a window of 50 after about 50 × N rows, without building the set of
        /// the index's matches.
        case walk(rows: Int)
        /// Few rows in the index that one of the query's words (and its keys) find, or that all
        /// of them do (`whole`): those rows (rowids as a JSON array), read by rowid, matched in
        /// Swift unless `whole`, and sorted.
        case candidates(String, whole: Bool)
        /// Many rows: along the view's order, against the set of the index's matches.
        case matchSet

        /// The hint after the table's name.
        var hint: String {
            switch self {
            case .automatic: ""
            case .candidates: " NOT INDEXED"
            case .walk, .matchSet: " INDEXED BY notifications_view"
            }
        }
    }

    /// A window of a search whose words find many rows (``Plan/matchSet``), ending at most this
    /// far down, is first looked for by a ``Plan/walk`` over the feed's newest ``firstWalk``
    /// rows; the set of matches is read when that does not fill it.
    static let walkedWindow = 200
    static let firstWalk = 2000
    /// A second walk steps over at most this many rows.
    static let longestWalk = 20_000

    /// The rows a second walk steps over when the first found `found` of the `wanted` rows of a
    /// window at the top (half as many again as that rate says); nil when it found none or the
    /// walk would be longer than ``longestWalk``.
    static func longerWalk(found: Int, wanted: Int, offset: Int) -> Int? {
        guard found > 0, offset == 0 else { return nil }
        let rows = firstWalk * wanted / found * 3 / 2
        return rows <= longestWalk ? rows : nil
    }

    /// At most this many rows of the index that a query's words find are read by rowid and
    /// sorted (see BENCHMARKS, "Search").
    static let fewCandidates = 4000

    /// The rows of the query's rarest word (with its `app:`, `group:` and `team:` keys), when
    /// they are at most ``fewCandidates``: one short list is read from the index, and the other
    /// words are matched in Swift on those rows only. A word's rarity is the count of rows with
    /// that very word (read as far as ``fewCandidates``, which FTS5 streams); nil when no word
    /// is rare, or its start finds more rows than that.
    static func candidates(_ db: Database, _ search: SearchQuery, words: (String) -> String) throws -> String? {
        let required = search.clauses.filter { !$0.negated }
        let keys = required.compactMap { clause -> String? in
            switch clause.term {
            case .app(let value): SearchSQL.exact(SearchIndexTerms.key(.app, folded: value), .sqlite)
            case .group(let value): SearchSQL.exact(SearchIndexTerms.key(.group, folded: value), .sqlite)
            case .team(let value): SearchSQL.exact(SearchIndexTerms.key(.team, folded: value), .sqlite)
            default: nil
            }
        }
        let count = try db.cachedStatement(sql: "SELECT count(*) FROM (SELECT 1 FROM \(table) WHERE \(table) MATCH ? LIMIT ?)")
        var rarest: (word: String, rows: Int)?
        for clause in required {
            guard case .word(let word) = clause.term else { continue }
            let rows = try Int.fetchOne(count, arguments: [SearchSQL.exact(word, .sqlite), fewCandidates + 1]) ?? 0
            if rows <= fewCandidates, rows < rarest?.rows ?? .max { rarest = (word, rows) }
        }
        guard let rarest else { return nil }
        let match = ([words(rarest.word)] + keys).joined(separator: " AND ")
        let rowids = try Int64.fetchAll(
            db.cachedStatement(sql: "SELECT rowid FROM \(table) WHERE \(table) MATCH ? LIMIT ?"), arguments: [match, fewCandidates + 1])
        return rowids.count <= fewCandidates ? json(rowids) : nil
    }

    /// How the index answers a window of `search`: from the rows its words find when they are
    /// few (up to ``fewCandidates``), against their set when many. `words`: the request's
    /// ``expansion(_:)``.
    static func plan(_ db: Database, _ search: SearchQuery, words: @escaping (String) -> String) throws -> Plan {
        let sql = SearchSQL(search, dialect: .sqlite, now: .expression("0"), word: words) { _ in "?" }
        guard let match = sql.match, try below(db) == 0 else { return .automatic }
        if let rows = try candidates(db, search, words: words) { return .candidates(rows, whole: false) }
        // Every word is common: the rows of all of them (their lists read once), when few.
        let rowids = try Int64.fetchAll(
            db.cachedStatement(sql: "SELECT rowid FROM \(table) WHERE \(table) MATCH ? LIMIT ?"), arguments: [match, fewCandidates + 1])
        return rowids.count <= fewCandidates ? .candidates(json(rowids), whole: true) : .matchSet
    }

    /// Rowids as a JSON array (read with `json_each`).
    static func json(_ rowids: [Int64]) -> String {
        "[" + rowids.map(String.init).joined(separator: ",") + "]"
    }

    /// The condition that a `notifications` row matches `search`'s text (`search.match`,
    /// `search.exclude`), its parameters numbered from `first`, with its arguments; nil when
    /// the query has no text. `below` is the mark: rows under it are matched by
    /// `notty_text_matches`, as every row is on a ``Plan/walk``.
    static func textCondition(_ search: SearchSQL, query: String, below: Int64, plan: Plan, first: Int) -> (String, StatementArguments)? {
        let matcher = { (query: String) in "notty_text_matches(\(query), title, coalesce(body, raw_content), host_name, group_name, team)" }
        switch plan {
        case .candidates(let rows, whole: true): return ("rowid IN (SELECT value FROM json_each(?\(first)))", [rows])
        case .candidates(let rows, whole: false):
            return ("rowid IN (SELECT value FROM json_each(?\(first))) AND \(matcher("?\(first + 1)"))", [rows, query])
        case .walk: return (matcher("?\(first)"), [query])
        case .automatic, .matchSet: break
        }
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
        return ("(CASE WHEN rowid >= \(mark) THEN \(indexed) ELSE \(matcher(text)) END)", arguments + [below, query])
    }
}
