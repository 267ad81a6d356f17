import Foundation
import GRDB
import NottyCore
import NottyTestSupport
import Testing

@testable import NottyStore

/// A store on a temporary file, removed at the end.

@Suite("State changes (notty poll --on-change)")
struct StateChangeTests {
    @Test("changes of state and deletions of known notifications are queued while watched, one per notification, from any writer")
    func queued() throws {
        let t = try TemporaryStore()
        let now = base.addingTimeInterval(60)
        let first = ChangesPage(changes: (1...6).map { notification($0) }, cursor: "1", hasMore: false)
        #expect(try t.store.apply(page: first, since: nil, now: now) == .applied(changed: 6))
        // Not watched: nothing is kept.
        _ = try t.store.record([(notification(6).id, .patch(StateChange(readState: .read)))], now: now)
        try t.store.watchStates(true)
        #expect(try t.store.stateChanges(now: now).isEmpty)
        // This device: read #1 (twice: one change), deletes #4; #5 read and unread again (no change).
        _ = try t.store.record([(notification(1).id, .patch(StateChange(readState: .read)))], now: now)
        _ = try t.store.record([(notification(1).id, .patch(StateChange(userActionState: .activated)))], now: now)
        _ = try t.store.record([(notification(4).id, .delete)], now: now)
        _ = try t.store.record([(notification(5).id, .patch(StateChange(readState: .read)))], now: now)
        _ = try t.store.record([(notification(5).id, .patch(StateChange(readState: .unread)))], now: now)
        // Another device, through the change feed: #2 dismissed, #3 deleted, #7 new then read
        // before it was announced (this device never knew it: not reported).
        var dismissed = notification(2, action: .dismissed)
        dismissed.lastModifiedDateTime = base.addingTimeInterval(50)
        var deleted = notification(3)
        deleted.status = .deleted
        let second = ChangesPage(changes: [dismissed, deleted, notification(7)], cursor: "2", hasMore: false)
        #expect(try t.store.apply(page: second, since: "1", now: now) == .applied(changed: 3))
        _ = try t.store.record([(notification(7).id, .patch(StateChange(readState: .read)))], now: now)
        let changes = try t.store.stateChanges(now: now)
        #expect(
            changes.map { "\($0.notification.appNotificationId) \($0.stateName)" } == ["a1 activated", "a4 deleted", "a2 dismissed", "a3 deleted"])
        #expect(changes.first { $0.view == nil }?.notification.payload.visualContent?.title == "title 4")
        #expect(try t.store.stateChanges(now: now).isEmpty)  // taken once
        // Stopped: later changes are not kept.
        try t.store.watchStates(false)
        _ = try t.store.record([(notification(6).id, .patch(StateChange(readState: .unread)))], now: now)
        try t.store.watchStates(true)
        #expect(try t.store.stateChanges(now: now).isEmpty)
    }
}
