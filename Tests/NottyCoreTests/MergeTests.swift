import Foundation
import NottyCore
import NottyTestSupport
import Testing

@Suite("Last writer wins, per field (PROTOCOL.md §1)")
struct MergeTests {
    struct Row: CustomTestStringConvertible, Sendable {
        var name: String
        var changes: [(StateChange, Int64)]
        var read: ReadState
        var action: UserActionState
        var testDescription: String { name }
    }

    static let later = Date(timeIntervalSince1970: 2_000_000_000)

    static let table: [Row] = [
        Row(
            name: "newer read wins", changes: [(.init(readState: .read), 10), (.init(readState: .unread), 20)], read: .unread, action: .noInteraction),
        Row(
            name: "older read arriving late loses", changes: [(.init(readState: .unread), 20), (.init(readState: .read), 10)], read: .unread,
            action: .noInteraction),
        Row(
            name: "tie goes to the later arrival", changes: [(.init(readState: .read), 10), (.init(readState: .unread), 10)], read: .unread,
            action: .noInteraction),
        Row(
            name: "fields are independent",
            changes: [(.init(userActionState: .dismissed), 30), (.init(readState: .read, userActionState: .activated), 20)], read: .read,
            action: .dismissed),
        Row(
            name: "offline 10:00 loses to 10:05 elsewhere",
            changes: [(.init(userActionState: .dismissed), 1005), (.init(userActionState: .activated), 1000)], read: .unread, action: .dismissed),
        Row(
            name: "snooze then dismiss",
            changes: [(.init(userActionState: .snoozed, snoozedUntil: later), 10), (.init(userActionState: .dismissed), 11)], read: .unread,
            action: .dismissed),
    ]

    @Test(arguments: table)
    func lww(_ row: Row) {
        var state = UserState.fresh(at: 0)
        for (change, at) in row.changes { state.apply(change, changedAt: at) }
        #expect(state.readState == row.read)
        #expect(state.userActionState == row.action)
    }

    @Test("Every order of the same changes ends in the same state")
    func orderIndependent() {
        let changes: [(StateChange, Int64)] = [
            (.init(readState: .read), 5), (.init(userActionState: .activated), 7), (.init(readState: .unread), 9),
            (.init(userActionState: .snoozed, snoozedUntil: Self.later), 3), (.init(userActionState: .dismissed), 8),
        ]
        var results = Set<String>()
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<200 {
            var state = UserState()
            for (change, at) in changes.shuffled(using: &generator) { state.apply(change, changedAt: at) }
            results.insert("\(state.readState)/\(state.userActionState)/\(String(describing: state.snoozedUntil))")
        }
        #expect(results == ["unread/dismissed/nil"])
    }

    @Test("Leaving Snoozed clears snoozedUntil; a re-publish resets both fields")
    func snoozeAndFresh() {
        var state = UserState()
        state.apply(.init(userActionState: .snoozed, snoozedUntil: Self.later), changedAt: 1)
        #expect(state.snoozedUntil == Self.later)
        state.apply(.init(userActionState: .noInteraction), changedAt: 2)
        #expect(state.snoozedUntil == nil)
        let fresh = UserState.fresh(at: 100)
        var afterRepublish = fresh
        let changed = afterRepublish.apply(.init(readState: .read), changedAt: 50)
        #expect(!changed, "a change made before the re-publish loses")
        #expect(afterRepublish.readState == .unread)
    }
}

@Suite("Views (PROTOCOL.md §1)")
struct ViewTests {
    static let now = Date(timeIntervalSince1970: 1_900_000_000)

    func note(_ read: ReadState, _ action: UserActionState, snoozedUntil: Date? = nil, status: NotificationStatus = .active, expires: Date? = nil)
        -> UserNotification
    {
        .fixture(
            id: UUID().uuidString, appNotificationId: "a", app: "h", priority: .high, title: "t", created: Self.now,
            expires: expires ?? Self.now + 3600, status: status, read: read, action: action, snoozedUntil: snoozedUntil)
    }

    @Test("The first five views partition the active notifications; counts add up")
    func partition() {
        let notes = [
            note(.unread, .noInteraction), note(.read, .noInteraction), note(.read, .activated), note(.unread, .dismissed),
            note(.unread, .snoozed, snoozedUntil: Self.now + 60), note(.read, .snoozed, snoozedUntil: Self.now - 60),
            note(.unread, .snoozed, snoozedUntil: Self.now - 1), note(.unread, .noInteraction, status: .deleted),
            note(.unread, .noInteraction, expires: Self.now - 1),
        ]
        var counts = ViewCounts()
        for n in notes {
            counts.add(n, now: Self.now)
            let inViews = NotificationView.allCases.filter { $0 != .all && $0.contains(n, now: Self.now) }
            #expect(inViews.count == (n.isLive(at: Self.now) ? 1 : 0))
        }
        #expect(counts.unread == 2 && counts.read == 2 && counts.activated == 1 && counts.dismissed == 1 && counts.snoozed == 1)
        #expect(counts.all == 7)
        #expect(counts.unread + counts.read + counts.activated + counts.dismissed + counts.snoozed == counts.all)
    }
}
