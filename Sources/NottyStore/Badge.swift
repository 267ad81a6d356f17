import Foundation
import GRDB
import NottyCore

extension LocalStore {
    /// The badge of `view` at `now`: the view counts (a few block counts, ``counts(now:)``)
    /// and the High Unread rows, one look in their partial index (migration v12). One read
    /// transaction; nothing scans the view's rows.
    @available(
        *, noasync, message: "blocks on SQLite: call it inside `await store.perform { … }` (a thread of its own), never on Swift's cooperative pool"
    )
    public func badge(view: NotificationView, now: Date = Date()) throws -> Badge {
        try database.read { db in
            let counts = try counts(db, now: now)
            let high =
                view == .read
                ? 0
                : try count(
                    db, branches(db, view, now: now, query: ""),
                    extra: "AND read_state = 'Unread' AND priority = 'High'")
            return Badge(view: view, count: counts[view], highUnread: high, counts: counts)
        }
    }
}
