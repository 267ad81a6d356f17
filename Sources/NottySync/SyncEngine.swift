import Foundation
import NottyCore
import NottyStore

/// How the sync engine reaches the service: the change feed and the batch route. The real
/// one is ``HTTPTransport``; the simulation in the tests wraps the service in process.
public protocol SyncTransport: Sendable {
    /// One page of the change feed after `since` (from the start when nil).
    /// Throws ``SyncError/cursorExpired`` for a cursor older than the kept history.
    func changes(since: String?, limit: Int) async throws -> ChangesPage
    /// Sends mutations through the batch route; one result per mutation.
    func batch(_ mutations: [Mutation]) async throws -> [MutationResult]
    /// A conditional pull (the polling contract): a nil page when nothing changed since
    /// `since`, with the service's poll interval when it says one.
    func changesIfChanged(since: String?, limit: Int) async throws -> (page: ChangesPage?, pollInterval: Int?)
    /// The user's preferences (PROTOCOL.md §9), all of them.
    func preferences() async throws -> [PreferenceEntry]
    /// Sends preferences set on this device; answers all of them after the write.
    func setPreferences(_ entries: [PreferenceEntry]) async throws -> [PreferenceEntry]
}

extension SyncTransport {
    public func changesIfChanged(since: String?, limit: Int) async throws -> (page: ChangesPage?, pollInterval: Int?) {
        (try await changes(since: since, limit: limit), nil)
    }
}

/// What one sync did.
public struct SyncSummary: Sendable, Equatable {
    public var pulled = 0
    public var sent = 0
    public var resynced = false
    public init() {}
}

/// Keeps a ``LocalStore`` in step with the service in both directions: pulls the change feed
/// by cursor (one transaction per page; a `410` starts a full resync that keeps the outbox)
/// and flushes the outbox through the batch route with stable `mutationId`s, so a crash
/// between sending and acknowledging neither loses a change nor applies it twice.
public actor SyncEngine {
    public let store: LocalStore
    public let transport: any SyncTransport
    let pageSize: Int
    /// Pages of a pull from the start (a first sync, a resync): the service's largest, so that
    /// a long history is fetched, decoded and written in fewer, larger transactions.
    let initialPageSize: Int
    let batchSize: Int
    /// Whether the store may hold indexes put off by a first sync: true until this engine's
    /// first pull has looked (one a process killed mid-sync left), then only after it put some
    /// off itself, so that later pulls (every doorbell) do not ask the store again.
    private var indexesMayBeDeferred = true
    /// Whether the store is known to hold the service's preferences (fetched whole once, or
    /// pulled from the start); until then each pull asks the store.
    private var preferencesFetched = false

    /// `pageSize` is the limit of pages after the store's cursor; a pull from the start uses
    /// `initialPageSize` (the service's maximum, 5000, unless given).
    public init(store: LocalStore, transport: any SyncTransport, pageSize: Int = 1000, initialPageSize: Int? = nil, batchSize: Int = 500) {
        self.store = store
        self.transport = transport
        self.pageSize = pageSize
        self.initialPageSize = initialPageSize ?? max(pageSize, 5000)
        self.batchSize = batchSize
    }

    /// One sync: pull, then flush the outbox.
    @discardableResult
    public func sync() async throws -> SyncSummary {
        var summary = try await pull()
        summary.sent = try await flush()
        return summary
    }

    /// Pulls every change after the store's cursor. The next page is fetched while the
    /// current one is being applied. Into an empty store, the rows go in without the store's
    /// secondary indexes, which are made once at the end (or at the end of the next pull, if
    /// this one fails or the process dies).
    @discardableResult
    public func pull() async throws -> SyncSummary {
        let (fromStart, deferred) = try await store.perform { store in
            let fromStart = try store.cursor() == nil
            return (fromStart, try fromStart && store.deferIndexesIfEmpty())
        }
        if deferred { indexesMayBeDeferred = true }
        do {
            let summary = try await pullPages()
            try await buildDeferredIndexes()
            try await fetchPreferencesOnce(pulledFromStart: fromStart)
            return summary
        } catch {
            try? await buildDeferredIndexes()
            throw error
        }
    }

    /// A store that synced before preferences existed has its cursor past them: it fetches
    /// them whole once. One that pulled from the start has them all.
    private func fetchPreferencesOnce(pulledFromStart: Bool) async throws {
        guard !preferencesFetched else { return }
        if try await !store.perform({ try $0.preferencesFetched() }) {
            let entries = pulledFromStart ? [] : try await transport.preferences()
            try await store.perform { try $0.applyFetchedPreferences(entries) }
        }
        preferencesFetched = true
    }

    private func buildDeferredIndexes() async throws {
        guard indexesMayBeDeferred else { return }
        try await store.perform { try $0.buildDeferredIndexes() }
        indexesMayBeDeferred = false
    }

    private func pullPages() async throws -> SyncSummary {
        var summary = SyncSummary()
        var rounds = 0
        var prefetched: (since: String, page: Task<ChangesPage, any Error>)?
        defer { prefetched?.page.cancel() }
        var limit = pageSize
        while true {
            rounds += 1
            if rounds > 1_000_000 { break }
            let since = try await store.perform { try $0.cursor() }
            if since == nil { limit = initialPageSize }  // from the start: large pages to the end
            let page: ChangesPage
            do {
                if let next = prefetched, next.since == since {
                    page = try await next.page.value
                } else {
                    prefetched?.page.cancel()
                    page = try await transport.changes(since: since, limit: limit)
                }
                prefetched = nil
            } catch SyncError.cursorExpired {
                prefetched = nil
                guard !summary.resynced else { throw SyncError.cursorExpired }
                try await store.perform { try $0.beginResync() }
                summary.resynced = true
                continue
            }
            if page.hasMore {
                let transport = transport, cursor = page.cursor, size = limit
                prefetched = (cursor, Task { try await transport.changes(since: cursor, limit: size) })
            }
            switch try await store.perform({ try $0.apply(page: page, since: since) }) {
            case .cursorMoved:
                continue
            case .applied(let changed):
                summary.pulled += changed
            }
            if !page.hasMore { break }
        }
        // A resync this pull began, or one an earlier pull began and a dead network cut off:
        // what the service did not send again is gone.
        let unfinished = summary.resynced ? true : try await store.perform { try $0.resyncUnfinished() }
        if unfinished {
            try await store.perform { try $0.finishResync() }
            summary.resynced = true
        }
        return summary
    }

    /// One conditional pull (the polling contract): applies what changed (pulling on while there is more) and returns
    /// the service's poll interval, if it said one.
    public func pullIfChanged() async throws -> (summary: SyncSummary, pollInterval: Int?) {
        let since = try await store.perform { try $0.cursor() }
        // From the start, a whole pull: large pages, an empty store's indexes made at the end.
        if since == nil { return (try await pull(), nil) }
        let answer: (page: ChangesPage?, pollInterval: Int?)
        do {
            answer = try await transport.changesIfChanged(since: since, limit: pageSize)
        } catch SyncError.cursorExpired {
            return (try await pull(), nil)
        }
        var summary = SyncSummary()
        if let page = answer.page {
            let (outcome, cursor) = try await store.perform { store in
                (try store.apply(page: page, since: since), try store.cursor())
            }
            if case .applied(let changed) = outcome { summary.pulled = changed }
            let moved = cursor != page.cursor
            if page.hasMore || moved {
                let more = try await pull()
                summary.pulled += more.pulled
                summary.resynced = more.resynced
            }
        } else {
            try await store.perform { try $0.noteSynced() }
        }
        return (summary, answer.pollInterval)
    }

    /// Applies a full doorbell frame or push payload when it follows on from the store's
    /// cursor; otherwise pulls. Returns whether the frame itself was applied.
    @discardableResult
    public func receive(_ frame: DoorbellFrame) async throws -> Bool {
        if frame.type == "changes", let changes = frame.changes, let previous = frame.previousCursor {
            let page = ChangesPage(changes: changes, cursor: frame.cursor, hasMore: false, preferences: frame.preferences)
            if case .applied = try await store.perform({ try $0.apply(page: page, since: previous) }) { return true }
        }
        if try await store.perform({ try $0.cursor() }) != frame.cursor { try await pull() }
        return false
    }

    /// Sends the outbox, oldest first, in batches. Returns how many entries left it.
    @discardableResult
    public func flush() async throws -> Int {
        var sent = 0
        while true {
            let batchSize = batchSize
            let entries = try await store.perform { try $0.pending(limit: batchSize) }
            guard !entries.isEmpty else { break }
            let results = try await transport.batch(entries.map(\.mutation))
            let done = try await store.perform { try $0.acknowledge(results) }
            sent += done
            if done == 0 { break }  // every item was refused for now (e.g. rate limited): later
        }
        // Preferences set here: sent together; the answer says who won each.
        let preferences = try await store.perform { try $0.pendingPreferences() }
        if !preferences.isEmpty {
            let answer = try await transport.setPreferences(preferences)
            try await store.perform { try $0.acknowledgePreferences(sent: preferences, answer: answer) }
            sent += preferences.count
        }
        return sent
    }
}

/// ``SyncTransport`` over HTTP through a signed-in ``ServiceClient``.
public struct HTTPTransport: SyncTransport {
    public let client: ServiceClient

    public init(client: ServiceClient) { self.client = client }

    public func changes(since: String?, limit: Int) async throws -> ChangesPage {
        try Self.page(try await client.send(.GET, Self.changesPath(since: since, limit: limit)))
    }

    static func changesPath(since: String?, limit: Int) -> String {
        var path = "/v1/me/notifications/changes?limit=\(limit)"
        if let since { path += "&since=\(since.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? since)" }
        return path
    }

    static func page(_ answer: HTTPAnswer) throws -> ChangesPage {
        switch answer.status {
        case 200:
            do {
                return try ChangesPage(wire: answer.body)
            } catch {
                throw SyncError.unreachable("the service sent a change page notty cannot read: \(error)")
            }
        case 410:
            throw SyncError.cursorExpired
        default:
            let error = answer.errorText
            throw SyncError.refused(status: answer.status, code: error.code, message: error.message)
        }
    }

    /// The service refuses bodies over 64 KiB: batches are split to stay well below.
    static let maxBatchBytes = 48 << 10

    public func batch(_ mutations: [Mutation]) async throws -> [MutationResult] {
        var results: [MutationResult] = []
        var chunk: [JSONValue] = []
        var size = 0
        for mutation in mutations {
            let item = mutation.jsonObject()
            let itemSize = item.jsonText.utf8.count + 1
            if !chunk.isEmpty && (size + itemSize > Self.maxBatchBytes || chunk.count == 1000) {
                results += try await send(chunk)
                chunk = []
                size = 0
            }
            chunk.append(item)
            size += itemSize
        }
        if !chunk.isEmpty { results += try await send(chunk) }
        return results
    }

    private func send(_ items: [JSONValue]) async throws -> [MutationResult] {
        let body = JSONValue.object(["mutations": .array(items)]).jsonText
        let answer = try await client.send(.POST, "/v1/me/notifications/batch", json: Data(body.utf8))
        return try Self.decoded(BatchResponse.self, from: answer, what: "a batch answer").results
    }

    public func preferences() async throws -> [PreferenceEntry] {
        try Self.decoded(PreferenceList.self, from: try await client.send(.GET, "/v1/me/preferences"), what: "preferences").preferences
    }

    public func setPreferences(_ entries: [PreferenceEntry]) async throws -> [PreferenceEntry] {
        let items: [JSONValue] = entries.map { entry in
            .object(["key": .string(entry.key), "value": entry.value, "changedAt": .number(Double(ISOTime.millis(entry.changedAt)))])
        }
        let body = JSONValue.object(["preferences": .array(items)]).jsonText
        let answer = try await client.send(.PATCH, "/v1/me/preferences", json: Data(body.utf8))
        return try Self.decoded(PreferenceList.self, from: answer, what: "preferences").preferences
    }

    /// A `200` answer's body as `T`; any other status is the service's refusal, a body notty
    /// cannot read is as if the answer never came.
    static func decoded<T: Decodable>(_ type: T.Type, from answer: HTTPAnswer, what: String) throws -> T {
        guard answer.status == 200 else {
            let error = answer.errorText
            throw SyncError.refused(status: answer.status, code: error.code, message: error.message)
        }
        do {
            return try NottyJSON.decoder.decode(T.self, from: answer.body)
        } catch {
            throw SyncError.unreachable("the service sent \(what) notty cannot read: \(error)")
        }
    }

    /// A conditional pull (the polling contract): nil when nothing changed since `cursor`,
    /// with the service's poll interval.
    public func changesIfChanged(since cursor: String?, limit: Int) async throws -> (page: ChangesPage?, pollInterval: Int?) {
        let headers = cursor.map { [("If-None-Match", "\"\($0)\"")] } ?? []
        let answer = try await client.send(.GET, Self.changesPath(since: cursor, limit: limit), headers: headers)
        let interval = answer.headers.first(name: "X-Poll-Interval").flatMap(Int.init)
        if answer.status == 304 { return (nil, interval) }
        return (try Self.page(answer), interval)
    }
}
