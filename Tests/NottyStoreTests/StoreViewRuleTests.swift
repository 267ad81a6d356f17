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
}
