import Foundation
import GRDB
import NottyCore
import NottyRecords
import NottyService
import NottyStorageSupport

/// Notifications: their rows, publishing, state changes, held publishes, expiry, the feed.
extension SQLiteStorage {
    /// A row selected with ``NotificationColumns/list``.
    static func stored(_ row: Row) throws -> StoredNotification {
        try NotificationColumns(SQLiteColumns(row: row)).stored
    }

    /// A whole row, one value per column of ``NotificationColumns/names``.
    static let intoNotifications = """
        INTO notifications (\(NotificationColumns.list))
        VALUES (\(Array(repeating: "?", count: NotificationColumns.names.count).joined(separator: ", ")))
        """

    /// A whole row written over the row with its id (`?1`), in place: the row keeps its rowid,
    /// and a change that leaves its text alone (a state change) leaves the search index alone
    /// (`INSERT OR REPLACE` deletes the row and inserts it again, and the index's entry with it).
    static let overwriteSQL =
        "UPDATE notifications SET "
        + NotificationColumns.names.enumerated().dropFirst().map { "\($1) = ?\($0 + 1)" }.joined(separator: ", ")
        + " WHERE \(idMatches)"

    static let insertSQL = "INSERT " + intoNotifications

    /// Inserts a new row unless the app already has an active notification with its id.
    static let insertNewSQL = "INSERT " + intoNotifications + " ON CONFLICT (user_id, host_name, app_notification_id) WHERE deleted = 0 DO NOTHING"

    /// A row's values in ``NotificationColumns/names`` order, without the last one, `seq`,
    /// which only the writer knows.
    static func valuesBeforeSeq(_ s: StoredNotification) -> [(any DatabaseValueConvertible)?] {
        var values = SQLiteValues()
        NotificationColumns(s).write(to: &values)
        return values.values.dropLast()
    }

    /// Writes a row whole: over the row with its id, or as a new row.
    static func save(_ s: StoredNotification, _ db: Database) throws {
        let values = StatementArguments(valuesBeforeSeq(s) + [s.seq])
        try db.cachedStatement(sql: overwriteSQL).execute(arguments: values)
        if db.changesCount == 0 { try db.cachedStatement(sql: insertSQL).execute(arguments: values) }
    }

    /// The row whose id is `?1`, found through `notifications_id`: SQLite uses an index on
    /// expressions only for a condition on the same expressions. The last term makes the
    /// match exact (the two others ignore the ninth character); its `+` keeps SQLite from
    /// propagating `id = ?1` into the others, which then no longer match the index.
    static let idMatches = "substr(id, 10) = substr(?1, 10) AND substr(id, 1, 8) = substr(?1, 1, 8) AND +id = ?1"

    /// The notification with id `?1` of user `?2`.
    static let byIdSQL = "SELECT \(NotificationColumns.list) FROM notifications WHERE \(idMatches) AND user_id = ?2"

    /// The notification with id `?1` that user `?2` reads: theirs, or a team's they are in.
    static let byIdForReaderSQL = "SELECT \(NotificationColumns.list) FROM notifications WHERE \(idMatches) AND user_id IN \(owners("?2"))"

    static func fetchStored(_ db: Database, sql: String, _ arguments: StatementArguments) throws -> StoredNotification? {
        try Row.fetchOne(db.cachedStatement(sql: sql), arguments: arguments).map { try stored($0) }
    }

    // MARK: - Notification writes

    public func publish(_ input: PublishInput) async throws -> UserNotification {
        try await publish(batch: [input])[0]
    }

    public func publish(batch inputs: [PublishInput]) async throws -> [UserNotification] {
        // The rows new notifications become are built here, before the writer's turn, so that
        // the one thread every write waits for only binds and runs one statement for each.
        let fresh = inputs.map { NotificationRules.published($0, existing: nil, newId: Identifiers.notification(), seq: 0) }
        let values = fresh.map { StatementArguments(Self.valuesBeforeSeq($0)) }
        // One INSERT is atomic by itself; a batch is all or nothing in the job's savepoint.
        return try await write(savepoint: inputs.count > 1) { db, context in
            var published: [UserNotification] = []
            published.reserveCapacity(inputs.count)
            for (index, input) in inputs.enumerated() {
                let insert = try db.cachedStatement(sql: Self.insertNewSQL)
                insert.setUncheckedArguments(values[index] + [context.upcomingSeq])  // one value per column, by construction
                try insert.execute()
                if db.changesCount == 1 {
                    _ = context.nextSeq(for: input.userId)  // the `seq` just written
                    published.append(fresh[index].notification)
                } else {
                    // The app already has an active notification with this id: a re-publish (with
                    // the id made above, should the active one have expired).
                    published.append(try db.resultInSavepoint { try Self.publishRows(input, newId: fresh[index].notification.id, db, context) })
                }
            }
            return published
        }
    }

    /// Publishes over the app's active notification with the same id, if any.
    static func publishRows(_ input: PublishInput, newId: String, _ db: Database, _ context: WriteContext) throws -> UserNotification {
        let active = try activeRow(db, userId: input.userId, hostName: input.hostName, appNotificationId: input.request.appNotificationId)
        let rows = NotificationRules.publishRows(input, active: active, newId: newId) { context.nextSeq(for: input.userId) }
        for row in rows { try save(row, db) }
        return rows[rows.count - 1].notification
    }

    /// The app's active notification with this `appNotificationId`, if any.
    /// Without its actions: a re-publish replaces them, and what else uses it writes a tombstone.
    static func activeRow(_ db: Database, userId: String, hostName: String, appNotificationId: String) throws -> StoredNotification? {
        try fetchStored(
            db,
            sql:
                "SELECT \(NotificationColumns.listWithoutActions) FROM notifications WHERE user_id = ? AND host_name = ? AND app_notification_id = ? AND deleted = 0",
            [userId, hostName, appNotificationId])
    }

    public func notification(userId: String, hostName: String, appNotificationId: String) async throws -> UserNotification? {
        try await read { db in
            try Self.fetchStored(
                db,
                sql:
                    "SELECT \(NotificationColumns.list) FROM notifications WHERE user_id = ? AND host_name = ? AND app_notification_id = ? AND deleted = 0",
                [userId, hostName, appNotificationId])?.notification
        }
    }

    public func edit(
        userId: String, hostName: String, appNotificationId: String, now: Date,
        _ change: @escaping @Sendable (UserNotification) -> UserNotification?
    ) async throws -> UserNotification? {
        try await write { db, context in
            guard
                let row = try Self.fetchStored(
                    db,
                    sql:
                        "SELECT \(NotificationColumns.list) FROM notifications WHERE user_id = ? AND host_name = ? AND app_notification_id = ? AND deleted = 0",
                    [userId, hostName, appNotificationId]),
                let changed = change(row.notification)
            else { return nil }
            let edited = NotificationRules.edited(row, to: changed, now: now, seq: context.nextSeq(for: userId))
            try Self.save(edited, db)
            return edited.notification
        }
    }

    public func deleteByApp(userId: String, hostName: String, appNotificationId: String, now: Date) async throws -> Bool {
        try await write { db, context in
            guard let row = try Self.activeRow(db, userId: userId, hostName: hostName, appNotificationId: appNotificationId) else { return false }
            try Self.save(NotificationRules.deleted(row, now: now, seq: context.nextSeq(for: userId)), db)
            return row.notification.expirationDateTime > now
        }
    }

    public func mutate(userId: String, mutations: [Mutation], now: Date) async throws -> [MutationResult] {
        try await write { db, context in
            try mutations.map { mutation in
                try MutationApplier.apply(mutation, userId: userId, now: now, context: context, store: SQLiteRowStore(db: db))
            }
        }
    }

    public func insertDelayed(_ record: DelayedRecord) async throws {
        try await write { db, _ in
            try db.execute(
                sql: "INSERT INTO delayed (id, user_id, subscription_id, host_name, due_at, body, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                arguments: [
                    record.id, record.userId, record.subscriptionId, record.hostName, ISOTime.millis(record.dueAt), record.body,
                    ISOTime.millis(record.createdAt),
                ])
        }
    }

    public func claimDueDelayed(now: Date, lease: Date, limit: Int) async throws -> [DelayedRecord] {
        let at = ISOTime.millis(now)
        return try await write { db, _ in
            try Row.fetchAll(
                db,
                sql: """
                    UPDATE delayed SET claimed_until = ?
                    WHERE id IN (SELECT id FROM delayed WHERE due_at <= ? AND claimed_until <= ? ORDER BY due_at LIMIT ?)
                    RETURNING id, user_id, subscription_id, host_name, due_at, body, created_at
                    """, arguments: [ISOTime.millis(lease), at, at, limit]
            ).map { row in
                DelayedRecord(
                    id: row["id"], userId: row["user_id"], subscriptionId: row["subscription_id"], hostName: row["host_name"],
                    dueAt: ISOTime.date(millis: row["due_at"]), body: row["body"], createdAt: ISOTime.date(millis: row["created_at"]))
            }.sorted { $0.dueAt < $1.dueAt }
        }
    }

    public func deleteDelayed(ids: [String]) async throws {
        guard !ids.isEmpty else { return }
        try await write { db, _ in
            for id in ids { try db.execute(sql: "DELETE FROM delayed WHERE id = ?", arguments: [id]) }
        }
    }

    public func expire(now: Date) async throws -> Int {
        try await write { db, context in
            let rows = try Row.fetchAll(
                db, sql: "SELECT \(NotificationColumns.list) FROM notifications WHERE deleted = 0 AND expires <= ? ORDER BY expires LIMIT 5000",
                arguments: [ISOTime.millis(now)]
            ).map { try Self.stored($0) }
            for row in rows {
                try Self.save(NotificationRules.deleted(row, now: now, seq: context.nextSeq(for: row.userId)), db)
            }
            return rows.count
        }
    }

    public func purgeHistory(before: Date) async throws {
        try await write { db, _ in
            let cutoff = ISOTime.millis(before)
            try db.execute(
                sql: """
                    UPDATE users SET purged_through = max(purged_through, (
                        SELECT max(seq) FROM notifications n WHERE n.user_id = users.id AND n.deleted = 1 AND n.modified < ?))
                    WHERE id IN (SELECT user_id FROM notifications WHERE deleted = 1 AND modified < ?)
                    """, arguments: [cutoff, cutoff])
            try db.execute(sql: "DELETE FROM notifications WHERE deleted = 1 AND modified < ?", arguments: [cutoff])
            try db.execute(sql: "DELETE FROM mutations WHERE created < ?", arguments: [cutoff])
            try db.execute(sql: "DELETE FROM tokens WHERE expires < ?", arguments: [cutoff])
            // Escalations logged, and what targets were sent, of notifications long gone (PROTOCOL.md §11).
            try db.execute(sql: "DELETE FROM escalation_log WHERE at < ?", arguments: [cutoff])
            try db.execute(sql: "DELETE FROM action_runs WHERE at < ? AND status <> 'running'", arguments: [cutoff])
            try db.execute(
                sql: "DELETE FROM escalation_sent WHERE NOT EXISTS (SELECT 1 FROM notifications n WHERE n.id = escalation_sent.notification_id)")
        }
    }

    // MARK: - Notification reads

    public func notification(id: String, userId: String) async throws -> UserNotification? {
        try await read { db in
            try Self.fetchStored(db, sql: Self.byIdForReaderSQL, [id, userId])?.notification
        }
    }

    public func changes(userId: String, since: Int64, limit: Int, historyFrom: Int64?) async throws -> ChangeFeedPage? {
        try await read { db in
            let purged = try Self.purgedThrough(db, userId: userId)
            if let historyFrom { if purged > historyFrom { return nil } } else if since > 0 && since < purged { return nil }
            // Each feed the user reads in its index's order, merged by SQLite (one IN over them
            // would sort every row of theirs for each page); only the page's rows are decoded.
            let owners = try Self.ownerIds(db, userId: userId)
            var arguments = StatementArguments()
            for owner in owners { arguments += [owner, since, limit + 1] }
            arguments += [limit + 1]
            let rows = try Row.fetchAll(db.cachedStatement(sql: Self.feedPageSQL(feeds: owners.count)), arguments: arguments).map {
                try Self.stored($0)
            }
            let page = rows.prefix(limit)
            let hasMore = rows.count > limit
            // Preferences share the positions: those up to the page's end (all, on the last page).
            let preferences = try Self.preferencesChanged(db, userId: userId, since: since, through: hasMore ? page.last?.seq : nil)
            // The last page ends at least where the history starts: a device that has read it all
            // is not behind a start that moved past its newest row (a member who left a team).
            let lastSeq = max(page.last?.seq ?? max(since, purged), hasMore ? 0 : max(preferences.lastSeq ?? 0, purged))
            return ChangeFeedPage(
                changes: page.map(\.notification), lastSeq: lastSeq, hasMore: hasMore, preferences: preferences.entries, historyStart: purged)
        }
    }

    /// A page of `feeds` feeds after a position: for each, `user_id`, `since` and the limit; then
    /// the limit of the whole.
    static func feedPageSQL(feeds: Int) -> String {
        let one = "SELECT \(NotificationColumns.list) FROM notifications WHERE user_id = ? AND seq > ? ORDER BY seq LIMIT ?"
        return Array(repeating: "SELECT * FROM (\(one))", count: feeds).joined(separator: " UNION ALL ") + " ORDER BY seq LIMIT ?"
    }

    public func latestSeq(userId: String) async throws -> Int64 {
        try await read { db in
            let newest =
                try Int64.fetchOne(
                    db,
                    sql: """
                        SELECT max(coalesce((SELECT max(m) FROM (SELECT (SELECT max(seq) FROM notifications n WHERE n.user_id = o.id) AS m FROM \(Self.ownerRows("?1")) o)), 0),
                                   coalesce((SELECT max(seq) FROM preferences WHERE user_id IN \(Self.owners("?1"))), 0))
                        """, arguments: [userId]) ?? 0
            let purged = try Self.purgedThrough(db, userId: userId)
            return max(newest, purged)
        }
    }

    public func highestSeq() async throws -> Int64 {
        writer.committedSeq
    }

    public func list(userId: String, view: NotificationView, top: Int, skip: Int, search: SearchQuery?, now: Date) async throws
        -> [UserNotification]
    {
        try await read { db in
            let owners = try Self.ownerIds(db, userId: userId)
            // A search reads the rows its words find when they are few; when they are many, a
            // window near the top is first looked for by a walk over the feed's newest rows.
            // The query's words as the index is asked for them, looked up once for every read below.
            let words = SQLiteSearch.expansion(db)
            let plan = try search.map { try SQLiteSearch.plan(db, $0, words: words) } ?? .automatic
            let walks = plan == .matchSet && top + skip <= SQLiteSearch.walkedWindow
            // One feed: a window of its index. Several: each one's first rows up to the window's
            // end, merged in the view's order.
            let rows = try owners.flatMap { owner in
                let (limit, offset) = owners.count == 1 ? (top, skip) : (top + skip, 0)
                if walks {
                    var walked = try Self.window(
                        db, owner: owner, view: view, limit: limit, offset: offset, search: search, plan: .walk(rows: SQLiteSearch.firstWalk),
                        words: words, now: now)
                    if walked.count == limit { return walked }
                    // Part of a window: as far again as its rows say the rest is, when that is near.
                    if let rows = SQLiteSearch.longerWalk(found: walked.count, wanted: limit, offset: offset) {
                        walked = try Self.window(
                            db, owner: owner, view: view, limit: limit, offset: offset, search: search, plan: .walk(rows: rows), words: words,
                            now: now)
                        if walked.count == limit { return walked }
                    }
                }
                return try Self.window(db, owner: owner, view: view, limit: limit, offset: offset, search: search, plan: plan, words: words, now: now)
            }
            guard owners.count > 1 else { return rows }
            let ordered = rows.sorted { ($0.createdDateTime, $0.id) > ($1.createdDateTime, $1.id) }
            return Array(ordered.dropFirst(skip).prefix(top))
        }
    }

    /// Rows `offset..<offset + limit` of `owner`'s feed in `view`, with `search` read by `plan`.
    static func window(
        _ db: Database, owner: String, view: NotificationView, limit: Int, offset: Int, search: SearchQuery?, plan: SQLiteSearch.Plan,
        words: @escaping (String) -> String, now: Date
    ) throws -> [UserNotification] {
        var arguments: StatementArguments = [owner, ISOTime.millis(now), limit, offset]
        var matching = ""
        if let search {
            if case .walk(let rows) = plan {
                // The walk's end: the `created` of the feed's row `rows` (read from the view's
                // index alone), so that SQLite steps over no more rows than that.
                let end = try Int64.fetchOne(
                    db.cachedStatement(
                        sql:
                            "SELECT created FROM notifications INDEXED BY notifications_view WHERE user_id = ? AND deleted = 0 ORDER BY created DESC, id DESC LIMIT 1 OFFSET ?"
                    ), arguments: [owner, rows])
                matching = " AND created >= ?5"
                arguments += [end ?? Int64.min]
            }
            // The search: its text from the full-text index (or matched row by row on a walk),
            // its other fields as conditions, numbered after the parameters above.
            let (conditions, more) = try searchConditions(
                db, search, plan: plan, words: words, now: "?2", first: matching.isEmpty ? 5 : 6, arguments: [])
            matching += conditions
            arguments += more
        }
        let sql = """
            SELECT \(NotificationColumns.list) FROM notifications\(plan.hint) WHERE user_id = ?1 AND deleted = 0 AND expires > ?2 AND \(view.sqlCondition(now: "?2"))\(matching)
            ORDER BY created DESC, id DESC LIMIT ?3 OFFSET ?4
            """
        // A search's text differs from one query to the next: its statement is not kept.
        let statement = try search == nil ? db.cachedStatement(sql: sql) : db.makeStatement(sql: sql)
        return try Row.fetchAll(statement, arguments: arguments).map { try stored($0).notification }
    }

    /// `search` as conditions on a `notifications` row (each after ` AND `), its parameters
    /// numbered from `first` (`now` the SQL of the current time), its values after `arguments`.
    static func searchConditions(
        _ db: Database, _ search: SearchQuery, plan: SQLiteSearch.Plan = .automatic, words: ((String) -> String)? = nil, now: String, first: Int,
        arguments: StatementArguments
    ) throws
        -> (String, StatementArguments)
    {
        let sql = SearchSQL(search, dialect: .sqlite, now: .expression(now), firstPlaceholder: first, word: words ?? SQLiteSearch.expansion(db)) {
            "?\($0)"
        }
        var matching = sql.conditions.map { " AND " + $0 }.joined()
        var arguments = arguments + sql.arguments
        if let (text, more) = SQLiteSearch.textCondition(
            sql, query: search.text, below: try SQLiteSearch.below(db), plan: plan, first: first + sql.values.count)
        {
            matching += " AND " + text
            arguments += more
        }
        return (matching, arguments)
    }

    public func appNotifications(userId: String, hostName: String, filter: AlertFilter, top: Int, skip: Int, oldestFirst: Bool, now: Date)
        async throws -> [UserNotification]
    {
        try await read { db in
            var arguments: StatementArguments = [userId, hostName, ISOTime.millis(now), top, skip]
            if let search = filter.search { arguments += [NotificationSearch.pattern(search)] }
            let order = oldestFirst ? "created ASC, id ASC" : "created DESC, id DESC"
            return try Row.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT \(NotificationColumns.list) FROM notifications
                        WHERE user_id = ?1 AND host_name = ?2 AND deleted = 0 AND expires > ?3\(filter.sqlConditions(like: "LIKE", placeholder: "?6"))
                        ORDER BY \(order) LIMIT ?4 OFFSET ?5
                        """),
                arguments: arguments
            ).map { try Self.stored($0).notification }
        }
    }

    /// The views counted one by one (All is the rows' count).
    static let countedViews: [NotificationView] = [.unread, .read, .activated, .dismissed, .snoozed]

    /// Without a search, the counts kept as data (``SQLiteCounts``); a search's are counted
    /// from the rows its index finds (a saved view's counts are not kept: a write would have to
    /// match every saved view of every member of the feed).
    public func counts(userId: String, now: Date, search: SearchQuery?) async throws -> ViewCounts {
        try await read { db in
            let nowMillis = ISOTime.millis(now)
            guard let search else { return try SQLiteCounts.counts(db, userId: userId, now: nowMillis) }
            let (matching, arguments) = try Self.searchConditions(db, search, now: "?1", first: 3, arguments: [nowMillis, userId])
            let row = try Row.fetchOne(
                db.makeStatement(
                    sql: """
                        SELECT
                          count(*) AS total,
                          \(Self.countedViews.map { "sum(CASE WHEN \($0.sqlCondition(now: "?1")) THEN 1 ELSE 0 END) AS \($0.rawValue)" }.joined(separator: ",\n"))
                        FROM notifications WHERE user_id IN \(Self.owners("?2")) AND deleted = 0 AND expires > ?1\(matching)
                        """), arguments: arguments)
            var counts = ViewCounts()
            counts.all = row?["total"] ?? 0
            for view in Self.countedViews { counts[view] = row?[view.rawValue] ?? 0 }
            return counts
        }
    }
}
