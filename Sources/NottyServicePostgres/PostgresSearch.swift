import Foundation
import Logging
import NottyCore
import NottyRecords
import NottyService
import NottyStorageSupport
import PostgresNIO

/// Search on PostgreSQL (PROTOCOL.md §17): each row's `words`, a `tsvector` made in Swift as it
/// is written (``SearchVector``: folded in every script), under a GIN index. Rows written
/// before the column came have none; ``startSearchIndexing()`` fills them in the background,
/// a few thousand a transaction, and until it has, a search reads those rows of the feed too
/// and matches them here.
extension PostgresStorage {
    /// The migration that adds the index.
    static let searchMigration = (
        "v20",
        [
            "ALTER TABLE notifications ADD COLUMN words tsvector",
            "CREATE INDEX notifications_words ON notifications USING gin (words)",
            "CREATE INDEX notifications_unindexed ON notifications (id) WHERE words IS NULL",
        ]
    )
    static let indexingRows = 2000

    /// Fills `words` of the rows that have none, in the background, progress in the log.
    func startSearchIndexing() {
        let task = Task {
            guard
                let left = try? await self.run({ connection -> Int64 in
                    try await connection.query("SELECT count(*) FROM notifications WHERE words IS NULL", logger: self.logger).collect(Int64.self)
                        .first ?? 0
                }), left > 0
            else {
                self.searchIndexed.store(true, ordering: .releasing)
                return
            }
            self.logger.info("indexing \(left) earlier notifications for search in the background")
            var done: Int64 = 0
            var reported: Int64 = 0
            while !Task.isCancelled {
                guard let count = try? await self.indexBatch() else {
                    self.logger.error("indexing for search stopped on an error; it goes on at the next start")
                    return
                }
                guard count > 0 else {
                    self.searchIndexed.store(true, ordering: .releasing)
                    self.logger.info("search index complete: \(done) earlier notifications indexed")
                    return
                }
                done += Int64(count)
                if min(done, left) * 10 / left > reported {
                    reported = min(done, left) * 10 / left
                    self.logger.info("indexing for search: \(min(done, left)) of \(left) (\(reported * 10)%)")
                }
            }
        }
        tasks.withLock { $0.append(task) }
    }

    /// Gives up to ``indexingRows`` rows without `words` theirs; returns how many. A row written
    /// meanwhile has its own already and is left alone.
    func indexBatch() async throws -> Int {
        try await run { connection in
            let query = PostgresQuery(
                unsafeSQL: "SELECT \(Self.columns) FROM notifications WHERE words IS NULL LIMIT \(Self.indexingRows)", binds: PostgresBindings())
            let rows = try await self.fetchStored(connection, query)
            guard !rows.isEmpty else { return 0 }
            var binds = PostgresBindings()
            binds.append(rows.map(\.notification.id))
            binds.append(rows.map { SearchVector.text(NotificationColumns($0)) })
            try await connection.exec(
                PostgresQuery(
                    unsafeSQL: """
                        UPDATE notifications SET words = w.words::tsvector FROM unnest($1::text[], $2::text[]) AS w (id, words)
                        WHERE notifications.id = w.id AND notifications.words IS NULL
                        """, binds: binds), logger: self.logger)
            return rows.count
        }
    }

    /// Every view's count of the notifications `search` finds (the user's and their teams'); rows
    /// not indexed yet are matched here and counted by their view.
    func searchCounts(userId: String, now: Date, search: SearchQuery) async throws -> ViewCounts {
        try await run { connection in
            let (sql, bound) = Self.searchBinds(search, owner: userId, now: now)
            var (binds, baseBinds, next, text) = (bound, bound, 3 + sql.values.count, [String]())
            func parameter() -> String {
                defer { next += 1 }
                return "$\(next)"
            }
            Self.addText(sql, to: &text, binds: &binds, parameter: parameter)
            let base =
                (["user_id IN (SELECT $1::text UNION ALL SELECT team_id FROM team_members WHERE user_id = $1)", "NOT deleted", "expires > $2"]
                + sql.conditions).joined(separator: " AND ")
            let views: [NotificationView] = [.unread, .read, .activated, .dismissed, .snoozed]
            let row: (Int64, Int64, Int64, Int64, Int64, Int64) =
                try await connection.query(
                    PostgresQuery(
                        unsafeSQL: """
                            SELECT count(*), \(views.map { "count(*) FILTER (WHERE \($0.sqlCondition(now: "$2")))" }.joined(separator: ", "))
                            FROM notifications WHERE \(base)\(text.map { " AND words IS NOT NULL AND " + $0 }.joined())
                            """, binds: binds), logger: self.logger
                ).collect((Int64, Int64, Int64, Int64, Int64, Int64).self).first ?? (0, 0, 0, 0, 0, 0)
            var counts = ViewCounts()
            (counts.all, counts.unread, counts.read, counts.activated, counts.dismissed, counts.snoozed) =
                (Int(row.0), Int(row.1), Int(row.2), Int(row.3), Int(row.4), Int(row.5))
            guard !text.isEmpty, !self.searchIndexed.load(ordering: .acquiring) else { return counts }
            let unindexed = try await self.fetchStored(
                connection, PostgresQuery(unsafeSQL: "SELECT \(Self.columns) FROM notifications WHERE \(base) AND words IS NULL", binds: baseBinds))
            for row in unindexed {
                let n = row.notification
                guard
                    search.matchesText(
                        title: n.payload.visualContent?.title, body: n.payload.visualContent?.body ?? n.payload.rawContent, app: n.targetHostName,
                        group: n.groupName, team: n.team), let view = NotificationView.current(of: n, now: now)
                else { continue }
                counts.all += 1
                counts[view] += 1
            }
            return counts
        }
    }

    /// A window of `owner`'s rows of `view` matching `search` (``PostgresStorage/list``).
    func search(_ connection: PostgresConnection, owner: String, view: NotificationView, search: SearchQuery, limit: Int, skip: Int, now: Date)
        async throws -> [UserNotification]
    {
        let (sql, bound) = Self.searchBinds(search, owner: owner, now: now)
        var (binds, baseBinds, next, text) = (bound, bound, 3 + sql.values.count, [String]())
        func parameter() -> String {
            defer { next += 1 }
            return "$\(next)"
        }
        // A rare word beside common ones: only the rare one is read from the index, and the
        // whole query is matched on its rows (`ts_match_vq`, which the planner cannot take to the
        // index): GIN reads a common word's start (`'taq':*`) whole before a rare word narrows it.
        let rare = sql.match == nil ? nil : try await Self.rareTerms(search, common: commonWords(connection))
        Self.addText(sql, rare: rare, to: &text, binds: &binds, parameter: parameter)
        let base = (["user_id = $1", "NOT deleted", "expires > $2", view.sqlCondition(now: "$2")] + sql.conditions).joined(separator: " AND ")
        // Rows not indexed yet (while an earlier store is indexed): those of the feed, matched here.
        var unindexed: [UserNotification] = []
        if !text.isEmpty, !searchIndexed.load(ordering: .acquiring) {
            unindexed = try await fetchStored(
                connection, PostgresQuery(unsafeSQL: "SELECT \(Self.columns) FROM notifications WHERE \(base) AND words IS NULL", binds: baseBinds)
            ).map(\.notification).filter { n in
                search.matchesText(
                    title: n.payload.visualContent?.title, body: n.payload.visualContent?.body ?? n.payload.rawContent, app: n.targetHostName,
                    group: n.groupName, team: n.team)
            }
        }
        let (window, offset) = unindexed.isEmpty ? (limit, skip) : (limit + skip, 0)
        let (limitParameter, offsetParameter) = (parameter(), parameter())
        binds.append(Int64(window))
        binds.append(Int64(offset))
        let indexed = try await fetchStored(
            connection,
            PostgresQuery(
                unsafeSQL: """
                    SELECT \(Self.columns) FROM notifications WHERE \(base)\(text.map { " AND words IS NOT NULL AND " + $0 }.joined())
                    ORDER BY created DESC, id DESC LIMIT \(limitParameter) OFFSET \(offsetParameter)
                    """, binds: binds)
        ).map(\.notification)
        guard !unindexed.isEmpty else { return indexed }
        return Array((indexed + unindexed).sorted { ($0.createdDateTime, $0.id) > ($1.createdDateTime, $1.id) }.dropFirst(skip).prefix(limit))
    }
}

extension PostgresStorage {
    /// A word in more than this share of rows is common (``rareTerms(_:common:)``).
    static let commonShare = 0.002

    /// The search index's most common words (PostgreSQL's statistics of `words`, from its last
    /// `ANALYZE`) with the share of rows each is in, read again after a minute.
    func commonWords(_ connection: PostgresConnection) async throws -> [String: Double] {
        if let read = commonWordsRead.withLock({ $0 }), read.at.duration(to: .now) < .seconds(60) { return read.words }
        let rows = try await connection.query(
            """
            SELECT most_common_elems::text::text[], most_common_elem_freqs::float8[] FROM pg_stats
            WHERE schemaname = current_schema() AND tablename = 'notifications' AND attname = 'words'
            """, logger: logger
        ).collect(([String]?, [Double]?).self)
        var words: [String: Double] = [:]
        if let (elements, shares) = rows.first, let elements, let shares {
            for (element, share) in zip(elements, shares) { words[element] = share }
        }
        commonWordsRead.withLock { $0 = (words, .now) }
        return words
    }

    /// The `tsquery` of `search`'s rare required words (each a start, none common in
    /// `common`), when it also has common ones; nil otherwise (the whole query goes to the
    /// index).
    static func rareTerms(_ search: SearchQuery, common: [String: Double]) -> String? {
        var (rare, commonCount) = ([String](), 0)
        for clause in search.clauses where !clause.negated {
            guard case .word(let word) = clause.term else { continue }
            let share = common.reduce(0.0) { $1.key.hasPrefix(word) ? $0 + $1.value : $0 }
            if share > commonShare { commonCount += 1 } else { rare.append("(" + SearchSQL.prefix([word], .postgres) + ")") }
        }
        return !rare.isEmpty && commonCount > 0 ? rare.joined(separator: " & ") : nil
    }

    /// `search` as SQL whose first two parameters are the owner (`$1`) and the time (`$2`), and
    /// those two and the fields' values bound.
    static func searchBinds(_ search: SearchQuery, owner: String, now: Date) -> (SearchSQL, PostgresBindings) {
        let sql = SearchSQL(search, dialect: .postgres, now: .expression("$2"), firstPlaceholder: 3) { "$\($0)" }
        var binds = PostgresBindings()
        binds.append(owner)
        binds.append(ISOTime.millis(now))
        for value in sql.values {
            switch value {
            case .text(let text): binds.append(text)
            case .integer(let number): binds.append(number)
            }
        }
        return (sql, binds)
    }

    /// The index's conditions of `sql` (what the words must and must not match), their
    /// queries bound at the parameters `parameter` hands out.
    /// `rare`: a `tsquery` of some of the words, asked of the index instead of the whole match
    /// (which is then matched on the rows it finds).
    static func addText(_ sql: SearchSQL, rare: String? = nil, to text: inout [String], binds: inout PostgresBindings, parameter: () -> String) {
        if let match = sql.match, let rare {
            text.append("words @@ \(parameter())::tsquery AND ts_match_vq(words, \(parameter())::tsquery)")
            binds.append(rare)
            binds.append(match)
        } else if let match = sql.match {
            text.append("words @@ \(parameter())::tsquery")
            binds.append(match)
        }
        if let exclude = sql.exclude {
            text.append("NOT (words @@ \(parameter())::tsquery)")
            binds.append(exclude)
        }
    }
}
