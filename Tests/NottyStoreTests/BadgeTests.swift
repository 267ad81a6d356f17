import Foundation
import GRDB
import NottyCore
import NottyTestSupport
import Testing

@testable import NottyStore

@Suite("The badge of notty count and notty watch, and the store's change signal")
struct BadgeTests {
    @Test("a view's count and its High Unread rows agree with the rows themselves, read through the High rows' partial index; Read has none")
    func badge() throws {
        let t = try TemporaryStore()
        let now = base.addingTimeInterval(3600)
        var rows: [UserNotification] = []
        for n in 1...300 {
            rows.append(
                notification(
                    n, read: n % 3 == 0 ? .read : .unread, action: n % 7 == 0 ? .dismissed : .noInteraction,
                    snoozedUntil: n % 11 == 0 ? now.addingTimeInterval(n % 2 == 0 ? -60 : 60) : nil,
                    expires: n % 13 == 0 ? now.addingTimeInterval(-1) : nil))
        }
        rows = rows.map { row in
            var row = row
            if row.snoozedUntil != nil, row.userActionState == .noInteraction { row.userActionState = .snoozed }
            return row
        }
        _ = try t.store.apply(page: ChangesPage(changes: rows, cursor: "1", hasMore: false), since: nil, now: base)
        for view in NotificationView.allCases {
            let badge = try t.store.badge(view: view, now: now)
            let members = rows.filter { view.contains($0, now: now) }
            #expect(badge.count == members.count, "\(view)")
            #expect(badge.highUnread == members.filter { $0.priority == .high && $0.readState == .unread }.count, "\(view)")
            #expect(badge.counts[view] == members.count)
        }
        #expect(try t.store.badge(view: .unread, now: now).highUnread > 0, "the fixture has High Unread rows")
        let plan = try t.store.database.read { db in
            try Row.fetchAll(
                db,
                sql:
                    "EXPLAIN QUERY PLAN SELECT count(*) FROM notifications WHERE bucket = 'unread' AND hidden = 0 AND expires > 0 AND read_state = 'Unread' AND priority = 'High'"
            )
            .map { $0["detail"] as String? ?? "" }.joined(separator: " ")
        }
        #expect(plan.contains("notifications_high_unread"), "\(plan)")
    }

    @Test("a commit by another connection reaches changes() through the directory's events, not its fallback interval (an hour here)")
    func changeSignal() async throws {
        let t = try TemporaryStore()
        _ = try await t.store.perform {
            try $0.apply(page: ChangesPage(changes: [notification(1)], cursor: "1", hasMore: false), since: nil, now: base)
        }
        let other = try await LocalStore.open(path: t.path)
        let seen = Locked<[LocalStore.Change]>([])
        let watcher = Task {
            for await change in t.store.changes(fallbackEvery: .seconds(3600)) { seen.update { $0.append(change) } }
        }
        defer { watcher.cancel() }
        // The watcher reads its first revision on its own thread: commits go on (read, unread,
        // …) until one is seen, each given 2 s, far beyond a watcher woken by the file's event.
        var state = ReadState.read
        var started = ContinuousClock.now
        for _ in 0..<15 where !seen.update({ $0.contains(.committed) }) {
            started = ContinuousClock.now
            try await other.perform { [state] in try $0.record([(notification(1).id, .patch(StateChange(readState: state)))]) }
            state = state == .read ? .unread : .read
            _ = await eventually(timeout: .seconds(2)) { seen.update { $0.contains(.committed) } }
        }
        #expect(seen.update { $0.contains(.committed) }, "no change seen in 15 commits")
        print("a commit seen by another connection's watcher \(ContinuousClock.now - started) after it began")
    }
}
