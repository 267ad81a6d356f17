import Foundation
import GRDB
import NottyCore
import NottyTestSupport
import Testing

@testable import NottyStore

/// A store on a temporary file, removed at the end.
final class TemporaryStore {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("notty-store-\(UUID().uuidString.prefix(8))")
    let store: LocalStore
    var path: String { directory.appendingPathComponent("store.sqlite").path }

    init() throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        store = try LocalStore(path: directory.appendingPathComponent("store.sqlite").path)
    }

    deinit { try? FileManager.default.removeItem(at: directory) }
}

let base = Date(timeIntervalSince1970: 1_800_000_000)

func notification(
    _ n: Int, read: ReadState = .unread, action: UserActionState = .noInteraction, snoozedUntil: Date? = nil,
    title: String? = nil, expires: Date? = nil, created: Date? = nil
) -> UserNotification {
    .fixture(
        id: UserNotification.fixtureId(n), appNotificationId: "a\(n)", app: n % 2 == 0 ? "ci.example.com" : "mon.example.com",
        group: n % 3 == 0 ? "deploys" : nil, priority: n % 5 == 0 ? .high : .none, title: title ?? "title \(n)", body: "body \(n)",
        raw: n % 4 == 0 ? "raw \(n)" : nil, created: created ?? base.addingTimeInterval(Double(n)), modified: base.addingTimeInterval(Double(n)),
        expires: expires ?? base.addingTimeInterval(86_400 * 7), read: read, action: action, snoozedUntil: snoozedUntil)
}

@Suite("Local store")
struct LocalStoreTests {
    @Test(
        "the writer commits with synchronous=FULL (GRDB's pool would leave NORMAL); a pulled page alone commits with NORMAL, and FULL is back after it"
    )
    func durableCommits() throws {
        let temporary = try TemporaryStore()
        #expect(try temporary.store.writerPragma("synchronous") == 2)
        let seen = try temporary.store.database.writeWithoutTransaction { db in
            try LocalStore.inRepairableTransaction(db) { try Int.fetchOne(db, sql: "PRAGMA synchronous") }
        }
        #expect(seen == 1, "NORMAL inside")
        #expect(try temporary.store.writerPragma("synchronous") == 2)
        struct Failure: Error {}
        #expect(throws: Failure.self) {
            try temporary.store.database.writeWithoutTransaction { db in try LocalStore.inRepairableTransaction(db) { throw Failure() } }
        }
        #expect(try temporary.store.writerPragma("synchronous") == 2, "FULL again after a failed transaction")
        #expect(
            try temporary.store.apply(page: ChangesPage(changes: [notification(1)], cursor: "1", hasMore: false), since: nil, now: base)
                == .applied(changed: 1))
        #expect(
            try temporary.store.apply(page: ChangesPage(changes: [notification(2)], cursor: "2", hasMore: false), since: "0", now: base)
                == .cursorMoved)
        #expect(try temporary.store.writerPragma("synchronous") == 2)
    }

    @Test("the WAL is checkpointed beside the writer: pages pulled one change at a time leave it bounded, and a reopened store has every change")
    func walCheckpointsBesideTheWriter() async throws {
        let t = try TemporaryStore()
        let all = (0..<400).map { notification($0, read: .unread, action: .noInteraction) }
        try await t.store.perform { store throws in
            #expect(try store.apply(page: ChangesPage(changes: all, cursor: "0", hasMore: false), since: nil, now: base) == .applied(changed: 400))
            // One commit a change, as a live device applies another device's dismissals.
            var cursor = "0"
            for (index, row) in all.enumerated() {
                var dismissed = row
                dismissed.userActionState = .dismissed
                dismissed.lastModifiedDateTime = base.addingTimeInterval(10_000 + Double(index))
                let next = String(index + 1)
                #expect(
                    try store.apply(page: ChangesPage(changes: [dismissed], cursor: next, hasMore: false), since: cursor, now: base)
                        == .applied(changed: 1))
                cursor = next
            }
        }
        await t.store.checkpointer.finished()
        #expect(t.store.checkpointer.runCount >= 1, "the writer's WAL hook asked for a checkpoint")
        let walPages = ((try? FileManager.default.attributesOfItem(atPath: t.path + "-wal")[.size] as? Int) ?? 0) / 4096
        #expect(walPages < 5 * 1000, "the WAL grew to \(walPages) pages")
        let reopened = try await LocalStore.open(path: t.path)
        #expect(try await reopened.perform { try $0.counts(now: base) }.dismissed == 400)
    }

    @Test("a new notification is stored with every field as it came (each bound value in its column), and one with none of the optional ones")
    func everyFieldStored() throws {
        let t = try TemporaryStore()
        var full = notification(7, read: .read, action: .snoozed, snoozedUntil: base.addingTimeInterval(3_600), title: "デプロイ完了 ✅ «v2»")
        full.groupName = "deploys/prod"
        full.priority = .high
        full.payload = NotificationPayload(rawContent: #"{"k":"v"}"#, visualContent: VisualContent(title: "デプロイ完了 ✅ «v2»", body: "line 1\nline 2 🍜"))
        full.displayTimeToLive = 90
        full.targetPolicy = .object(["platformTypes": .array([.string("windows")])])
        full.fallbackPolicy = .object(["type": .string("none")])
        full.launchUrl = "https://ci.example.com/builds/4812?tab=log"
        var bare = notification(8)
        bare.groupName = nil
        bare.payload = NotificationPayload(rawContent: nil, visualContent: VisualContent(title: "t"))
        #expect(
            try t.store.apply(page: ChangesPage(changes: [full, bare], cursor: "1", hasMore: false), since: nil, now: base) == .applied(changed: 2))
        #expect(try t.store.notification(id: full.id) == full)
        #expect(try t.store.notification(id: bare.id) == bare)
        // The same statement again, for other rows: nothing of the previous row's values is left bound.
        var next = notification(9)
        next.launchUrl = nil
        next.payload = NotificationPayload(rawContent: "", visualContent: VisualContent(title: "", body: ""))  // empty, not NULL
        #expect(try t.store.apply(page: ChangesPage(changes: [next], cursor: "2", hasMore: false), since: "1", now: base) == .applied(changed: 1))
        #expect(try t.store.notification(id: next.id) == next)
    }

    @Test("views partition the notifications; a snooze ends and an expiry hides by time alone")
    func viewsByTime() throws {
        let t = try TemporaryStore()
        let page = ChangesPage(
            changes: [
                notification(1), notification(2, read: .read), notification(3, action: .activated),
                notification(4, action: .dismissed), notification(5, read: .read, action: .snoozed, snoozedUntil: base.addingTimeInterval(3600)),
                notification(6, action: .snoozed, snoozedUntil: base.addingTimeInterval(7200)),
                notification(7, expires: base.addingTimeInterval(1800)),
            ], cursor: "7", hasMore: false)
        #expect(try t.store.apply(page: page, since: nil) == .applied(changed: 7))
        let early = base.addingTimeInterval(60)
        var counts = try t.store.counts(now: early)
        #expect(NotificationView.allCases.map { counts[$0] } == [2, 1, 1, 1, 2, 7])
        #expect(try t.store.window(view: .snoozed, limit: 10, now: early).map(\.appNotificationId) == ["a6", "a5"])
        // 1 h later: #5's snooze is over (it was Read), #7 has expired.
        let later = base.addingTimeInterval(3601)
        counts = try t.store.counts(now: later)
        #expect(NotificationView.allCases.map { counts[$0] } == [1, 2, 1, 1, 1, 6])
        #expect(try t.store.window(view: .read, limit: 10, now: later).map(\.appNotificationId) == ["a5", "a2"])
        #expect(try t.store.count(view: .read, now: later) == 2)
        #expect(try t.store.window(view: .all, limit: 10, now: later).contains { $0.appNotificationId == "a7" } == false)
        for view in NotificationView.allCases {
            #expect(try t.store.count(view: view, now: later) == counts[view], "count(view:) and counts() agree on \(view)")
        }
    }

    @Test("markAllAnnounced marks every row, more than one 5,000-row statement of them, and new ones are announced after")
    func markAllAnnounced() throws {
        let t = try TemporaryStore()
        // (A first sync into an empty store announces nothing: the rows come after one.)
        _ = try t.store.apply(page: ChangesPage(changes: [notification(1)], cursor: "1", hasMore: false), since: nil)
        _ = try t.store.apply(page: ChangesPage(changes: (2...12_002).map { notification($0) }, cursor: "2", hasMore: false), since: "1")
        #expect(try t.store.unannounced(now: base).count >= 12_001)
        try t.store.markAllAnnounced()
        #expect(try t.store.unannounced(now: base).isEmpty)
        _ = try t.store.apply(page: ChangesPage(changes: [notification(20_000)], cursor: "3", hasMore: false), since: "2")
        #expect(try t.store.unannounced(now: base).map(\.appNotificationId) == ["a20000"])
    }

    @Test("windows are newest first, offset/limit, search over title, body, app and group; positions")
    func windowsAndSearch() throws {
        let t = try TemporaryStore()
        let all = (1...50).map { notification($0, title: $0 == 17 ? "デプロイ完了 ✅ 50%_off" : nil) }
        _ = try t.store.apply(page: ChangesPage(changes: all, cursor: "50", hasMore: false), since: nil)
        let now = base
        #expect(try t.store.window(view: .unread, offset: 0, limit: 3, now: now).map(\.appNotificationId) == ["a50", "a49", "a48"])
        #expect(try t.store.window(view: .unread, offset: 10, limit: 2, now: now).map(\.appNotificationId) == ["a40", "a39"])
        #expect(try t.store.window(view: .all, query: "デプロイ", limit: 10, now: now).map(\.appNotificationId) == ["a17"])
        #expect(try t.store.window(view: .all, query: "50%_off", limit: 10, now: now).map(\.appNotificationId) == ["a17"], "words one after another")
        #expect(throws: StoreError.search("priority: is high, normal or low, not urgent")) {
            try t.store.window(view: .all, query: "priority:urgent", limit: 10, now: now)
        }
        #expect(try t.store.count(view: .all, query: "deploys", now: now) == 16, "group names are searched")
        #expect(try t.store.count(view: .all, query: "MON.example", now: now) == 25, "app names, case-insensitively")
        #expect(try t.store.count(view: .all, query: "body 4", now: now) == 11)
        #expect(try t.store.position(of: all[39].id, view: .unread, now: now) == 10)
        #expect(try t.store.position(of: all[39].id, view: .read, now: now) == nil)
    }

    @Test("every window is the same slice of the whole view, read from the start or from the end, with snoozes ending and equal times")
    func windowsFromEitherEnd() throws {
        let t = try TemporaryStore()
        let changes = (1...61).map { n -> UserNotification in
            let created = base.addingTimeInterval(Double(n / 3))  // three at a time share a creation time
            switch n % 6 {
            case 0: return notification(n, read: .read, created: created)
            case 1: return notification(n, action: .snoozed, snoozedUntil: base.addingTimeInterval(Double(60 * n)), created: created)
            case 2: return notification(n, read: .read, action: .snoozed, snoozedUntil: base.addingTimeInterval(Double(90 * n)), created: created)
            case 3: return notification(n, action: .dismissed, created: created)
            default: return notification(n, created: created)
            }
        }
        _ = try t.store.apply(page: ChangesPage(changes: changes, cursor: "61", hasMore: false), since: nil)
        for now in [base, base.addingTimeInterval(1800), base.addingTimeInterval(86_400)] {
            let counts = try t.store.counts(now: now)
            for view in NotificationView.allCases {
                let whole = try t.store.window(view: view, limit: 1000, now: now).map(\.id)
                let counted = try t.store.count(view: view, now: now)
                #expect(whole.count == counts[view] && whole.count == counted)
                for limit in [1, 4, 200] {
                    for offset in 0...whole.count {
                        let slice = Array(whole[min(offset, whole.count)..<min(offset + limit, whole.count)])
                        #expect(
                            try t.store.window(view: view, offset: offset, limit: limit, total: whole.count, now: now).map(\.id) == slice,
                            "\(view) offset \(offset) limit \(limit)")
                        #expect(try t.store.window(view: view, offset: offset, limit: limit, now: now).map(\.id) == slice)
                    }
                }
            }
        }
    }

    @Test(
        "what the center reads on every key and reload (windows, searches, counts, positions, timed changes, the revision) keeps its prepared statements: none is prepared again when other values are bound"
    )
    func readsKeepTheirPlans() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("notty-store-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: directory) }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let store = try LocalStore(path: directory.appendingPathComponent("store.sqlite").path, readers: 1)
        let changes = (1...60).map { n -> UserNotification in
            switch n % 5 {
            case 0: notification(n, read: .read)
            case 1: notification(n, action: .snoozed, snoozedUntil: base.addingTimeInterval(Double(60 * n)))
            case 2: notification(n, action: .dismissed)
            case 3: notification(n, action: .activated)
            default: notification(n)
            }
        }
        _ = try store.apply(page: ChangesPage(changes: changes, cursor: "60", hasMore: false), since: nil)
        // Twice over every view, at a time before and after some snoozes end: each statement
        // is bound again with another view's and another time's values.
        for round in 0..<2 {
            for now in [base, base.addingTimeInterval(1800)] {
                _ = try store.counts(now: now)
                _ = try store.revision()
                _ = try store.nextTimedChange(after: now)
                for view in NotificationView.allCases {
                    let rows = try store.window(view: view, offset: round, limit: 5, now: now)
                    _ = try store.window(view: view, offset: 1, limit: 3, total: try store.count(view: view, now: now), now: now)
                    if let id = rows.first?.id { _ = try store.position(of: id, view: view, now: now) }
                    for query in ["title 1", "body"] {  // few candidates, many
                        _ = try store.window(view: view, query: query, limit: 4, now: now)
                        _ = try store.count(view: view, query: query, now: now)
                    }
                }
            }
        }
        let reprepared = try store.readerReprepares()
        #expect(reprepared.isEmpty, "prepared again: \(reprepared)")
    }

    @Test("an action writes the shown state and an outbox entry together; acknowledgements drain it")
    func outbox() throws {
        let t = try TemporaryStore()
        _ = try t.store.apply(page: ChangesPage(changes: [notification(1), notification(2)], cursor: "2", hasMore: false), since: nil)
        let id1 = notification(1).id, id2 = notification(2).id
        let before = try t.store.record([(id1, .patch(StateChange(userActionState: .dismissed))), (id2, .delete), ("unknown", .delete)], now: base)
        #expect(before.map(\.id) == [id1, id2], "unknown ids are skipped")
        #expect(before[0].restoring == StateChange(readState: .unread, userActionState: .noInteraction))
        #expect(try t.store.notification(id: id1)?.userActionState == .dismissed)
        #expect(try t.store.notification(id: id2) == nil, "a pending delete hides it at once")
        let pending = try t.store.pending()
        #expect(pending.count == 2 && Set(pending.map(\.mutationId)).count == 2)
        #expect(pending[0].changedAt < pending[1].changedAt, "the hybrid logical clock only moves forward")
        // The service applied the dismiss; the delete got a 503-like transient answer and stays.
        var served = notification(1)
        served.userActionState = .dismissed
        served.lastModifiedDateTime = base.addingTimeInterval(100)
        let done = try t.store.acknowledge([
            MutationResult(id: id1, mutationId: pending[0].mutationId, status: 200, notification: served),
            MutationResult(id: id2, mutationId: pending[1].mutationId, status: 503),
        ])
        #expect(done == 1)
        #expect(try t.store.pending().map(\.mutationId) == [pending[1].mutationId], "a transient failure keeps the entry and its mutationId")
        #expect(try t.store.notification(id: id1)?.userActionState == .dismissed)
        #expect(try t.store.acknowledge([MutationResult(id: id2, mutationId: pending[1].mutationId, status: 204)]) == 1)
        #expect(try t.store.outboxCount() == 0)
        #expect(try t.store.count(view: .all, now: base) == 1, "an acknowledged delete is gone for good")
    }

    @Test("a pulled change does not undo a pending local change; a tombstone drops it")
    func pendingOverPulled() throws {
        let t = try TemporaryStore()
        _ = try t.store.apply(page: ChangesPage(changes: [notification(1), notification(2)], cursor: "2", hasMore: false), since: nil)
        try t.store.record([(notification(1).id, .patch(StateChange(readState: .read)))], now: base)
        var renamed = notification(1, title: "renamed")
        renamed.lastModifiedDateTime = base.addingTimeInterval(50)
        var tombstone = notification(2)
        tombstone.status = .deleted
        #expect(try t.store.apply(page: ChangesPage(changes: [renamed, tombstone], cursor: "4", hasMore: false), since: "2") == .applied(changed: 2))
        let shown = try #require(try t.store.notification(id: notification(1).id))
        #expect(shown.displayTitle == "renamed" && shown.readState == .read)
        #expect(try t.store.notification(id: notification(2).id) == nil)
    }

    @Test("a page applies only on top of the cursor it was asked for (another process may have moved it)")
    func cursorCompareAndSet() throws {
        let t = try TemporaryStore()
        #expect(try t.store.apply(page: ChangesPage(changes: [notification(1)], cursor: "5", hasMore: false), since: nil) == .applied(changed: 1))
        #expect(try t.store.apply(page: ChangesPage(changes: [notification(2)], cursor: "9", hasMore: false), since: "3") == .cursorMoved)
        #expect(try t.store.cursor() == "5")
        #expect(try t.store.count(view: .all, now: base) == 1)
    }

    @Test("a full resync keeps the outbox and drops what the service no longer has")
    func resync() throws {
        let t = try TemporaryStore()
        _ = try t.store.apply(
            page: ChangesPage(changes: [notification(1), notification(2), notification(3)], cursor: "3", hasMore: false), since: nil)
        try t.store.record([(notification(1).id, .patch(StateChange(readState: .read)))], now: base)
        try t.store.beginResync()
        #expect(try t.store.cursor() == nil)
        _ = try t.store.apply(page: ChangesPage(changes: [notification(1), notification(3)], cursor: "10", hasMore: false), since: nil)
        try t.store.finishResync()
        #expect(try t.store.window(view: .all, limit: 10, now: base).map(\.appNotificationId) == ["a3", "a1"])
        #expect(try t.store.outboxCount() == 1)
        #expect(try t.store.notification(id: notification(1).id)?.readState == .read)
    }

    @Test(
        "a resync cut off by a dead network is finished by the next pull to reach the end; a flush's answer meanwhile does not vouch for a row the service no longer sends (a team the user left)"
    )
    func resyncInterrupted() throws {
        let t = try TemporaryStore()
        _ = try t.store.apply(
            page: ChangesPage(changes: [notification(1), notification(2), notification(3)], cursor: "3", hasMore: false), since: nil)
        try t.store.record([(notification(2).id, .patch(StateChange(userActionState: .dismissed)))], now: base)
        try t.store.beginResync()
        #expect(try t.store.resyncUnfinished())
        // The first page from the start came; the pull was cut off after it.
        _ = try t.store.apply(page: ChangesPage(changes: [notification(1)], cursor: "8", hasMore: true), since: nil)
        // The next sync flushes first: the service still applied the change and answers the row.
        let entry = try #require(try t.store.pending().first)
        var answered = notification(2)
        answered.userActionState = .dismissed
        answered.lastModifiedDateTime = base.addingTimeInterval(60)
        #expect(try t.store.acknowledge([MutationResult(id: answered.id, mutationId: entry.mutationId, status: 200, notification: answered)]) == 1)
        // Then its pull goes on to the end (the service no longer sends 2: the user left its team).
        _ = try t.store.apply(page: ChangesPage(changes: [notification(3)], cursor: "12", hasMore: false), since: "8")
        #expect(try t.store.resyncUnfinished(), "the resync is not over until it is finished")
        try t.store.finishResync()
        #expect(try !t.store.resyncUnfinished())
        #expect(try t.store.window(view: .all, limit: 10, now: base).map(\.appNotificationId) == ["a3", "a1"])
        // Outside a resync a flush's answer is kept as it always was.
        _ = try t.store.apply(page: ChangesPage(changes: [notification(4)], cursor: "13", hasMore: false), since: "12")
        try t.store.record([(notification(4).id, .patch(StateChange(readState: .read)))], now: base)
        let next = try #require(try t.store.pending().first)
        var read = notification(4)
        read.readState = .read
        read.lastModifiedDateTime = base.addingTimeInterval(90)
        #expect(try t.store.acknowledge([MutationResult(id: read.id, mutationId: next.mutationId, status: 200, notification: read)]) == 1)
        try t.store.beginResync()
        _ = try t.store.apply(page: ChangesPage(changes: [notification(1), notification(3), read], cursor: "20", hasMore: false), since: nil)
        try t.store.finishResync()
        #expect(try t.store.notification(id: read.id)?.readState == .read)
    }

    @Test("ids: full, unique prefix of 6+, too short, ambiguous, unknown")
    func resolve() throws {
        let t = try TemporaryStore()
        _ = try t.store.apply(
            page: ChangesPage(changes: [notification(0x10), notification(0x11), notification(0x200)], cursor: "3", hasMore: false), since: nil)
        #expect(try t.store.resolve(notification(0x200).id) == notification(0x200).id)
        #expect(try t.store.resolve("00000200") == notification(0x200).id)
        #expect(throws: StoreError.tooShort("00000")) { try t.store.resolve("00000") }
        #expect(throws: StoreError.ambiguous("000000")) { try t.store.resolve("000000") }
        #expect(throws: StoreError.notFound("ffffff")) { try t.store.resolve("ffffff") }
    }

    @Test("two processes' connections on one file: concurrent writers never see 'database is locked', and each sees the other's writes")
    func twoWriters() async throws {
        let t = try TemporaryStore()
        let other = try await LocalStore.open(path: t.path)
        let store = t.store
        let revision = try await other.perform { other throws in
            _ = try store.apply(page: ChangesPage(changes: (1...200).map { notification($0) }, cursor: "200", hasMore: false), since: nil)
            return try other.revision()
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (index, store) in [t.store, other].enumerated() {
                group.addTask {
                    try await store.perform { store in
                        for n in 1...200 where n % 2 == index {
                            try store.record([(notification(n).id, .patch(StateChange(readState: .read)))])
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        try await other.perform { other throws in
            #expect(try other.outboxCount() == 200)
            #expect(try store.count(view: .read) == 200)
            #expect(try other.revision() != revision)
        }
    }
}
