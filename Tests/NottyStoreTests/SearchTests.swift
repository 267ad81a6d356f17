import Foundation
import GRDB
import NottyCore
import NottyStore
import NottyTestSupport
import Testing

/// Searches answered from the word index (few candidates), by stepping over a view's index
/// (many), or by `notty_text_matches` (rows not indexed yet) must all give what the query
/// language's matcher gives row by row (``SearchQuery/matches(_:now:)``), however much of the
/// store is indexed.
@Suite("Search index")
struct SearchTests {
    static let words = ["Deploy", "deploy", "DB-3", "db-30", "flaky test", "ビルド失敗", "✅ done", "50%_off", "Über alert", "a\"quote"]
    /// More rows than ``SearchPlan`` sorts itself, so "example" (every app) takes the other way.
    static let queries = [
        "example", "deploy", "DB-3", "ビルド", "50%_o", "über", "a\"q", "zz", "de", "no such words", "ci.", "body 1",
        "group:deploys", "groupkey:ci.example.com", " groupkey: mon.example.com ", "groupkey:nope", "group:nope", "-deploy", "\"flaky test\"",
        "deploy -db",
        "priority:high", "is:unread deploy", "-is:read über", "app:ci.example.com", "-app:ci.example.com 5", "is:snoozed", "has:actions",
    ]

    static func text(_ random: inout SeededRandom) -> String {
        "\(words.randomElement(using: &random)!) \(words.randomElement(using: &random)!) \(Int.random(in: 0..<99, using: &random))"
    }

    /// A group's key, or the query language row by row.
    static func matches(_ n: UserNotification, _ query: String, now: Date) -> Bool {
        if let key = GroupQuery.key(in: query) { return n.groupKey == key }
        return (try? SearchQuery.parse(query).matches(n, now: now)) ?? false
    }

    static func check(_ store: LocalStore, ids: [String], now: Date, random: inout SeededRandom, stage: String) throws {
        let shown = try ids.compactMap { try store.notification(id: $0) }
        for query in queries {
            for view in NotificationView.allCases {
                let whole = shown.filter { view.contains($0, now: now) && matches($0, query, now: now) }
                    .sorted { ($0.createdDateTime, $0.id) > ($1.createdDateTime, $1.id) }
                    .map(\.id)
                let label = "\(view) “\(query)” \(stage)"
                #expect(try store.count(view: view, query: query, now: now) == whole.count, "count \(label)")
                if let quick = try store.quickCount(view: view, query: query, now: now) {
                    #expect(quick == whole.count, "quick count \(label)")
                }
                #expect(try store.window(view: view, query: query, limit: 100_000, now: now).map(\.id) == whole, "whole \(label)")
                for offset in [1, whole.count / 2, whole.count - 2, Int.random(in: 0...whole.count, using: &random)] where offset >= 0 {
                    let limit = [1, 9, 40][Int.random(in: 0..<3, using: &random)]
                    let slice = Array(whole[min(offset, whole.count)..<min(offset + limit, whole.count)])
                    #expect(
                        try store.window(view: view, query: query, offset: offset, limit: limit, now: now).map(\.id) == slice,
                        "offset \(offset) \(label)")
                    #expect(
                        try store.window(view: view, query: query, offset: offset, limit: limit, total: whole.count, now: now).map(\.id) == slice,
                        "offset \(offset) with total \(label)")
                }
                if GroupQuery.key(in: query) == nil {
                    let rows = shown.filter { view.contains($0, now: now) && matches($0, query, now: now) }
                    let expected = Dictionary(grouping: rows, by: \.groupKey).map { key, rows in
                        NotificationGroup(
                            key: key, app: Set(rows.map(\.targetHostName)).count == 1 ? rows[0].targetHostName : nil, count: rows.count,
                            unread: rows.filter { $0.readState == .unread }.count, newest: rows.map(\.createdDateTime).max()!)
                    }.sorted { ($0.newest, $1.key) > ($1.newest, $0.key) }
                    let groups = try store.groups(view: view, query: query, now: now)
                    #expect(
                        groups.map { group in
                            var plain = group
                            (plain.newestTitle, plain.lone) = ("", nil)
                            return plain
                        } == expected, "groups \(label)")
                    let byKey = Dictionary(grouping: rows, by: \.groupKey)
                    for group in groups {
                        let members = byKey[group.key] ?? []
                        // The newest's title (rows created in the same millisecond: any of them).
                        #expect(
                            members.filter { $0.createdDateTime == group.newest }.map(\.displayTitle).contains(group.newestTitle),
                            "newest title \(label)")
                        #expect(group.lone == (members.count == 1 ? members[0] : nil), "a group of one is its notification \(label)")
                    }
                }
                for _ in 0..<4 {
                    let id = whole.isEmpty || Bool.random(using: &random) ? ids.randomElement(using: &random)! : whole.randomElement(using: &random)!
                    #expect(try store.position(of: id, view: view, query: query, now: now) == whole.firstIndex(of: id), "position \(label)")
                }
            }
        }
    }

    @Test(
        "searches equal a row-by-row match before, while and after the index is built, through re-publishes with new text, tombstones, actions, a resync and a new account",
        arguments: [1, 2] as [UInt64])
    func searchesMatchTheRows(seed: UInt64) throws {
        var random = SeededRandom(seed: seed)
        let t = try TemporaryStore()
        try t.store.bind(account: "alice")
        var cursor: String?
        var next = 1
        var ids: [String] = []
        func pull(_ changes: [UserNotification]) throws {
            let page = ChangesPage(changes: changes, cursor: "c\(next)-\(changes.count)", hasMore: false)
            #expect(try t.store.apply(page: page, since: cursor) == .applied(changed: changes.count))
            cursor = page.cursor
        }
        func fresh(_ count: Int) -> [UserNotification] {
            var page = ViewIndexTests.history(count, from: next, random: &random)
            for index in page.indices {
                page[index].payload = NotificationPayload(
                    rawContent: Int.random(in: 0..<5, using: &random) == 0 ? Self.text(&random) : nil,
                    visualContent: VisualContent(title: Self.text(&random), body: "body \(page[index].appNotificationId) " + Self.text(&random)))
            }
            next += count
            ids += page.map(\.id)
            return page
        }
        /// Re-published ones with new text (and time), tombstones, new ones; then actions.
        func changes(round: Int) throws {
            var changes = fresh(40)
            for _ in 0..<40 {
                guard let id = ids.randomElement(using: &random), var again = try t.store.notification(id: id) else { continue }
                again.payload = NotificationPayload(
                    rawContent: nil, visualContent: VisualContent(title: Self.text(&random), body: Self.text(&random)))
                again.createdDateTime = base.addingTimeInterval(Double(Int.random(in: -100_000..<10, using: &random)))
                again.lastModifiedDateTime = base.addingTimeInterval(Double(300 + round))
                if Int.random(in: 0..<4, using: &random) == 0 { again.status = .deleted }
                changes.append(again)
            }
            try pull(changes)
            let actions = (0..<30).map { _ -> (id: String, change: LocalChange) in
                let id = ids.randomElement(using: &random)!
                return Int.random(in: 0..<6, using: &random) == 0
                    ? (id, .delete)
                    : (
                        id,
                        .patch(
                            StateChange(
                                readState: ViewIndexTests.read(&random), userActionState: ViewIndexTests.action(&random),
                                snoozedUntil: ViewIndexTests.until(&random)))
                    )
            }
            try t.store.record(actions, now: base.addingTimeInterval(Double(round)))
        }
        let now = base.addingTimeInterval(1800)

        try pull(fresh(1100))
        try Self.check(t.store, ids: ids, now: now, random: &random, stage: "(nothing indexed)")
        #expect(try t.store.rowsToIndexForSearch() == 1100)
        #expect(try t.store.indexForSearch(rows: 500) == true)
        try changes(round: 1)
        try Self.check(t.store, ids: ids, now: now, random: &random, stage: "(half indexed, then changed)")
        while try t.store.indexForSearch(rows: 300) {}
        #expect(try t.store.rowsToIndexForSearch() == 0)
        try Self.check(t.store, ids: ids, now: now, random: &random, stage: "(all indexed)")
        try changes(round: 2)
        try Self.check(t.store, ids: ids, now: now, random: &random, stage: "(indexed rows changed)")

        try t.store.beginResync()
        cursor = nil
        let kept = try ids.enumerated().compactMap { index, id in index % 2 == 0 ? try t.store.notification(id: id) : nil }
        try pull(kept)
        try t.store.finishResync()
        try Self.check(t.store, ids: ids, now: now, random: &random, stage: "(after a resync)")

        let revision = try t.store.revision()
        try t.store.bind(account: "someone else")
        #expect(try t.store.revision() > revision, "caches keyed by revision must not see the new account's rows as the old ones")
        #expect(try t.store.rowsToIndexForSearch() == 0)
        ids = []
        cursor = nil
        try pull(fresh(60))
        while try t.store.indexForSearch(rows: 25) {}
        try Self.check(t.store, ids: ids, now: now, random: &random, stage: "(another account)")
    }

    @Test("an index another folding made is forgotten when the store opens and made again; a sync's page of a few rows is indexed with it")
    func foldingAndSyncs() throws {
        let t = try TemporaryStore()
        try t.store.bind(account: "alice")
        var random = SeededRandom(seed: 9)
        let first = ViewIndexTests.history(100, from: 1, random: &random)
        #expect(try t.store.apply(page: ChangesPage(changes: first, cursor: "c1", hasMore: false), since: nil) == .applied(changed: 100))
        #expect(try t.store.rowsToIndexForSearch() == 100, "a first sync's many rows are left to the background")
        let more = ViewIndexTests.history(3, from: 101, random: &random)
        #expect(try t.store.apply(page: ChangesPage(changes: more, cursor: "c2", hasMore: false), since: "c1") == .applied(changed: 3))
        #expect(try t.store.rowsToIndexForSearch() == 0, "a later sync indexes its rows, and catches up the rest")
        let queue = try DatabaseQueue(path: t.path)
        try queue.write { db in try db.execute(sql: "UPDATE meta SET value = '0' WHERE key = 'search_folding'") }
        try queue.close()
        let reopened = try LocalStore(path: t.path)
        #expect(try reopened.rowsToIndexForSearch() == 103, "made again")
        while try reopened.indexForSearch() {}
        #expect(try reopened.count(view: .all, query: first[0].payload.visualContent!.title.split(separator: " ").first.map(String.init) ?? "") > 0)
    }
}
