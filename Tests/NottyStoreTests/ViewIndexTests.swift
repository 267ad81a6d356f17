import Foundation
import NottyCore
import NottyStore
import NottyTestSupport
import Testing

/// The store finds counts, positions and windows from block counts kept by triggers; these
/// tests work every view out row by row instead and compare.
@Suite("View positions from block counts")
struct ViewIndexTests {
    /// A history spread over blocks of every size (equal times, the same second, minutes,
    /// hours, weeks, months), in every state, some snoozes ending and some expiring.
    static func history(_ count: Int, from first: Int, random: inout SeededRandom) -> [UserNotification] {
        var previous = base
        return (first..<(first + count)).map { n in
            let created: Date
            switch Int.random(in: 0..<6, using: &random) {
            case 0: created = previous
            default:
                let scale = [10, 17, 24, 31, 34][Int.random(in: 0..<5, using: &random)]
                created = base.addingTimeInterval(-Double(Int64.random(in: 0..<(Int64(1) << scale), using: &random)) / 1000)
            }
            previous = created
            let expires =
                Bool.random(using: &random) && Int.random(in: 0..<5, using: &random) == 0
                ? base.addingTimeInterval(Double(Int.random(in: 1..<10_800, using: &random))) : nil
            return notification(
                n, read: Self.read(&random), action: Self.action(&random),
                snoozedUntil: Self.until(&random), expires: expires, created: created)
        }
    }

    static func read(_ random: inout SeededRandom) -> ReadState { Bool.random(using: &random) ? .read : .unread }
    static func action(_ random: inout SeededRandom) -> UserActionState {
        [.noInteraction, .noInteraction, .activated, .dismissed, .snoozed][Int.random(in: 0..<5, using: &random)]
    }
    static func until(_ random: inout SeededRandom) -> Date {
        base.addingTimeInterval(Double(Int.random(in: -3600..<10_800, using: &random)))
    }

    /// Every view at `now`, worked out from each notification, against the store's answers.
    static func check(_ store: LocalStore, ids: [String], now: Date, random: inout SeededRandom, seed: UInt64) throws {
        let shown = try ids.compactMap { try store.notification(id: $0) }
        var expected = ViewCounts()
        for notification in shown { expected.add(notification, now: now) }
        let counts = try store.counts(now: now)
        #expect(counts == expected, "seed \(seed)")
        for view in NotificationView.allCases {
            let whole = shown.filter { view.contains($0, now: now) }
                .sorted { ($0.createdDateTime, $0.id) > ($1.createdDateTime, $1.id) }
                .map(\.id)
            let counted = try store.count(view: view, now: now)
            #expect(counted == whole.count, "\(view), seed \(seed)")
            let offsets =
                [0, 1, whole.count / 2, whole.count - 1, whole.count, whole.count + 3]
                + (0..<8).map { _ in Int.random(in: 0...max(0, whole.count), using: &random) }
            for offset in offsets where offset >= 0 {
                let limit = [1, 7, 60][Int.random(in: 0..<3, using: &random)]
                let slice = Array(whole[min(offset, whole.count)..<min(offset + limit, whole.count)])
                let window = try store.window(view: view, offset: offset, limit: limit, now: now).map(\.id)
                #expect(window == slice, "\(view) offset \(offset) limit \(limit), seed \(seed)")
            }
            for _ in 0..<12 {
                guard let id = ids.randomElement(using: &random) else { break }
                let position = try store.position(of: id, view: view, now: now)
                #expect(position == whole.firstIndex(of: id), "\(view) position of \(id), seed \(seed)")
            }
        }
    }

    @Test(
        "counts, positions and windows equal the views worked out row by row, through pulls, actions, acknowledgements, tombstones, re-publishes, snoozes ending and expiry",
        arguments: [1, 2, 3, 4, 5] as [UInt64])
    func blockCountsMatchTheRows(seed: UInt64) throws {
        var random = SeededRandom(seed: seed)
        let t = try TemporaryStore()
        var cursor: String?
        var ids: [String] = []
        var next = 1
        func pull(_ changes: [UserNotification]) throws {
            let page = ChangesPage(changes: changes, cursor: "c\(next)", hasMore: false)
            #expect(try t.store.apply(page: page, since: cursor) == .applied(changed: changes.count))
            cursor = page.cursor
        }
        for _ in 0..<4 {
            let page = Self.history(60, from: next, random: &random)
            next += 60
            ids += page.map(\.id)
            try pull(page)
        }
        let times = [base, base.addingTimeInterval(1800), base.addingTimeInterval(7300)]
        for round in 0..<5 {
            // The user's actions, some of them undone by the service's answers.
            var actions: [(id: String, change: LocalChange)] = []
            for _ in 0..<25 {
                guard let id = ids.randomElement(using: &random) else { break }
                let action: LocalChange =
                    Int.random(in: 0..<8, using: &random) == 0
                    ? .delete
                    : .patch(StateChange(readState: Self.read(&random), userActionState: Self.action(&random), snoozedUntil: Self.until(&random)))
                actions.append((id, action))
            }
            try t.store.record(actions, now: base.addingTimeInterval(Double(round)))
            let acknowledged = try t.store.pending(limit: 15).map { entry -> MutationResult in
                var answer = try t.store.notification(id: entry.notificationId) ?? notification(0)
                answer.id = entry.notificationId
                answer.readState = Self.read(&random)
                answer.userActionState = Self.action(&random)
                answer.snoozedUntil = answer.userActionState == .snoozed ? Self.until(&random) : nil
                answer.lastModifiedDateTime = base.addingTimeInterval(Double(100 + round))
                return MutationResult(
                    id: entry.notificationId, mutationId: entry.mutationId, status: Bool.random(using: &random) ? 200 : 404,
                    notification: answer)
            }
            try t.store.acknowledge(acknowledged)
            // From the service: new ones, re-published ones (new creation time), tombstones.
            // Every other round has enough new ones for the bulk count of a first sync's pages
            // (LocalStore.bulkInsertRows), mixed with the updates and deletions.
            let fresh = round % 2 == 0 ? 15 : 40
            var changes = Self.history(fresh, from: next, random: &random)
            next += fresh
            ids += changes.map(\.id)
            for _ in 0..<6 {
                guard let id = ids.randomElement(using: &random), var again = try t.store.notification(id: id) else { continue }
                again.createdDateTime = base.addingTimeInterval(Double(Int.random(in: -100_000..<10, using: &random)))
                again.lastModifiedDateTime = base.addingTimeInterval(Double(200 + round))
                if Int.random(in: 0..<3, using: &random) == 0 { again.status = .deleted }
                changes.append(again)
            }
            changes.shuffle(using: &random)  // the feed's order is by change: tombstones among new rows
            try pull(changes)
            for now in times {
                try Self.check(t.store, ids: ids, now: now, random: &random, seed: seed)
            }
        }
        // A full resync that drops half of what the store holds.
        try t.store.beginResync()
        cursor = nil
        let kept = try ids.enumerated().compactMap { index, id in index % 2 == 0 ? try t.store.notification(id: id) : nil }
        try pull(kept)
        try t.store.finishResync()
        for now in times {
            try Self.check(t.store, ids: ids, now: now, random: &random, seed: seed)
        }
    }
}
