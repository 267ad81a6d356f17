import Foundation
import GRDB
import NottyCore

/// Positions in a view without stepping over index entries one by one.
///
/// `view_blocks` (migration v3, kept by triggers) counts the visible rows of each bucket per
/// block of creation time at four sizes: 2^31 ms (~25 days), 2^24 ms (~4.7 h), 2^17 ms (~2 min)
/// and 2^10 ms (~1 s); a block of one size holds 128 of the next. A view is the rows of some
/// buckets, except for two small sets whose view differs from their bucket: rows that expired
/// but are not yet removed by a sync (in no view), and snoozes that have ended (in Unread or
/// Read, though their bucket is `snoozed`). Those are read one by one and counted as
/// corrections. Finding the `n`th row of a view then reads at most a few hundred block counts
/// and steps over the rows of one smallest block, wherever `n` is in a view of any length.
struct ViewIndex {
    /// Block sizes as right shifts of the creation time in milliseconds, largest first. Fixed
    /// by migration v3 (another set needs a new migration), which also names the buckets'
    /// columns.
    static let levels: [Int64] = [31, 24, 17, 10]
    static var finest: Int64 { levels[levels.count - 1] }
    /// The five partitioning views: each is a bucket and a `view_blocks` column (migration v3).
    static let buckets: [NotificationView] = [.unread, .read, .activated, .dismissed, .snoozed]

    // MARK: - Keeping the blocks (migrations v3 and v9, a first sync's pages)

    /// `VALUES` rows for `view_blocks`, one per level: the block of `row`'s creation time and
    /// each bucket's change, `change(bucket)` being an SQL expression over `row`.
    static func blockRows(_ row: String, _ change: (String) -> String) -> String {
        levels.map { "(\($0), \(row).created >> \($0), \(buckets.map { change($0.rawValue) }.joined(separator: ", ")))" }
            .joined(separator: ", ")
    }

    /// The upsert clause that adds a row's changes to a block's counts.
    static var addedToBlocks: String {
        " ON CONFLICT DO UPDATE SET " + buckets.map { "\($0.rawValue) = \($0.rawValue) + excluded.\($0.rawValue)" }.joined(separator: ", ")
    }

    /// The trigger that counts an inserted row, when `condition` holds.
    static func insertTrigger(when condition: String) -> String {
        """
        CREATE TRIGGER view_blocks_insert AFTER INSERT ON notifications WHEN \(condition) BEGIN
            INSERT INTO view_blocks VALUES \(blockRows("new") { "new.bucket = '\($0)'" })\(addedToBlocks);
        END;
        """
    }

    /// The `meta` key under which a transaction inserts rows without the insert trigger and
    /// then counts them with ``countRows(_:after:)`` (it is never committed).
    static let bulkKey = "bulk_insert"

    /// Adds the visible rows whose rowid is above `rowid` (all rows when nil) to the blocks,
    /// grouped: a few hundred upserts for any number of rows.
    static func countRows(_ db: Database, after rowid: Int64?) throws {
        for level in levels {
            try db.execute(
                sql: """
                    INSERT INTO view_blocks SELECT \(level), created >> \(level), \(buckets.map { "sum(bucket = '\($0.rawValue)')" }.joined(separator: ", "))
                    FROM notifications WHERE hidden = 0 AND rowid > ? GROUP BY 2 ORDER BY 2\(addedToBlocks)
                    """, arguments: [rowid ?? Int64.min])
        }
    }

    // MARK: - High Unread counts (migration v14)

    /// `high_unread` counts the visible Unread High rows of each bucket, kept by triggers as
    /// `view_blocks` is (by every insert: a first sync's pages too), so that a prompt's badge
    /// reads five rows instead of the High Unread index; the exceptions correct it as they
    /// correct the blocks.
    static func migrateHighUnread(_ db: Database) throws {
        func counted(_ row: String) -> String { "\(row).hidden = 0 AND \(row).read_state = 'Unread' AND \(row).priority = 'High'" }
        let moved = ["bucket", "hidden", "read_state", "priority"]
        try db.execute(
            sql: """
                CREATE TABLE high_unread (bucket TEXT PRIMARY KEY, n INTEGER NOT NULL) WITHOUT ROWID;
                INSERT INTO high_unread SELECT bucket, count(*) FROM notifications WHERE \(counted("notifications")) GROUP BY bucket;
                CREATE TRIGGER high_unread_insert AFTER INSERT ON notifications WHEN \(counted("new")) BEGIN
                    INSERT INTO high_unread VALUES (new.bucket, 1) ON CONFLICT DO UPDATE SET n = n + 1;
                END;
                CREATE TRIGGER high_unread_delete AFTER DELETE ON notifications WHEN \(counted("old")) BEGIN
                    UPDATE high_unread SET n = n - 1 WHERE bucket = old.bucket;
                END;
                CREATE TRIGGER high_unread_update AFTER UPDATE OF \(moved.joined(separator: ", ")) ON notifications
                WHEN (\(counted("old"))) IS NOT (\(counted("new"))) OR ((\(counted("new"))) AND old.bucket IS NOT new.bucket) BEGIN
                    UPDATE high_unread SET n = n - 1 WHERE bucket = old.bucket AND \(counted("old"));
                    INSERT INTO high_unread SELECT new.bucket, 1 WHERE \(counted("new")) ON CONFLICT DO UPDATE SET n = n + 1;
                END;
                """)
    }

    /// The High Unread rows of `view` at `now`: the kept count of each of its buckets,
    /// corrected by `exceptions` (``exceptions(_:now:)``, read once for the counts too).
    static func highUnread(_ db: Database, view: NotificationView, exceptions: [Exceptional]) throws -> Int {
        var high = 0
        for row in try Row.fetchAll(db.cachedStatement(sql: "SELECT bucket, n FROM high_unread")) {
            if view == .all || NotificationView(rawValue: row[0]) == view { high += row[1] as Int }
        }
        for exception in exceptions where exception.highUnread {
            if view == .all || exception.bucket == view { high -= 1 }
            if let now = exception.view, view == .all || now == view { high += 1 }
        }
        return high
    }

    /// A row whose view at `now` is not the one its bucket says.
    struct Exception {
        var created: Int64
        /// +1: in the view though its bucket is not counted for it; -1: counted but not in it.
        var delta: Int
    }

    let db: Database
    let view: NotificationView
    let now: Date
    /// The `view_blocks` columns that add up to the view.
    let columns: String
    let exceptions: [Exception]

    init(_ db: Database, view: NotificationView, now: Date) throws {
        self.db = db
        self.view = view
        self.now = now
        columns = (view == .all ? Self.buckets : [view]).map(\.rawValue).joined(separator: " + ")
        exceptions = try Self.exceptions(db, now: now).compactMap { row in
            let counted = view == .all || row.bucket == view
            let member = row.view.map { view == .all || $0 == view } ?? false
            guard counted != member else { return nil }
            return Exception(created: row.created, delta: member ? 1 : -1)
        }
    }

    /// The view's index ranges (``ViewFilter``); Unread and Read take the range of ended
    /// snoozes only while one of theirs has ended (then it is among the exceptions).
    var branches: [ViewFilter.Branch] {
        let branches = ViewFilter.branches(view, now: now)
        return branches.count > 1 && !exceptions.contains(where: { $0.delta > 0 }) ? Array(branches.dropLast()) : branches
    }

    /// The view among the five partitioning ones that a visible row is in at `now` (in
    /// milliseconds, as stored; PROTOCOL.md §1), nil when it has expired.
    static func view(readState: String, actionState: String, snoozedUntil: Int64?, expires: Int64, now: Int64) -> NotificationView? {
        guard expires > now else { return nil }
        return NotificationView.partition(
            readState: ReadState(spelling: readState) ?? .unread,
            userActionState: UserActionState(spelling: actionState) ?? .noInteraction,
            snoozedUntil: snoozedUntil.map(ISOTime.date(millis:)), now: ISOTime.date(millis: now))
    }

    /// A row of ``exceptions(_:now:)``.
    typealias Exceptional = (created: Int64, bucket: NotificationView?, view: NotificationView?, highUnread: Bool)

    /// The rows whose view differs from their bucket at `now`, with their view (nil: none):
    /// expired ones and ended snoozes.
    static func exceptions(_ db: Database, now: Date) throws -> [Exceptional] {
        let millis = ISOTime.millis(now)
        let columns = "created, bucket, read_state, action_state, snoozed_until, expires, read_state = 'Unread' AND priority = 'High'"
        let rows = try Row.fetchAll(
            db.cachedStatement(
                sql: """
                    SELECT \(columns) FROM notifications WHERE hidden = 0 AND expires <= ?
                    UNION ALL
                    SELECT \(columns) FROM notifications INDEXED BY notifications_snoozes
                    WHERE bucket = 'snoozed' AND snoozed_until <= ? AND hidden = 0 AND expires > ?
                    """),
            arguments: [millis, millis, millis])
        return rows.map { row in
            (
                created: row[0], bucket: NotificationView(rawValue: row[1]),
                view: view(readState: row[2], actionState: row[3], snoozedUntil: row[4], expires: row[5], now: millis), highUnread: row[6]
            )
        }
    }

    // MARK: - Counting

    /// The rows of the view per block of `level` among blocks `from..<below` (nil: unbounded),
    /// corrections included.
    func blocks(level: Int64, from: Int64?, below: Int64?) throws -> [Int64: Int] {
        var sql = "SELECT block, \(columns) FROM view_blocks WHERE level = ?"
        var arguments: StatementArguments = [level]
        if let from { sql += " AND block >= ?"; arguments += [from] }
        if let below { sql += " AND block < ?"; arguments += [below] }
        var counts: [Int64: Int] = [:]
        let rows = try Row.fetchCursor(db.cachedStatement(sql: sql), arguments: arguments)
        while let row = try rows.next() { counts[row[0]] = row[1] }
        for exception in exceptions {
            let block = exception.created >> level
            if from.map({ block >= $0 }) ?? true, below.map({ block < $0 }) ?? true {
                counts[block, default: 0] += exception.delta
            }
        }
        return counts
    }

    /// How many rows the view has.
    func total() throws -> Int {
        try blocks(level: Self.levels[0], from: nil, below: nil).values.reduce(0, +)
    }

    /// The range of `level` blocks inside the parent block `parent` of the level above (the
    /// whole level for the largest blocks).
    static func children(of parent: Int64?, level index: Int) -> (from: Int64?, below: Int64?) {
        guard let parent, index > 0 else { return (nil, nil) }
        let shift = levels[index - 1] - levels[index]
        return (parent << shift, (parent + 1) << shift)
    }

    /// How many rows of the view come before (are newer than) the row `created`, `id`; the
    /// rows of its own smallest block are counted with the view's filter.
    func rank(created: Int64, id: String) throws -> Int {
        var rank = 0
        var parent: Int64?
        for (index, level) in Self.levels.enumerated() {
            let block = created >> level
            let below = Self.children(of: parent, level: index).below
            rank += try blocks(level: level, from: block + 1, below: below).values.reduce(0, +)
            parent = block
        }
        let end = ((created >> Self.finest) + 1) << Self.finest
        for branch in branches {
            rank +=
                try Int.fetchOne(
                    db.cachedStatement(
                        sql: """
                            SELECT count(*) FROM notifications WHERE \(branch.sql)
                            AND created >= ? AND created < ? AND (created > ? OR id > ?)
                            """),
                    arguments: branch.arguments + [created, end, created, id]) ?? 0
        }
        return rank
    }

    /// Where the row at `offset` (newest first) is: it is the `skip`th row (0-based) of the
    /// view among those created before `below`. Nil when the view is shorter.
    func start(of offset: Int) throws -> (below: Int64, skip: Int)? {
        var before = 0
        var parent: Int64?
        for (index, level) in Self.levels.enumerated() {
            let range = Self.children(of: parent, level: index)
            let counts = try blocks(level: level, from: range.from, below: range.below)
            var chosen: Int64?
            for block in counts.keys.sorted(by: >) {
                let n = counts[block] ?? 0
                if before + n > offset { chosen = block; break }
                before += n
            }
            guard let chosen else { return nil }
            parent = chosen
        }
        guard let parent else { return nil }
        return ((parent + 1) << Self.finest, offset - before)
    }
}
