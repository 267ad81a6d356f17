import Foundation
import GRDB
import NottyCore

// MARK: - Reading

extension LocalStore {
    static let columns = """
        id, app_notification_id, app, group_name, priority, title, body, raw_content, ttl, policies,
        created, expires, modified, read_state, action_state, snoozed_until, launch_url
        """

    /// Reads rows of ``columns`` by position (a name lookup per column and row costs more
    /// than the rest of the read). Rows often share their policies: each text is parsed once.
    struct RowReader {
        private var policies: [String: JSONValue] = [:]

        mutating func notification(_ row: Row) -> UserNotification {
            let title: String? = row[5]
            var targetPolicy: JSONValue?
            var fallbackPolicy: JSONValue?
            var escalations: [EscalationRecord]?
            var actions: [NotificationAction]?
            var actionResults: [ActionResult]?
            var team: String?
            var changedBy: ChangedBy?
            if let text: String = row[9] {
                let value = policies[text] ?? JSONValue(jsonText: text) ?? .null
                if policies.count < 64 { policies[text] = value }
                if case .object(let object) = value {
                    targetPolicy = object["targetPolicy"]
                    fallbackPolicy = object["fallbackPolicy"]
                    escalations = EscalationRecord.list(object["escalations"])
                    actions = NotificationAction.list(object["actions"])
                    actionResults = ActionResult.list(object["actionResults"])
                    if case .string(let name)? = object["team"] { team = name }
                    changedBy = ChangedBy(object["changedBy"])
                }
            }
            return UserNotification(
                id: row[0], appNotificationId: row[1], targetHostName: row[2],
                groupName: row[3], priority: Priority(spelling: row[4]) ?? .none,
                payload: NotificationPayload(
                    rawContent: row[7],
                    visualContent: title.map { VisualContent(title: $0, body: row[6]) }),
                displayTimeToLive: row[8],
                expirationDateTime: ISOTime.date(millis: row[11]),
                createdDateTime: ISOTime.date(millis: row[10]),
                lastModifiedDateTime: ISOTime.date(millis: row[12]),
                readState: ReadState(spelling: row[13]) ?? .unread,
                userActionState: UserActionState(spelling: row[14]) ?? .noInteraction,
                snoozedUntil: (row[15] as Int64?).map(ISOTime.date(millis:)),
                targetPolicy: targetPolicy, fallbackPolicy: fallbackPolicy, launchUrl: row[16], escalations: escalations,
                actions: actions, actionResults: actionResults, team: team, changedBy: changedBy)
        }
    }

    /// The notifications a statement of ``columns`` selects, in its order.
    static func notifications(_ statement: Statement, arguments: StatementArguments) throws -> [UserNotification] {
        var reader = RowReader()
        var result: [UserNotification] = []
        let rows = try Row.fetchCursor(statement, arguments: arguments)
        while let row = try rows.next() { result.append(reader.notification(row)) }
        return result
    }

    /// One notification as shown (service state plus pending changes), if it is in the store
    /// and not deleted locally. Expired ones are returned too; callers check `isLive`.
    @available(
        *, noasync, message: "blocks on SQLite: call it inside `await store.perform { … }` (a thread of its own), never on Swift's cooperative pool"
    )
    public func notification(id: String) throws -> UserNotification? {
        try database.read { db in
            try Self.notifications(db.cachedStatement(sql: "SELECT \(Self.columns) FROM notifications WHERE id = ? AND hidden = 0"), arguments: [id])
                .first
        }
    }

    /// The full id for `text`: an id, or a unique prefix of at least 6 characters.
    @available(
        *, noasync, message: "blocks on SQLite: call it inside `await store.perform { … }` (a thread of its own), never on Swift's cooperative pool"
    )
    public func resolve(_ text: String) throws -> String {
        let text = text.trimmingCharacters(in: .whitespaces).lowercased()
        guard text.count >= 6 else { throw StoreError.tooShort(text) }
        let escaped = likeEscaped(text)
        let ids = try database.read { db in
            try String.fetchAll(
                db, sql: "SELECT id FROM notifications WHERE hidden = 0 AND (id = ? OR id LIKE ? ESCAPE '\\') LIMIT 2",
                arguments: [text, escaped + "%"])
        }
        if ids.contains(text) { return text }
        guard let id = ids.first else { throw StoreError.notFound(text) }
        guard ids.count == 1 else { throw StoreError.ambiguous(text) }
        return id
    }

    /// The rows of one view at `now` that match `query` (title, body, app, group; empty: all),
    /// newest first, `limit` rows from `offset`. Without a query the first row is found from
    /// the block counts (``ViewIndex``) wherever it is in the view. With one, the rows' keys
    /// are stepped over in an index, from whichever end of the matches is nearer when `total`
    /// (their number) is given. Only the returned rows are read from the table.
    @available(
        *, noasync, message: "blocks on SQLite: call it inside `await store.perform { … }` (a thread of its own), never on Swift's cooperative pool"
    )
    public func window(view: NotificationView, query: String = "", offset: Int = 0, limit: Int, total: Int? = nil, now: Date = Date()) throws
        -> [UserNotification]
    {
        try database.read { db in try window(db, view: view, query: query, offset: offset, limit: limit, total: total, now: now) }
    }

    func window(_ db: Database, view: NotificationView, query: String, offset: Int, limit: Int, total: Int?, now: Date) throws -> [UserNotification] {
        guard limit > 0, offset >= 0 else { return [] }
        if ViewFilter.isEmpty(query) {
            let index = try ViewIndex(db, view: view, now: now)
            guard let start = try index.start(of: offset) else { return [] }
            return try Self.rows(db, index.branches, below: start.below, skip: start.skip, limit: limit, descending: true)
        }
        if let keys = try searchKeys(db, query: query, view: view, now: now) {
            return try Self.rows(db, rowids: keys.dropFirst(offset).prefix(limit).map(\.rowid))
        }
        let branches = try self.branches(db, view, now: now, query: query)
        // Nearer the end: the same rows, counted from the end in ascending order.
        if let total, offset > total - offset - limit {
            let end = min(offset + limit, total)
            guard end > offset else { return [] }
            return try Self.rows(db, branches, below: nil, skip: total - end, limit: end - offset, descending: false)
        }
        return try Self.rows(db, branches, below: nil, skip: offset, limit: limit, descending: true)
    }

    /// `limit` rows of `branches` (created before `below`, when given) after skipping `skip`
    /// of them in the given order, returned newest first. Their keys come from an index alone.
    static func rows(_ db: Database, _ branches: [ViewFilter.Branch], below: Int64?, skip: Int, limit: Int, descending: Bool) throws
        -> [UserNotification]
    {
        let direction = descending ? "DESC" : "ASC"
        let order = "ORDER BY created \(direction), id \(direction)"
        let bound = below == nil ? "" : " AND created < ?"
        let boundArguments: StatementArguments = below.map { [$0] } ?? []
        let keys: String
        let arguments: StatementArguments
        if branches.count == 1 {
            keys = "SELECT rowid AS rid FROM notifications WHERE \(branches[0].sql)\(bound) \(order) LIMIT ? OFFSET ?"
            arguments = branches[0].arguments + boundArguments
        } else {
            let parts = branches.map {
                "SELECT * FROM (SELECT rowid AS rid, created, id FROM notifications WHERE \($0.sql)\(bound) \(order) LIMIT \(skip + limit))"
            }
            keys = "SELECT rid FROM (\(parts.joined(separator: " UNION ALL "))) \(order) LIMIT ? OFFSET ?"
            arguments = branches.reduce(StatementArguments()) { $0 + $1.arguments + boundArguments }
        }
        return try notifications(
            db.cachedStatement(sql: "SELECT \(columns) FROM notifications WHERE rowid IN (\(keys)) ORDER BY created DESC, id DESC"),
            arguments: arguments + [limit, skip])
    }

    /// The index ranges of `view` at `now` matching `query`. Unread and Read take the range of
    /// ended snoozes only while one of theirs has ended (one indexed look).
    func branches(_ db: Database, _ view: NotificationView, now: Date, query: String) throws -> [ViewFilter.Branch] {
        var branches = try ViewFilter.branches(view, now: now, query: query)
        guard branches.count > 1 else { return branches }
        let ended =
            try Bool.fetchOne(
                db.cachedStatement(
                    sql:
                        "SELECT EXISTS (SELECT 1 FROM notifications INDEXED BY notifications_snoozes WHERE bucket = 'snoozed' AND snoozed_until <= ? AND read_state = \(ViewFilter.readState(view)))"
                ),
                arguments: [ISOTime.millis(now)]) ?? false
        if !ended { branches.removeLast() }
        return branches
    }

    /// How many rows of `view` match `query` at `now`.
    @available(
        *, noasync, message: "blocks on SQLite: call it inside `await store.perform { … }` (a thread of its own), never on Swift's cooperative pool"
    )
    public func count(view: NotificationView, query: String = "", now: Date = Date()) throws -> Int {
        try database.read { db in
            try quickCount(db, view: view, query: query, now: now) ?? count(db, branches(db, view, now: now, query: query))
        }
    }

    func count(_ db: Database, _ branches: [ViewFilter.Branch], extra: String = "", extraArguments: StatementArguments = []) throws -> Int {
        var total = 0
        for branch in branches {
            total +=
                try Int.fetchOne(
                    db.cachedStatement(sql: "SELECT count(*) FROM notifications WHERE \(branch.sql) \(extra)"),
                    arguments: branch.arguments + extraArguments) ?? 0
        }
        return total
    }

    /// The index of notification `id` in `view` (newest first) or nil when it is not in it.
    @available(
        *, noasync, message: "blocks on SQLite: call it inside `await store.perform { … }` (a thread of its own), never on Swift's cooperative pool"
    )
    public func position(of id: String, view: NotificationView, query: String = "", now: Date = Date()) throws -> Int? {
        try database.read { db in try position(db, of: id, view: view, query: query, now: now) }
    }

    func position(_ db: Database, of id: String, view: NotificationView, query: String, now: Date) throws -> Int? {
        guard
            let row = try Row.fetchOne(
                db.cachedStatement(sql: "SELECT \(SearchKey.columns) FROM notifications WHERE id = ?"),
                arguments: [id])
        else { return nil }
        let key = SearchKey(row)
        let created = key.created
        if ViewFilter.isEmpty(query) {
            guard key.isIn(view, now: ISOTime.millis(now)) else { return nil }
            return try ViewIndex(db, view: view, now: now).rank(created: created, id: id)
        }
        if let keys = try searchKeys(db, query: query, view: view, now: now) {
            return keys.firstIndex { $0.id == id }
        }
        let branches = try branches(db, view, now: now, query: query)
        let inView = try count(db, branches, extra: "AND id = ?", extraArguments: [id])
        guard inView == 1 else { return nil }
        return try count(db, branches, extra: "AND (created > ? OR (created = ? AND id > ?))", extraArguments: [created, created, id])
    }

    /// The six counts at `now` (PROTOCOL.md §1: the first five add up to All): the largest block
    /// counts of each bucket, with expired rows and ended snoozes moved where they belong.
    @available(
        *, noasync, message: "blocks on SQLite: call it inside `await store.perform { … }` (a thread of its own), never on Swift's cooperative pool"
    )
    public func counts(now: Date = Date()) throws -> ViewCounts {
        try database.read { db in try counts(db, now: now) }
    }

    func counts(_ db: Database, now: Date, exceptions known: [ViewIndex.Exceptional]? = nil) throws -> ViewCounts {
        var counts = ViewCounts()
        if let row = try Row.fetchOne(
            db.cachedStatement(
                sql: "SELECT \(ViewIndex.buckets.map { "sum(\($0.rawValue))" }.joined(separator: ", ")) FROM view_blocks WHERE level = ?"),
            arguments: [ViewIndex.levels[0]])
        {
            for (index, view) in ViewIndex.buckets.enumerated() {
                let n = row[index] as Int? ?? 0
                counts[view] = n
                counts.all += n
            }
        }
        for exception in try known ?? ViewIndex.exceptions(db, now: now) {
            counts[exception.bucket ?? .all] -= 1
            counts.all -= 1
            if let view = exception.view {
                counts[view] += 1
                counts.all += 1
            }
        }
        return counts
    }

    /// The id of the next (`forward`: older) or previous Unread notification of `view` matching
    /// `query` after notification `id`, anywhere in the view; nil when there is none. One seek
    /// in the Unread rows' index per bucket the view takes rows from (the Read bucket has none).
    @available(
        *, noasync, message: "blocks on SQLite: call it inside `await store.perform { … }` (a thread of its own), never on Swift's cooperative pool"
    )
    public func nextUnread(view: NotificationView, query: String = "", after id: String, forward: Bool, now: Date = Date()) throws -> String? {
        try database.read { db in
            guard let created = try Int64.fetchOne(db.cachedStatement(sql: "SELECT created FROM notifications WHERE id = ?"), arguments: [id]) else {
                return nil
            }
            var branches: [ViewFilter.Branch]
            if view == .all {
                let millis = ISOTime.millis(now)
                branches = try ViewFilter.narrowed(
                    ["unread", "activated", "dismissed", "snoozed"].map {
                        ViewFilter.Branch(sql: "bucket = '\($0)' AND hidden = 0 AND expires > ?", arguments: [millis])
                    }, to: query, now: now)
            } else if view == .read {
                return nil
            } else {
                branches = try ViewFilter.branches(view, now: now, query: query)
            }
            let (comparison, order) = forward ? ("<", "DESC") : (">", "ASC")
            var best: (created: Int64, id: String)?
            for branch in branches {
                guard
                    let row = try Row.fetchOne(
                        db.cachedStatement(
                            sql: """
                                SELECT created, id FROM notifications INDEXED BY notifications_unread
                                WHERE \(branch.sql) AND read_state = 'Unread' AND (created, id) \(comparison) (?, ?)
                                ORDER BY created \(order), id \(order) LIMIT 1
                                """),
                        arguments: branch.arguments + [created, id])
                else { continue }
                let found: (created: Int64, id: String) = (row[0], row[1])
                if let current = best, forward ? found <= current : found >= current { continue }
                best = found
            }
            return best?.id
        }
    }

    /// Ids of every notification in `view` matching `query` (for `--all --view` and "mark all read").
    @available(
        *, noasync, message: "blocks on SQLite: call it inside `await store.perform { … }` (a thread of its own), never on Swift's cooperative pool"
    )
    public func ids(view: NotificationView, query: String = "", now: Date = Date()) throws -> [String] {
        try window(view: view, query: query, offset: 0, limit: Int(Int32.max), now: now).map(\.id)
    }

    /// The soonest future time at which a snooze ends or a notification expires: when views
    /// change by time alone.
    @available(
        *, noasync, message: "blocks on SQLite: call it inside `await store.perform { … }` (a thread of its own), never on Swift's cooperative pool"
    )
    public func nextTimedChange(after now: Date = Date()) throws -> Date? {
        try database.read { db in try nextTimedChange(db, after: now) }
    }

    func nextTimedChange(_ db: Database, after now: Date) throws -> Date? {
        let millis = ISOTime.millis(now)
        let snooze = try Int64.fetchOne(
            db.cachedStatement(
                sql:
                    "SELECT min(snoozed_until) FROM notifications INDEXED BY notifications_snoozes WHERE bucket = 'snoozed' AND snoozed_until > ? AND hidden = 0"
            ),
            arguments: [millis])
        let expiry = try Int64.fetchOne(
            db.cachedStatement(sql: "SELECT min(expires) FROM notifications WHERE expires > ? AND hidden = 0"), arguments: [millis])
        return [snooze, expiry].compactMap { $0 }.min().map(ISOTime.date(millis:))
    }

    /// Runs `body` with one read transaction of the store: everything it reads through the
    /// snapshot is of one revision, and it takes one reader once instead of once a read.
    @available(
        *, noasync, message: "blocks on SQLite: call it inside `await store.perform { … }` (a thread of its own), never on Swift's cooperative pool"
    )
    public func snapshot<T>(_ body: (StoreSnapshot) throws -> T) throws -> T {
        try database.read { db in try body(StoreSnapshot(store: self, db: db)) }
    }
}

/// The store's reads within one read transaction (``LocalStore/snapshot(_:)``); valid only
/// inside the closure it is given to.
public struct StoreSnapshot {
    let store: LocalStore
    let db: Database

    /// ``LocalStore/revision()``.
    public func revision() throws -> Int64 { try store.revision(db) }

    /// ``LocalStore/counts(now:)``.
    public func counts(now: Date) throws -> ViewCounts { try store.counts(db, now: now) }

    /// ``LocalStore/nextTimedChange(after:)``.
    public func nextTimedChange(after now: Date) throws -> Date? { try store.nextTimedChange(db, after: now) }

    /// ``LocalStore/position(of:view:query:now:)``.
    public func position(of id: String, view: NotificationView, query: String, now: Date) throws -> Int? {
        try store.position(db, of: id, view: view, query: query, now: now)
    }

    /// ``LocalStore/quickCount(view:query:now:)``.
    public func quickCount(view: NotificationView, query: String, now: Date) throws -> Int? {
        try store.quickCount(db, view: view, query: query, now: now)
    }

    /// ``LocalStore/window(view:query:offset:limit:total:now:)``.
    public func window(view: NotificationView, query: String, offset: Int, limit: Int, total: Int? = nil, now: Date) throws -> [UserNotification] {
        try store.window(db, view: view, query: query, offset: offset, limit: limit, total: total, now: now)
    }
}

/// SQL for "rows in view V at time T matching Q". Unread and Read are two index ranges each
/// (their own bucket, and snoozes that have ended); the others are one.
enum ViewFilter {
    struct Branch {
        var sql: String
        var arguments: StatementArguments
    }

    /// The bucket and the read state of a view are written into the SQL, not bound, so that
    /// each view's statements are planned knowing them (whether a partial index such as
    /// `… WHERE bucket = 'snoozed'` applies) once, when first prepared. Planning with a bound
    /// value is what made SQLite prepare these statements again on every run (see
    /// `QueryPlans`, which now keeps plans whatever is bound).
    static func literal(_ text: String) -> String {
        "'" + text.replacingOccurrences(of: "'", with: "''") + "'"
    }

    /// The read state (as SQL) of the ended snoozes an Unread or Read view takes.
    static func readState(_ view: NotificationView) -> String {
        literal(view == .unread ? ReadState.unread.rawValue : ReadState.read.rawValue)
    }

    /// Whether `query` searches for nothing (every row matches).
    static func isEmpty(_ query: String) -> Bool {
        query.trimmingCharacters(in: .whitespaces).isEmpty
    }

    static func branches(_ view: NotificationView, now: Date, query: String) throws -> [Branch] {
        try narrowed(branches(view, now: now), to: query, now: now)
    }

    /// The index ranges of `view` at `now`, every row of them.
    static func branches(_ view: NotificationView, now: Date) -> [Branch] {
        let millis = ISOTime.millis(now)
        let live = "hidden = 0 AND expires > ?"
        let branches: [Branch]
        switch view {
        case .all:
            branches = [Branch(sql: live, arguments: [millis])]
        case .activated, .dismissed:
            branches = [Branch(sql: "bucket = \(literal(view.rawValue)) AND \(live)", arguments: [millis])]
        case .snoozed:
            branches = [Branch(sql: "bucket = 'snoozed' AND snoozed_until > ? AND \(live)", arguments: [millis, millis])]
        case .unread, .read:
            branches = [
                Branch(sql: "bucket = \(literal(view.rawValue)) AND \(live)", arguments: [millis]),
                Branch(
                    sql: "bucket = 'snoozed' AND snoozed_until <= ? AND read_state = \(readState(view)) AND \(live)", arguments: [millis, millis]),
            ]
        }
        return branches
    }

    /// `branches` with the rows that match `query` only: one group's (``GroupQuery``, an
    /// exact key), or those the query language finds (``SearchFilter``).
    static func narrowed(_ branches: [Branch], to query: String, now: Date) throws -> [Branch] {
        guard !isEmpty(query) else { return branches }
        if let key = GroupQuery.key(in: query) {
            return branches.map { Branch(sql: $0.sql + " AND \(GroupQuery.sqlKey) = ?", arguments: $0.arguments + [key]) }
        }
        guard let filter = try SearchFilter(query, now: now) else { return branches }
        return branches.map { Branch(sql: $0.sql + " AND " + filter.condition, arguments: $0.arguments + filter.arguments) }
    }
}

/// A store error a user can act on.
public enum StoreError: Error, Equatable, CustomStringConvertible {
    case tooShort(String)
    /// A search the query language cannot read (PROTOCOL.md §17): what to write instead.
    case search(String)
    case notFound(String)
    case ambiguous(String)
    /// The file system of the store (this folder) is full: nothing was written.
    case diskFull(String)
    /// The store's file is damaged (SQLite finds it malformed, or not a database at all).
    case damaged(path: String, detail: String)
    /// The store was written by a newer build (`unknown`: its migrations this one does not know).
    case newer(path: String, unknown: [String], newestKnown: String)

    public var description: String {
        switch self {
        case .damaged(let path, let detail):
            "the local store at \(path) is damaged (\(detail)): run notty resync to rebuild it from the service (changes not sent yet are kept where they can be read)"
        case .newer(let path, let unknown, let newestKnown):
            "the local store at \(path) was written by a newer notty (it has \(unknown.map { "“\($0)”" }.joined(separator: ", ")); this one knows up to “\(newestKnown)”): use that one, or run notty resync to rebuild it for this one (changes not sent yet are kept)"
        case .diskFull(let directory): "no space left on device: \(directory) (the change was not saved)"
        case .search(let message): "search: \(message)"
        case .tooShort(let text): "'\(text)' is too short: give an id or at least its first 6 characters"
        case .notFound(let text): "no notification matches '\(text)' (see notty list --view all)"
        case .ambiguous(let text): "'\(text)' matches several notifications: give more characters"
        }
    }
}

/// `text` for a `LIKE … ESCAPE '\'` pattern: its `\`, `%` and `_` match themselves.
func likeEscaped(_ text: String) -> String {
    text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "%", with: "\\%").replacingOccurrences(of: "_", with: "\\_")
}

extension StoreError {
    /// `error` as ``damaged(path:detail:)`` when SQLite found the store at `path` damaged
    /// (`SQLITE_CORRUPT`, `SQLITE_NOTADB`), else nil: how a command that met it says what to do.
    public static func damage(in error: any Error, path: String) -> StoreError? {
        guard let database = error as? DatabaseError, [.SQLITE_CORRUPT, .SQLITE_NOTADB].contains(database.resultCode) else { return nil }
        return .damaged(path: path, detail: database.message ?? "SQLite error \(database.resultCode.rawValue)")
    }
}
