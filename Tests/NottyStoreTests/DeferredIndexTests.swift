import Foundation
import GRDB
import NottyCore
import NottyTestSupport
import Testing

@testable import NottyStore

/// A store on a temporary file, removed at the end.

@Suite("A first sync's deferred indexes")
struct DeferredIndexTests {
    /// The store's indexes of `notifications`, by name, with their definitions.
    static func indexes(_ store: LocalStore) throws -> [String: String] {
        try store.database.read { db in
            Dictionary(
                uniqueKeysWithValues: try Row.fetchAll(
                    db,
                    sql: """
                        SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'notifications' AND sql IS NOT NULL
                        """
                ).map { ($0["name"] as String, $0["sql"] as String) })
        }
    }

    @Test(
        "an empty store drops its secondary indexes for a first sync; a store reopened after a crash reads right without them, and the next build makes them exactly as a migration does"
    )
    func deferAndRepair() throws {
        let t = try TemporaryStore()
        let migrated = try Self.indexes(t.store)
        #expect(migrated.count >= 6)
        #expect(try t.store.deferIndexesIfEmpty())
        #expect(Set(try Self.indexes(t.store).keys) == LocalStore.indexesNamedByQueries)
        #expect(try t.store.writerPragma("cache_size") == LocalStore.firstSyncCacheSize, "a first sync writes with a larger cache")
        let first = (1...40).map {
            notification(
                $0, read: $0 % 3 == 0 ? .read : .unread, action: $0 % 5 == 0 ? .dismissed : .noInteraction,
                created: base.addingTimeInterval(Double($0)))
        }
        #expect(try t.store.apply(page: ChangesPage(changes: first, cursor: "40", hasMore: true), since: nil) == .applied(changed: 40))

        // The process dies here: another opens the store, which is complete up to the cursor.
        let reopened = try LocalStore(path: t.path)
        #expect(try reopened.cursor() == "40")
        #expect(Set(try Self.indexes(reopened).keys) == LocalStore.indexesNamedByQueries)
        let counts = try reopened.counts(now: base)
        #expect(counts.all == 40 && counts.dismissed == 8 && counts.read == 11 && counts.unread == 21, "\(counts)")
        #expect(try reopened.window(view: .read, limit: 3, now: base).map(\.appNotificationId) == ["a39", "a36", "a33"])
        // Every reader works without them (none names a deferred index with INDEXED BY).
        for view in NotificationView.allCases {
            let ids = try reopened.ids(view: view, now: base)
            #expect(ids.count == counts[view], "\(view)")
            #expect(try reopened.window(view: view, offset: 2, limit: 5, now: base).map(\.id) == Array(ids.dropFirst(2).prefix(5)))
            if let last = ids.last {
                #expect(try reopened.position(of: last, view: view, now: base) == ids.count - 1)
                _ = try reopened.nextUnread(view: view, after: last, forward: false, now: base)
            }
            _ = try reopened.count(view: view, query: "alert", now: base)  // a search: no error
        }
        _ = try reopened.nextTimedChange(after: base)
        _ = try reopened.unannounced(now: base)
        #expect(try !reopened.deferIndexesIfEmpty(), "a store with a cursor keeps its indexes")

        #expect(try reopened.writerPragma("cache_size") == LocalStore.defaultCacheSize, "only the process that deferred them has the larger cache")
        try t.store.buildDeferredIndexes()
        #expect(try t.store.writerPragma("cache_size") == LocalStore.defaultCacheSize, "the first sync's cache is given back")
        #expect(try Self.indexes(reopened) == migrated)
        try reopened.buildDeferredIndexes()  // nothing left to do
        #expect(try Self.indexes(reopened) == migrated)
        #expect(try reopened.window(view: .read, limit: 3, now: base).map(\.appNotificationId) == ["a39", "a36", "a33"])
    }

    @Test(
        "after a first sync the log is copied into the store and emptied, its first page kept on disk as zeros: a store opened to read finds no log to read, and reads right"
    )
    func logEmptiedAfterFirstSync() throws {
        let t = try TemporaryStore()
        #expect(try t.store.deferIndexesIfEmpty())
        for start in stride(from: 0, to: 3000, by: 1000) {
            let page = (start..<start + 1000).map { notification($0, created: base.addingTimeInterval(Double($0))) }
            _ = try t.store.apply(
                page: ChangesPage(changes: page, cursor: String(start + 1000), hasMore: start < 2000), since: start == 0 ? nil : String(start))
        }
        let log = t.path + "-wal"
        let before = try #require(FileManager.default.attributesOfItem(atPath: log)[.size] as? Int)
        #expect(before > 1 << 20, "a first sync of 3,000 leaves a log of \(before) bytes")
        try t.store.buildDeferredIndexes()
        let bytes = try Data(contentsOf: URL(fileURLWithPath: log))
        #expect(bytes.count == 4096, "the emptied log keeps its first page (opening the store writes its header there)")
        #expect(bytes.allSatisfy { $0 == 0 }, "and holds no frame")
        let reader = try #require(try LocalStore.openedToRead(path: t.path))
        #expect(try reader.counts(now: base).unread == 3000)
        _ = try t.store.apply(page: ChangesPage(changes: [notification(5000)], cursor: "3001", hasMore: false), since: "3000")
        #expect(try LocalStore.openedToRead(path: t.path)?.counts(now: base).unread == 3001, "a write after it lands in the kept log")
    }

    @Test("a page that deletes the newest row before 40 new ones counts every new one (none takes the deleted rowid unseen)")
    func tombstoneBeforeNewRows() throws {
        let t = try TemporaryStore()
        _ = try t.store.apply(page: ChangesPage(changes: (1...3).map { notification($0) }, cursor: "1", hasMore: false), since: nil, now: base)
        var gone = notification(3)
        gone.status = .deleted
        let page = [gone] + (10..<50).map { notification($0) }
        _ = try t.store.apply(page: ChangesPage(changes: page, cursor: "2", hasMore: false), since: "1", now: base)
        let counts = try t.store.counts(now: base)
        #expect(counts.all == 42 && counts.unread == 42, "\(counts)")
        #expect(try t.store.window(view: .unread, offset: 41, limit: 5, now: base).count == 1)
    }

    @Test("a store with notifications, or one being resynced, keeps its indexes")
    func onlyWhenEmpty() throws {
        let t = try TemporaryStore()
        let migrated = try Self.indexes(t.store)
        _ = try t.store.apply(page: ChangesPage(changes: [notification(1)], cursor: "1", hasMore: false), since: nil)
        try t.store.beginResync()  // forgets the cursor, keeps the rows
        #expect(try !t.store.deferIndexesIfEmpty())
        #expect(try Self.indexes(t.store) == migrated)
    }
}
