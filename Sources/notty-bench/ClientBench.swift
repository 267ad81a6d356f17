import Foundation
import NottyCore
import NottyPOSIX
import NottyStore
import NottyTestSupport

/// Issue 3's figures: windows of the local store, applying a 1,000-change page, and a dismiss
/// on another device reaching this device's store over the doorbell.
struct ClientBench {
    let service: ServiceBench
    let device: SyncedDevice

    func run(quick: Bool) async throws {
        let store = try await LocalStore.open(path: device.storePath)
        print("")
        try Self.windows(store, repeats: quick ? 5 : 20)
        print("")
        try await pageApply(store, pages: quick ? 3 : 10)
        print("")
        try await doorbell(store, rounds: quick ? 50 : 300)
    }

    /// What the terminal notification center reads when a search is entered in Unread, with
    /// the search index complete (it is built here first when it is not).
    /// What the search figures search for (common, rare, a phrase, nothing), here and in `tui`.
    static let searchQueries = ["deploy", "db-3", "flaky", "no such words"]

    static func searches(_ store: LocalStore, repeats: Int) throws {
        let unindexed = try store.rowsToIndexForSearch()
        if unindexed > 0 {
            let time = try milliseconds { while try store.indexForSearch() {} }
            print(String(format: "  search index: %d rows indexed in %.0f ms", unindexed, time))
        }
        for query in ClientBench.searchQueries {
            var quick: [Double] = [], first: [Double] = [], count: [Double] = []
            var counted: Int?
            for _ in 0..<repeats {
                quick.append(try milliseconds { counted = try store.quickCount(view: .unread, query: query) })
                first.append(try milliseconds { _ = try store.window(view: .unread, query: query, offset: 0, limit: 75) })
                count.append(try milliseconds { _ = try store.count(view: .unread, query: query) })
            }
            print("  search Unread for '\(query)' (\(counted.map { "\($0) matches, counted from the index" } ?? "many candidates")):")
            print("    quick count \(summary(quick)); first 75 rows \(summary(first)); full count \(summary(count))")
        }
    }

    /// 200-row windows of every view at the top, the middle and the end, as the terminal
    /// notification center asks for them (`window` alone, and with the view's count and the
    /// selection's position, which a reload also needs).
    static func windows(_ store: LocalStore, repeats: Int) throws {
        let counts = try store.counts()
        print(
            "window of 200 rows from a \(counts.all)-row store (\(NotificationView.allCases.map { "\($0.rawValue) \(counts[$0])" }.joined(separator: ", ")))"
        )
        var places: [(name: String, samples: [Double])] = [("top", []), ("middle", []), ("end", [])]
        for view in NotificationView.allCases {
            let total = counts[view]
            for (place, offset) in [0, max(0, total / 2 - 100), max(0, total - 200)].enumerated() {
                for _ in 0..<repeats {
                    places[place].samples.append(try milliseconds { _ = try store.window(view: view, offset: offset, limit: 200, total: total) })
                }
            }
        }
        for (name, samples) in places {
            print("  \(name.padding(toLength: 7, withPad: " ", startingAt: 0)) of each of the six views: \(summary(samples))")
        }
        // What the terminal notification center reads on a reload with the selection in the
        // middle of a view: the view's length, the selection's position, the window around it.
        var reloads: [Double] = []
        for view in NotificationView.allCases {
            let total = counts[view]
            guard let selected = try store.window(view: view, offset: total / 2, limit: 1).first else { continue }
            for _ in 0..<repeats {
                reloads.append(
                    try milliseconds {
                        let length = try store.count(view: view)
                        let position = try store.position(of: selected.id, view: view) ?? 0
                        _ = try store.window(view: view, offset: max(0, min(position - 100, length - 200)), limit: 200, total: length)
                    })
            }
        }
        print("  reload in the middle of each view (count, position of the selection, window): \(summary(reloads))")
        var searches: [Double] = []
        for query in ClientBench.searchQueries {
            for _ in 0..<repeats {
                searches.append(try milliseconds { _ = try store.window(view: .all, query: query, offset: 0, limit: 200) })
            }
        }
        print("  search (All, first 200 matches of 'deploy', 'db-3', 'flaky', 'no such words'): \(summary(searches))")
        try Self.searches(store, repeats: repeats)
        var countSamples: [Double] = []
        for _ in 0..<repeats { countSamples.append(try milliseconds { _ = try store.counts() }) }
        print("  the six counts: \(summary(countSamples))")
    }

    /// Real 1,000-change pages: another device marks 1,000 notifications read through the
    /// service; this device fetches the page and applies it (timed: the apply, one transaction).
    func pageApply(_ store: LocalStore, pages: Int) async throws {
        let ids = try (await store.perform { try $0.ids(view: .unread) })
        guard ids.count >= pages * 1000 else { throw SupportError("not enough unread notifications for \(pages) pages") }
        var samples: [Double] = [], fetching: [Double] = [], decoding: [Double] = [], foundation: [Double] = []
        for round in 0..<pages {
            let chunk = ids[(round * 1000)..<((round + 1) * 1000)]
            try await service.sendBatches(
                chunk.map {
                    #"{"id":"\#($0)","readState":"Read","changedAt":\#(ISOTime.millis(Date())),"mutationId":"\#(UUID().uuidString)"}"#
                })
            let since = try (await store.perform { try $0.cursor() })
            let fetchStart = ContinuousClock.now
            let (_, text) = try await service.request(
                .GET, "/v1/me/notifications/changes?limit=1000" + (since.map { "&since=\($0)" } ?? ""), token: service.userToken)
            fetching.append((ContinuousClock.now - fetchStart).seconds * 1000)
            var decoded: ChangesPage?
            let body = Data(text.utf8)
            decoding.append(try milliseconds { decoded = try ChangesPage(wire: body) })
            foundation.append(try milliseconds { _ = try NottyJSON.decoder.decode(ChangesPage.self, from: body) })
            let page = decoded!
            guard page.changes.count == 1000 else { throw SupportError("page of \(page.changes.count) changes") }
            var outcome: PageOutcome?
            samples.append(try milliseconds { outcome = try store.apply(page: page, since: since) })
            guard case .applied = outcome else { throw SupportError("page not applied: \(String(describing: outcome))") }
        }
        print("apply a 1,000-change page to the \(device.count)-row store (one transaction, fsync): \(summary(samples))")
        print(
            "  for comparison, the same pages: fetched from the service \(summary(fetching)); read as notty does (JSONParser) \(summary(decoding)), with JSONDecoder \(summary(foundation))"
        )
    }

    /// `notty poll --live` runs on device B; another device dismisses through the service
    /// (one PATCH, as its outbox flush sends it); timed until B's store, read by this process
    /// as any other process of B would, shows it dismissed.
    func doorbell(_ store: LocalStore, rounds: Int) async throws {
        let poll = try device.cli.start(["poll", "--live"], log: device.home.appendingPathComponent("poll.log"))
        defer {
            poll.signal(SIGTERM)
            poll.wait()
        }
        // Connected once a change made elsewhere reaches the store.
        let ids = Array(try (await store.perform { try $0.ids(view: .unread) }).suffix(rounds + 1))
        _ = try await dismiss(ids[0], store: store, timeout: .seconds(15))
        var samples: [Double] = [], answered: [Double] = []
        for id in ids.dropFirst() {
            let (total, patch) = try await dismiss(id, store: store, timeout: .seconds(5))
            samples.append(total)
            answered.append(patch)
            try await Task.sleep(for: .milliseconds(5))
        }
        print("dismiss on device A → device B's store (doorbell, `notty poll --live`): \(summary(samples))")
        print("  of which the PATCH's answer to A (the service's commit): \(summary(answered))")
    }

    /// Milliseconds until B's store shows `id` dismissed, and until the PATCH was answered.
    private func dismiss(_ id: String, store: LocalStore, timeout: Duration) async throws -> (total: Double, patch: Double) {
        let start = ContinuousClock.now
        let (status, text) = try await service.request(
            .PATCH, "/v1/me/notifications/\(id)", token: service.userToken,
            body: #"{"userActionState":"Dismissed","changedAt":\#(ISOTime.millis(Date())),"mutationId":"\#(UUID().uuidString)"}"#)
        let patch = (ContinuousClock.now - start).seconds * 1000
        guard status == 200 else { throw SupportError("PATCH answered \(status): \(text.prefix(200))") }
        // Looked at every 100 µs on a thread of its own (the store blocks).
        let seen = try await store.perform { store in
            while ContinuousClock.now - start < timeout {
                if try store.notification(id: id)?.userActionState == .dismissed { return true }
                usleep(100)
            }
            return false
        }
        if seen { return ((ContinuousClock.now - start).seconds * 1000, patch) }
        throw SupportError("device B's store never showed \(id) dismissed")
    }
}
