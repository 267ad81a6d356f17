import Foundation
import GRDB
import NottyCore
import NottyTestSupport
import Testing

@testable import NottyStore

/// A store on a temporary file, removed at the end.

@Suite("The view rule in the store's SQL agrees with Core's")
struct StoreViewRuleTests {
    @Test("every read state × action × snooze (none, running, ended): windows, counts and positions put each notification where partition says")
    func everyCombination() throws {
        let t = try TemporaryStore()
        var all: [UserNotification] = []
        var n = 0
        for read in [ReadState.unread, .read] {
            for (action, hours) in [(UserActionState.noInteraction, nil), (.activated, nil), (.dismissed, nil), (.snoozed, 1.0), (.snoozed, 5.0)]
                as [(UserActionState, Double?)]
            {
                n += 1
                all.append(notification(n, read: read, action: action, snoozedUntil: hours.map { base.addingTimeInterval($0 * 3600) }))
            }
        }
        #expect(try t.store.apply(page: ChangesPage(changes: all, cursor: "1", hasMore: false), since: nil) == .applied(changed: all.count))
        let now = base.addingTimeInterval(2 * 3600)  // the 1-hour snoozes have ended
        var expected = ViewCounts()
        expected.all = all.count
        for n in all { expected[NotificationView.current(of: n, now: now)!] += 1 }
        #expect(expected.unread == 2 && expected.read == 2 && expected.snoozed == 2)
        #expect(try t.store.counts(now: now) == expected)
        for view in NotificationView.allCases {
            let window = try t.store.window(view: view, limit: 100, now: now)
            #expect(Set(window.map(\.id)) == Set(all.filter { view.contains($0, now: now) }.map(\.id)), "\(view)")
            #expect(try t.store.count(view: view, now: now) == expected[view], "\(view)")
            for row in window { #expect(try t.store.position(of: row.id, view: view, now: now) != nil, "\(view) \(row.appNotificationId)") }
        }
    }

    @Test(
        "High Unread kept as data (migration v14): every read state × action × snooze × priority, expired ones, local changes and a page of the service's: each view's badge counts what its rows say"
    )
    func highUnreadCounts() throws {
        let t = try TemporaryStore()
        var all: [UserNotification] = []
        var n = 0
        for high in [false, true] {
            for read in [ReadState.unread, .read] {
                for (action, hours) in [(UserActionState.noInteraction, nil), (.activated, nil), (.dismissed, nil), (.snoozed, 1.0), (.snoozed, 5.0)]
                    as [(UserActionState, Double?)]
                {
                    for expired in [false, true] {
                        n += 1
                        var row = notification(
                            n, read: read, action: action, snoozedUntil: hours.map { base.addingTimeInterval($0 * 3600) },
                            expires: base.addingTimeInterval(expired ? 3600 : 86_400))
                        row.priority = high ? .high : .low
                        all.append(row)
                    }
                }
            }
        }
        #expect(try t.store.apply(page: ChangesPage(changes: all, cursor: "1", hasMore: false), since: nil) == .applied(changed: all.count))
        let now = base.addingTimeInterval(2 * 3600)  // the 1-hour snoozes have ended; the 1-hour expiries are past
        func check(_ rows: [UserNotification], _ moment: String) throws {
            for view in NotificationView.allCases {
                let badge = try t.store.badge(view: view, now: now)
                let wanted = rows.filter { view.contains($0, now: now) && $0.readState == .unread && $0.priority == .high }.count
                #expect(badge.highUnread == wanted, "\(moment): \(view)")
                #expect(badge.count == rows.filter { view.contains($0, now: now) }.count, "\(moment): \(view)")
            }
        }
        try check(all, "as synced")
        #expect(try t.store.badge(view: .unread, now: now).highUnread > 0)
        // Changes made here (read, dismissed, deleted: hidden until sent), then the service's page.
        let local: [(String, LocalChange)] = [
            (all[20].id, .patch(StateChange(readState: .read))), (all[22].id, .patch(StateChange(userActionState: .dismissed))),
            (all[26].id, .delete), (all[30].id, .patch(StateChange(readState: .unread))),
        ]
        _ = try t.store.record(local, now: now)
        var shown = all
        shown[20].readState = .read
        shown[22].userActionState = .dismissed
        shown[30].readState = .unread
        shown.remove(at: 26)
        try check(shown, "with local changes")
        var page = [all[24], all[28]]
        page[0].readState = .read
        page[0].lastModifiedDateTime = now
        page[1].priority = .low
        page[1].lastModifiedDateTime = now
        #expect(try t.store.apply(page: ChangesPage(changes: page, cursor: "2", hasMore: false), since: "1") == .applied(changed: 2))
        for changed in page { shown[shown.firstIndex { $0.id == changed.id }!] = changed }
        try check(shown, "after the service's page")
    }
}
