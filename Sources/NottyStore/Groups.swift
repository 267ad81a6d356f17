import Foundation
import GRDB
import NottyCore

// MARK: - Group rows (the center's `=`)

extension LocalStore {
    /// The groups of `view` at `now` among the rows matching `query` (``GroupQuery``): each
    /// group's count, Unread count and newest time, newest group first. One grouped pass over
    /// the view's index ranges (the center reads it when the store changes, not per key).
    @available(*, noasync, message: "blocks on SQLite: call it inside `await store.perform { … }` (a thread of its own), never on Swift's cooperative pool")
    public func groups(view: NotificationView, query: String = "", now: Date = Date()) throws -> [NotificationGroup] {
        try pool.read { db in try groups(db, view: view, query: query, now: now) }
    }

    func groups(_ db: Database, view: NotificationView, query: String, now: Date) throws -> [NotificationGroup] {
        var found: [String: NotificationGroup] = [:]
        for branch in try branches(db, view, now: now, query: query) {
            let rows = try Row.fetchCursor(
                db.cachedStatement(sql: """
                    SELECT \(GroupQuery.sqlKey) AS key, count(*), sum(read_state = 'Unread'), max(created), min(app), max(app)
                    FROM notifications WHERE \(branch.sql) GROUP BY key
                    """),
                arguments: branch.arguments)
            while let row = try rows.next() {
                let key: String = row[0]
                let (firstApp, lastApp): (String, String) = (row[4], row[5])
                var group = NotificationGroup(key: key, app: firstApp == lastApp ? firstApp : nil, count: row[1], unread: row[2],
                                              newest: ISOTime.date(millis: row[3]))
                if let other = found[key] {  // the same group in another index range of the view
                    group.app = group.app == other.app ? group.app : nil
                    group.count += other.count
                    group.unread += other.unread
                    group.newest = max(group.newest, other.newest)
                }
                found[key] = group
            }
        }
        return found.values.sorted { ($0.newest, $1.key) > ($1.newest, $0.key) }
    }
}

extension StoreSnapshot {
    /// ``LocalStore/groups(view:query:now:)``.
    public func groups(view: NotificationView, query: String, now: Date) throws -> [NotificationGroup] {
        try store.groups(db, view: view, query: query, now: now)
    }
}
