import Foundation
import GRDB
import NottyCore
import NottyStore
import NottyTestSupport

/// `notty count` at `count` notifications (it runs in every prompt and status line): a store
/// written directly (60% Unread, one in ten High, some snoozed and dismissed), then
/// the badge read on an open store (expired rows wait for the service's deletion, a minute at
/// most: 10 of them here), the store opened and read as `notty count` does, and the
/// whole `notty count` process beside `notty --version` (the same binary doing nothing).
struct CountBench {
    let count: Int
    let rounds: Int

    func run() async throws {
        let directory = Repository.temporaryDirectory("notty-bench-count")
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("store.sqlite").path
        let now = Date()
        let written = try await milliseconds {
            let store = try await LocalStore.open(path: path)
            try await store.perform { store in
                for start in stride(from: 0, to: count, by: 10_000) {
                    let page = (start..<min(count, start + 10_000)).map { n -> UserNotification in
                        let read: ReadState = n % 5 < 2 ? .read : .unread
                        let action: UserActionState = n % 17 == 0 ? .dismissed : n % 29 == 0 ? .snoozed : .noInteraction
                        return .fixture(
                            id: UserNotification.fixtureId(n), appNotificationId: "count-\(n)", app: "app\(n % 7).example.com",
                            group: n % 3 == 0 ? "group\(n % 11)" : nil, priority: n % 10 == 3 ? .high : .none,
                            title: "Notification \(n)", created: now.addingTimeInterval(Double(n - count)),
                            expires: n % 10_000 == 7 ? now.addingTimeInterval(-1) : now.addingTimeInterval(86_400),
                            read: read, action: action, snoozedUntil: action == .snoozed ? now.addingTimeInterval(3600) : nil)
                    }
                    _ = try store.apply(
                        page: ChangesPage(changes: page, cursor: String(start), hasMore: false), since: start == 0 ? nil : String(start - 10_000),
                        now: now)
                }
            }
        }
        let store = try await LocalStore.open(path: path)
        let badge = try await store.perform { try $0.badge(view: .unread) }
        print(
            String(
                format: "count: a store of %d notifications written in %.1f s; Unread %d, of them High %d; all %d",
                count, written / 1000, badge.count, badge.highUnread, badge.counts.all))

        let warm = try await store.perform { store in
            try (0..<500).map { _ in try milliseconds { _ = try store.badge(view: .unread) } }
        }
        report("badge of Unread, store open (500 reads)", warm)
        let parts = try await store.perform { store in
            (
                try (0..<200).map { _ in try milliseconds { _ = try store.counts() } },
                try (0..<200).map { _ in try milliseconds { _ = try store.count(view: .unread) } }
            )
        }
        report("of which the six counts (200 reads)", parts.0)
        report("for comparison, count(view: .unread) (200 reads)", parts.1)
        let cold = try await offThePool {
            try (0..<100).map { _ in try milliseconds { _ = try LocalStore.openedToRead(path: path)?.badge(view: .unread) } }
        }
        report("store opened to read, badge read (as notty count does; 100 runs)", cold)
        let opened = try await offThePool {
            try (0..<100).map { _ in try milliseconds { _ = try LocalStore(path: path).badge(view: .unread) } }
        }
        report("for comparison, store opened as every other command does, badge read (100 runs)", opened)

        // Saved views (PROTOCOL.md §17): one app's unread ones (a fifth of Unread, its app key in
        // the word index) and a word with a field (few matches), the index built as a sync does.
        let views = [
            SavedView(name: "app3", query: "app:app3.example.com is:unread"), SavedView(name: "notif7", query: "notification 77 priority:high"),
        ]
        let size = try await store.perform { store -> (before: Int, after: Int) in
            let before = try Self.storeBytes(path)
            while try store.indexForSearch(rows: 20_000) {}
            for view in views { try store.setPreference(key: view.key, value: view.value) }
            return (before, try Self.storeBytes(path))
        }
        print(
            String(
                format: "  the store: %.1f MiB, with the search index %.1f MiB (%.2f×)", Double(size.before) / 1_048_576,
                Double(size.after) / 1_048_576,
                Double(size.after) / Double(size.before)))
        for view in views {
            let counted = try await store.perform { try $0.badge(saved: view) }
            let reads = try await store.perform { store in try (0..<200).map { _ in try milliseconds { _ = try store.badge(saved: view) } } }
            report("badge of the saved view \(view.name) ('\(view.query)', \(counted.count) rows), store open (200 reads)", reads)
        }

        let environment = ProcessInfo.processInfo.environment.merging(["NOTTY_HOME": directory.path]) { $1 }
        for (name, arguments) in [
            ("notty --version", ["--version"]), ("notty count", ["count"]), ("notty count --format tmux", ["count", "--format", "tmux"]),
            ("notty count --view app3", ["count", "--view", "app3"]), ("notty count --view notif7", ["count", "--view", "notif7"]),
        ] {
            var times: [Double] = []
            for _ in 0..<(rounds * 20) {
                times.append(
                    try milliseconds {
                        let run = try runToEnd(Repository.nottyBinary.path, arguments, environment: environment, name: name)
                        guard run.status == 0 else {
                            throw SupportError("\(name) ended with \(run.status): \(String(decoding: run.err, as: UTF8.self))")
                        }
                    })
            }
            report("\(name), whole process (\(times.count) runs)", times)
        }
    }

    /// The store's size as SQLite counts it (its pages, the write-ahead log's included).
    static func storeBytes(_ path: String) throws -> Int {
        let queue = try DatabaseQueue(
            path: path,
            configuration: {
                var c = Configuration(); c.readonly = true; return c
            }())
        defer { try? queue.close() }
        return try queue.read { db in
            (try Int.fetchOne(db, sql: "PRAGMA page_count") ?? 0) * (try Int.fetchOne(db, sql: "PRAGMA page_size") ?? 0)
        }
    }

    private func report(_ what: String, _ values: [Double]) {
        print(
            String(
                format: "  %@: median %.2f ms, p95 %.2f ms, max %.2f ms", what, percentile(values, 50), percentile(values, 95), values.max() ?? .nan))
    }
}
