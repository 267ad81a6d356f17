import Foundation
import Logging
import NottyCore
import NottyRecords
import NottyService
import NottyStorageSupport
import PostgresNIO
import Synchronization

/// Notifications on PostgreSQL: their rows, publishing, state changes, held publishes, expiry,
/// the feed, counts (accounts and subscriptions: `PostgresAccounts.swift`).
extension PostgresStorage {
    static func stored(_ row: PostgresRow) throws -> StoredNotification {
        try NotificationColumns(PostgresColumns(row: row.makeRandomAccess())).stored
    }

    func fetchStored(_ connection: PostgresConnection, _ query: PostgresQuery) async throws -> [StoredNotification] {
        var rows: [StoredNotification] = []
        for try await row in try await connection.query(query, logger: logger) { rows.append(try Self.stored(row)) }
        return rows
    }

    static let columns = NotificationColumns.list

    /// Writes rows whole (insert, or replace by id) with one statement. Each id at most once
    /// (one statement cannot change a row twice).
    func save(_ rows: [StoredNotification], _ connection: PostgresConnection) async throws {
        guard !rows.isEmpty else { return }
        _ = try await connection.execute(FeedStatements.Save(rows: ColumnArrays(rows)), logger: logger)
    }

    func save(_ row: StoredNotification, _ connection: PostgresConnection) async throws {
        try await save([row], connection)
    }

    func activeRow(_ connection: PostgresConnection, userId: String, hostName: String, appNotificationId: String) async throws -> StoredNotification?
    {
        try await fetchStored(
            connection,
            """
            SELECT \(unescaped: Self.columns) FROM notifications
            WHERE user_id = \(userId) AND lower(host_name) = lower(\(hostName)) AND app_notification_id = \(appNotificationId) AND NOT deleted
            """
        ).first
    }

    // MARK: - Notification writes

    public func publish(_ input: PublishInput) async throws -> UserNotification {
        try await publish(batch: [input])[0]
    }

    public func publish(batch inputs: [PublishInput]) async throws -> [UserNotification] {
        guard let user = inputs.first?.userId else { return [] }
        // Each input's new row is built here and inserted by the batch's one statement unless
        // the app has an active notification with its id; only then is it a re-publish here.
        // Positions: one for the new row; a re-publish draws two more (a tombstone, then the
        // row), still under the batch's locks.
        let fresh = inputs.map { NotificationRules.published($0, existing: nil, newId: Identifiers.notification(), seq: 0) }
        // swift-format-ignore: OnlyOneTrailingClosureArgument
        return try await groupedFeedWrite(
            user: user, positions: inputs.count, fresh: fresh, written: { fresh.map(\.notification) }
        ) { connection, context, inserted in
            var published: [UserNotification] = []
            for (input, new) in zip(inputs, fresh) {
                if inserted[new.notification.id] != nil {
                    published.append(new.notification)
                    continue
                }
                let active = try await self.activeRow(
                    connection, userId: input.userId, hostName: input.hostName, appNotificationId: input.request.appNotificationId)
                try await self.reserveMore(2, context, connection)
                let rows = NotificationRules.publishRows(input, active: active, newId: new.notification.id) { context.nextSeq(for: input.userId) }
                try await self.save(rows, connection)
                published.append(rows[rows.count - 1].notification)
            }
            return published
        }
    }

    public func notification(userId: String, hostName: String, appNotificationId: String) async throws -> UserNotification? {
        try await run { connection in
            try await self.activeRow(connection, userId: userId, hostName: hostName, appNotificationId: appNotificationId)?.notification
        }
    }

    public func edit(
        userId: String, hostName: String, appNotificationId: String, now: Date,
        _ change: @escaping @Sendable (UserNotification) -> UserNotification?
    ) async throws -> UserNotification? {
        try await groupedFeedWrite(user: userId, positions: 1) { connection, context in
            guard let row = try await self.activeRow(connection, userId: userId, hostName: hostName, appNotificationId: appNotificationId),
                let changed = change(row.notification)
            else { return nil }
            let edited = NotificationRules.edited(row, to: changed, now: now, seq: context.nextSeq(for: userId))
            try await self.save(edited, connection)
            return edited.notification
        }
    }

    public func deleteByApp(userId: String, hostName: String, appNotificationId: String, now: Date) async throws -> Bool {
        try await groupedFeedWrite(user: userId, positions: 1) { connection, context in
            guard let row = try await self.activeRow(connection, userId: userId, hostName: hostName, appNotificationId: appNotificationId) else {
                return false
            }
            try await self.save(NotificationRules.deleted(row, now: now, seq: context.nextSeq(for: userId)), connection)
            return row.notification.expirationDateTime > now
        }
    }

    public func mutate(userId: String, mutations: [Mutation], now: Date) async throws -> [MutationResult] {
        try await groupedMutations(user: userId, mutations: mutations, now: now)
    }

    /// Applies the mutations of several jobs (of one or many users, whose feeds are locked) with
    /// a fixed number of statements: their rows and their earlier `mutationId`s read with one
    /// statement each, every job applied in order on those rows in memory (a job that fails
    /// leaves them as they were and fails alone), then the rows written with one upsert and
    /// the new `mutationId` records with one insert.
    func applyMutations(_ jobs: [(user: String, work: BatchedMutations)], _ context: WriteContext, _ connection: PostgresConnection) async throws {
        guard !jobs.isEmpty else { return }
        let users = Array(Set(jobs.map(\.user)))
        let ids = Array(Set(jobs.flatMap { $0.work.list.map(\.id) }))
        let mutationIds = Array(Set(jobs.flatMap { $0.work.list.compactMap(\.mutationId) }))
        var rows: [String: StoredNotification] = [:]
        for row in try await fetchStored(
            connection,
            """
            SELECT \(unescaped: Self.columns) FROM notifications WHERE id = ANY(\(ids)) AND user_id = ANY(\(users)) FOR UPDATE
            """)
        {
            rows[row.notification.id] = row
        }
        var prior: [BufferedRowStore.Key: Int] = [:]
        if !mutationIds.isEmpty {
            for (user, mutationId, status) in try await connection.query(
                "SELECT user_id, mutation_id, status FROM mutations WHERE user_id = ANY(\(users)) AND mutation_id = ANY(\(mutationIds))",
                logger: logger
            ).collect((String, String, Int32).self) {
                prior[.init(user: user, mutationId: mutationId)] = Int(status)
            }
        }
        let buffer = BufferedRowStore(rows: rows, priorMutations: prior)
        for (user, work) in jobs {
            let before = buffer.state
            do {
                work.complete(
                    .success(try work.list.map { try MutationApplier.apply($0, userId: user, now: work.now, context: context, store: buffer) }))
            } catch {
                buffer.state = before
                work.complete(.failure(error))
            }
        }
        try await save(buffer.state.savedOrder.compactMap { buffer.state.rows[$0] }, connection)
        let recorded = buffer.state.recorded
        if !recorded.isEmpty {
            try await connection.exec(
                """
                INSERT INTO mutations (user_id, mutation_id, notification_id, status, created)
                SELECT * FROM unnest(\(recorded.map(\.userId))::text[], \(recorded.map(\.mutationId))::text[], \(recorded.map(\.notificationId))::text[],
                                     \(recorded.map { Int32($0.status) })::integer[], \(recorded.map(\.created))::bigint[])
                ON CONFLICT DO NOTHING
                """,
                logger: logger)
        }
    }

    public func insertDelayed(_ record: DelayedRecord) async throws {
        try await execute(
            """
            INSERT INTO delayed (id, user_id, subscription_id, host_name, due_at, body, created_at)
            VALUES (\(record.id), \(record.userId), \(record.subscriptionId), \(record.hostName), \(ISOTime.millis(record.dueAt)), \(record.body),
                    \(ISOTime.millis(record.createdAt)))
            """)
    }

    public func claimDueDelayed(now: Date, lease: Date, limit: Int) async throws -> [DelayedRecord] {
        let at = ISOTime.millis(now)
        return try await run { connection in
            var records: [DelayedRecord] = []
            // SKIP LOCKED: instances sweeping at once each claim different rows.
            let rows = try await connection.query(
                """
                UPDATE delayed SET claimed_until = \(ISOTime.millis(lease))
                WHERE id IN (SELECT id FROM delayed WHERE due_at <= \(at) AND claimed_until <= \(at) ORDER BY due_at LIMIT \(limit) FOR UPDATE SKIP LOCKED)
                RETURNING id, user_id, subscription_id, host_name, due_at, body, created_at
                """, logger: self.logger)
            for try await (id, userId, subscriptionId, hostName, due, body, created) in rows.decode(
                (String, String, String, String, Int64, String, Int64).self)
            {
                records.append(
                    DelayedRecord(
                        id: id, userId: userId, subscriptionId: subscriptionId, hostName: hostName, dueAt: ISOTime.date(millis: due),
                        body: body, createdAt: ISOTime.date(millis: created)))
            }
            return records.sorted { $0.dueAt < $1.dueAt }
        }
    }

    public func deleteDelayed(ids: [String]) async throws {
        guard !ids.isEmpty else { return }
        try await execute("DELETE FROM delayed WHERE id = ANY(\(ids))")
    }

    public func expire(now: Date) async throws -> Int {
        let nowMillis = ISOTime.millis(now)
        // Whose notifications have expired, and how many (at most 5,000 a sweep).
        let due = try await run { connection in
            try await connection.query(
                """
                SELECT user_id, count(*) FROM notifications WHERE NOT deleted AND expires <= \(nowMillis)
                GROUP BY user_id ORDER BY user_id LIMIT 500
                """,
                logger: self.logger
            ).collect((String, Int64).self)
        }
        guard !due.isEmpty else { return 0 }
        let users = due.map(\.0)
        let limit = Int(min(due.reduce(0) { $0 + $1.1 }, 5000))
        return try await feedWrite(users: users, positions: limit) { connection, context in
            // Read again under the lock; no more rows than positions were reserved.
            let rows = try await self.fetchStored(
                connection,
                """
                SELECT \(unescaped: Self.columns) FROM notifications
                WHERE NOT deleted AND expires <= \(nowMillis) AND user_id = ANY(\(users)) ORDER BY expires LIMIT \(Int64(limit))
                """)
            try await self.save(rows.map { NotificationRules.deleted($0, now: now, seq: context.nextSeq(for: $0.userId)) }, connection)
            return rows.count
        }
    }

    public func purgeHistory(before: Date) async throws {
        let cutoff = ISOTime.millis(before)
        try await transaction { connection in
            try await connection.exec(
                """
                UPDATE users SET purged_through = greatest(purged_through, gone.newest)
                FROM (SELECT user_id, max(seq) AS newest FROM notifications WHERE deleted AND modified < \(cutoff) GROUP BY user_id) AS gone
                WHERE users.id = gone.user_id
                """,
                logger: self.logger)
            try await connection.exec("DELETE FROM notifications WHERE deleted AND modified < \(cutoff)", logger: self.logger)
            try await connection.exec("DELETE FROM mutations WHERE created < \(cutoff)", logger: self.logger)
            try await connection.exec("DELETE FROM tokens WHERE expires < \(cutoff)", logger: self.logger)
            // Escalations logged, and tracks, of notifications long gone (PROTOCOL.md §11).
            try await connection.exec("DELETE FROM escalation_log WHERE at < \(cutoff)", logger: self.logger)
            try await connection.exec("DELETE FROM action_runs WHERE at < \(cutoff) AND status <> 'running'", logger: self.logger)
            try await connection.exec(
                "DELETE FROM escalation_sent s WHERE NOT EXISTS (SELECT 1 FROM notifications n WHERE n.id = s.notification_id)", logger: self.logger)
        }
    }

    // MARK: - Notification reads

    public func notification(id: String, userId: String) async throws -> UserNotification? {
        try await run { connection in
            try await self.fetchStored(
                connection,
                """
                SELECT \(unescaped: Self.columns) FROM notifications WHERE id = \(id)
                AND user_id IN (SELECT \(userId)::text UNION ALL SELECT team_id FROM team_members WHERE user_id = \(userId))
                """
            ).first?.notification
        }
    }

    public func changes(userId: String, since: Int64, limit: Int, historyFrom: Int64?) async throws -> ChangeFeedPage? {
        try await run { connection in
            // The user's feed and their teams' (PROTOCOL.md §13.1), each in its index's order, merged.
            // One round trip for both: the feeds the user reads and the start of their history.
            let found: [([String]?, Int64)] =
                try await connection.query(
                    """
                    SELECT array_agg(id ORDER BY id <> \(userId)), coalesce(max(purged_through), 0) FROM users
                    WHERE id IN (SELECT \(userId)::text UNION ALL SELECT team_id FROM team_members WHERE user_id = \(userId))
                    """, logger: self.logger
                ).collect(([String]?, Int64).self)
            let owners = found.first?.0 ?? [userId]
            let purged = found.first?.1 ?? 0
            if let historyFrom { if purged > historyFrom { return nil } } else if since > 0 && since < purged { return nil }
            // Each feed in its index's order, merged by PostgreSQL (a Merge Append under the limit).
            var binds = PostgresBindings()
            binds.append(since)
            binds.append(Int64(limit + 1))
            for owner in owners { binds.append(owner) }
            let arms = owners.indices.map {
                "(SELECT \(Self.columns) FROM notifications WHERE user_id = $\($0 + 3) AND seq > $1 ORDER BY seq LIMIT $2)"
            }
            // One feed: its own statement (a single parenthesised arm may not take a second ORDER BY).
            let sql =
                arms.count == 1
                ? "SELECT \(Self.columns) FROM notifications WHERE user_id = $3 AND seq > $1 ORDER BY seq LIMIT $2"
                : arms.joined(separator: " UNION ALL ") + " ORDER BY seq LIMIT $2"
            let rows = try await self.fetchStored(connection, PostgresQuery(unsafeSQL: sql, binds: binds))
            let page = rows.prefix(limit)
            let hasMore = rows.count > limit
            // Preferences share the positions: those up to the page's end (all, on the last page).
            let preferences = try await self.preferencesChanged(connection, userId: userId, since: since, through: hasMore ? page.last?.seq : nil)
            // The last page ends at least where the history starts (see SQLiteStorage).
            let lastSeq = max(page.last?.seq ?? max(since, purged), hasMore ? 0 : max(preferences.lastSeq ?? 0, purged))
            return ChangeFeedPage(
                changes: page.map(\.notification), lastSeq: lastSeq, hasMore: hasMore, preferences: preferences.entries, historyStart: purged)
        }
    }

    public func latestSeq(userId: String) async throws -> Int64 {
        try await run { connection in
            try await connection.query(
                """
                WITH o AS (SELECT \(userId)::text AS id UNION ALL SELECT team_id FROM team_members WHERE user_id = \(userId))
                SELECT greatest(coalesce((SELECT max(m) FROM (SELECT (SELECT max(seq) FROM notifications n WHERE n.user_id = o.id) AS m FROM o) x), 0),
                                coalesce((SELECT max(seq) FROM preferences WHERE user_id IN (SELECT id FROM o)), 0),
                                coalesce((SELECT max(purged_through) FROM users WHERE id IN (SELECT id FROM o)), 0))
                """,
                logger: self.logger
            ).collect(Int64.self).first ?? 0
        }
    }

    public func highestSeq() async throws -> Int64 {
        try await run { connection in
            try await connection.query("SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM notty_seq", logger: self.logger)
                .collect(Int64.self).first ?? 0
        }
    }

    public func list(userId: String, view: NotificationView, top: Int, skip: Int, search: SearchQuery?, now: Date) async throws
        -> [UserNotification]
    {
        try await run { connection in
            // One feed: a window of its index. Several (the user's teams'): each one's first rows
            // up to the window's end, merged in the view's order.
            let owners = try await self.ownerIds(connection, userId: userId)
            var rows: [UserNotification] = []
            for owner in owners {
                let (limit, offset) = owners.count == 1 ? (top, skip) : (top + skip, 0)
                if let search {
                    rows += try await self.search(connection, owner: owner, view: view, search: search, limit: limit, skip: offset, now: now)
                    continue
                }
                var binds = PostgresBindings()
                binds.append(owner)
                binds.append(ISOTime.millis(now))
                binds.append(Int64(limit))
                binds.append(Int64(offset))
                let query = PostgresQuery(
                    unsafeSQL: """
                        SELECT \(Self.columns) FROM notifications WHERE user_id = $1 AND NOT deleted AND expires > $2 AND \(view.sqlCondition(now: "$2"))
                        ORDER BY created DESC, id DESC LIMIT $3 OFFSET $4
                        """, binds: binds)
                rows += try await self.fetchStored(connection, query).map(\.notification)
            }
            guard owners.count > 1 else { return rows }
            let ordered = rows.sorted { ($0.createdDateTime, $0.id) > ($1.createdDateTime, $1.id) }
            return Array(ordered.dropFirst(skip).prefix(top))
        }
    }

    public func appNotifications(userId: String, hostName: String, filter: AlertFilter, top: Int, skip: Int, oldestFirst: Bool, now: Date)
        async throws -> [UserNotification]
    {
        var binds = PostgresBindings()
        binds.append(userId)
        binds.append(hostName)
        binds.append(ISOTime.millis(now))
        binds.append(Int64(top))
        binds.append(Int64(skip))
        if let search = filter.search { binds.append(NotificationSearch.pattern(search)) }
        let order = oldestFirst ? "created ASC, id ASC" : "created DESC, id DESC"
        let query = PostgresQuery(
            unsafeSQL: """
                SELECT \(Self.columns) FROM notifications
                WHERE user_id = $1 AND host_name = $2 AND NOT deleted AND expires > $3\(filter.sqlConditions(like: "ILIKE", placeholder: "$6"))
                ORDER BY \(order) LIMIT $4 OFFSET $5
                """, binds: binds)
        return try await run { connection in try await self.fetchStored(connection, query).map(\.notification) }
    }

    /// Without a search, the counts kept as data (``keptCountsMigration``); a search's are
    /// counted from the rows its index finds.
    public func counts(userId: String, now: Date, search: SearchQuery?) async throws -> ViewCounts {
        if let search { return try await searchCounts(userId: userId, now: now, search: search) }
        return try await run { connection in try await self.keptCounts(connection, userId: userId, now: ISOTime.millis(now)) }
    }
}

/// The rows of a batch of mutations (of one or many users), read up front, for
/// ``MutationApplier`` (which is synchronous); what it saves and records is written back
/// afterwards. Its whole ``state`` is a value: kept before a job, put back if the job fails.
final class BufferedRowStore: MutationRowStore {
    struct Key: Hashable {
        let user: String, mutationId: String
    }

    struct State {
        var rows: [String: StoredNotification]
        var priorMutations: [Key: Int]
        /// Ids of the rows to write, in the order first saved.
        var savedOrder: [String] = []
        var saved: Set<String> = []
        var recorded: [(userId: String, mutationId: String, notificationId: String, status: Int, created: Int64)] = []
    }

    var state: State

    init(rows: [String: StoredNotification], priorMutations: [Key: Int]) {
        state = State(rows: rows, priorMutations: priorMutations)
    }

    func row(id: String, userId: String) throws -> StoredNotification? {
        state.rows[id].flatMap { $0.userId == userId ? $0 : nil }
    }

    func save(_ row: StoredNotification) throws {
        if state.saved.insert(row.notification.id).inserted { state.savedOrder.append(row.notification.id) }
        state.rows[row.notification.id] = row
    }

    func priorMutation(userId: String, mutationId: String) throws -> Int? {
        state.priorMutations[Key(user: userId, mutationId: mutationId)]
    }

    func recordMutation(userId: String, mutationId: String, notificationId: String, status: Int, now: Date) throws {
        let key = Key(user: userId, mutationId: mutationId)
        guard state.priorMutations[key] == nil else { return }
        state.priorMutations[key] = status
        state.recorded.append((userId, mutationId, notificationId, status, ISOTime.millis(now)))
    }
}

extension PostgresConnection {
    /// Runs a statement whose rows (if any) are not wanted, and reads them to the end.
    func exec(_ query: PostgresQuery, logger: Logger) async throws {
        for try await _ in try await self.query(query, logger: logger) {}
    }
}

extension PostgresRowSequence {
    /// Every row decoded as the given column type, or tuple of them.
    func collect<each Column: PostgresDecodable & Sendable>(_ types: (repeat each Column).Type) async throws -> [(repeat each Column)] {
        var values: [(repeat each Column)] = []
        for try await value in decode(types) { values.append(value) }
        return values
    }
}

/// A PostgreSQL row read by position.
private struct PostgresColumns: ColumnReader {
    let row: PostgresRandomAccessRow
    func text(_ index: Int) throws -> String { try row[index].decode(String.self) }
    func optionalText(_ index: Int) throws -> String? { try row[index].decode(String?.self) }
    func integer(_ index: Int) throws -> Int64 { try row[index].decode(Int64.self) }
    func optionalInteger(_ index: Int) throws -> Int64? { try row[index].decode(Int64?.self) }
    func flag(_ index: Int) throws -> Bool { try row[index].decode(Bool.self) }
}

/// A row's values as PostgreSQL binds them.
struct PostgresValues: ColumnWriter {
    var binds = PostgresBindings(capacity: NotificationColumns.names.count)
    mutating func text(_ value: String?) { binds.append(value) }
    mutating func integer(_ value: Int64?) { binds.append(value) }
    mutating func flag(_ value: Bool) { binds.append(value) }
}
