import Foundation
import GRDB
import NottyCore

// MARK: - Group rows (the center's `=`)

extension LocalStore {
    /// The groups of `view` at `now` among the rows matching `query` (``GroupQuery``): each
    /// group's count, Unread count and newest time, newest group first. One grouped pass over
    /// the view's index ranges (the center reads it when the store changes, not per key).
    @available(
        *, noasync, message: "blocks on SQLite: call it inside `await store.perform { … }` (a thread of its own), never on Swift's cooperative pool"
    )
    public func groups(view: NotificationView, query: String = "", now: Date = Date()) throws -> [NotificationGroup] {
        try database.read { db in try groups(db, view: view, query: query, now: now) }
    }

    func groups(_ db: Database, view: NotificationView, query: String, now: Date) throws -> [NotificationGroup] {
        var found: [String: (group: NotificationGroup, newestId: String)] = [:]
        for branch in try branches(db, view, now: now, query: query) {
            // With max() the only min/max aggregate, SQLite takes the bare columns (app, the
            // title's columns, id) from the row holding the maximum: the group's newest.
            let rows = try Row.fetchCursor(
                db.cachedStatement(
                    sql: """
                        SELECT \(GroupQuery.sqlKey) AS key, count(*), sum(read_state = 'Unread'), max(created), count(DISTINCT app), app,
                               title, raw_content, app_notification_id, id
                        FROM notifications WHERE \(branch.sql) GROUP BY key
                        """),
                arguments: branch.arguments)
            while let row = try rows.next() {
                let key: String = row[0]
                let title: String = row[6] ?? row[7] ?? row[8]  // as UserNotification.displayTitle
                var group = NotificationGroup(
                    key: key, app: row[4] as Int == 1 ? row[5] : nil, count: row[1], unread: row[2],
                    newest: ISOTime.date(millis: row[3]), newestTitle: title)
                var newestId: String = row[9]
                if let (other, otherId) = found[key] {  // the same group in another index range of the view
                    group.app = group.app == other.app ? group.app : nil
                    group.count += other.count
                    group.unread += other.unread
                    if other.newest > group.newest {
                        (group.newest, group.newestTitle, newestId) = (other.newest, other.newestTitle, otherId)
                    }
                }
                found[key] = (group, newestId)
            }
        }
        // A group of one is shown as its notification: read those (one look by id each).
        let lone = found.values.filter { $0.group.count == 1 }.map(\.newestId)
        var loneRows: [String: UserNotification] = [:]
        for start in stride(from: 0, to: lone.count, by: 500) {
            let ids = Array(lone[start..<min(lone.count, start + 500)])
            let sql = "SELECT \(Self.columns) FROM notifications WHERE id IN (\(ids.map { _ in "?" }.joined(separator: ",")))"
            for row in try Self.notifications(db.makeStatement(sql: sql), arguments: StatementArguments(ids)) { loneRows[row.id] = row }
        }
        return found.values.map { entry in
            var group = entry.group
            if group.count == 1 { group.lone = loneRows[entry.newestId] }
            return group
        }.sorted { ($0.newest, $1.key) > ($1.newest, $0.key) }
    }
}

extension StoreSnapshot {
    /// ``LocalStore/groups(view:query:now:)``.
    public func groups(view: NotificationView, query: String, now: Date) throws -> [NotificationGroup] {
        try store.groups(db, view: view, query: query, now: now)
    }
}
