import ArgumentParser
import Foundation
import NottyCore
import NottyStore
import NottySync
import NottyTUI
import NottyTerminal
import Synchronization

/// Answers the UI's window requests from the store: the view's rows around the selection,
/// read with indexed, windowed queries (never the whole view). The six counts are read again
/// only when the store changed or a snooze or expiry came due, not on every key press.
///
/// A search with many matches is answered before they are counted (counting them is a scan
/// of the view): the window holds the rows around the selection and says it is not counted,
/// a background task counts, and `recount` asks the UI to load again, which then takes the
/// count from here while the store has not changed.
final class WindowLoader: Sendable {
    let store: LocalStore
    private let recount: @Sendable () -> Void
    private let cached = Mutex<(revision: Int64, validUntil: Date?, counts: ViewCounts)?>(nil)
    private let searchCounts = Mutex<[SearchCount: (count: Int, validUntil: Date?)]>([:])
    private let counting = Mutex<Set<SearchCount>>([])
    /// Counts asked for by answers not yet painted.
    private let toCount = Mutex<[SearchCount]>([])

    /// A search's count as of one revision of the store.
    struct SearchCount: Hashable {
        var view: NotificationView
        var query: String
        var revision: Int64
    }

    init(store: LocalStore, recount: @escaping @Sendable () -> Void) {
        self.store = store
        self.recount = recount
    }

    func answer(_ request: WindowRequest, now: Date) throws -> TUIEvent {
        let (revision, counts) = try counts(now: now)
        let anchor = try request.anchorId.flatMap { try store.position(of: $0, view: request.view, query: request.query, now: now) }
        let total: Int
        if request.query.isEmpty {
            total = counts[request.view]
        } else if let known = searchCount(SearchCount(view: request.view, query: request.query, revision: revision), now: now) {
            total = known
        } else if let quick = try store.quickCount(view: request.view, query: request.query, now: now) {
            total = quick
        } else {
            return try answerBeforeCounting(request, anchor: anchor, revision: revision, counts: counts, now: now)
        }
        let (selection, offset, length) = request.placement(total: total, anchorIndex: anchor)
        let rows = length > 0 ? try store.window(view: request.view, query: request.query, offset: offset, limit: length, total: total, now: now) : []
        let window = ViewWindow(view: request.view, query: request.query, total: total, offset: offset, rows: rows)
        return .loaded(window, counts: counts, selection: selection)
    }

    /// The rows around the selection of a search whose matches are not counted yet (found by
    /// stepping over the view from its newest row); counting starts in the background. When
    /// fewer rows than asked for come back, they end the list and are its count.
    private func answerBeforeCounting(_ request: WindowRequest, anchor: Int?, revision: Int64, counts: ViewCounts, now: Date) throws -> TUIEvent {
        // The placement of a list with no end known.
        let (wanted, offset, span) = request.placement(total: .max, anchorIndex: anchor)
        var rows = try store.window(view: request.view, query: request.query, offset: offset, limit: span + 1, now: now)
        let counted = rows.count <= span && (offset == 0 || !rows.isEmpty)
        if !counted {
            if rows.isEmpty {  // past the end of a list not counted yet: start again from the top
                return try answer(WindowRequest(view: request.view, query: request.query, index: 0, span: span), now: now)
            }
            rows.removeLast()
            toCount.withLock { $0.append(SearchCount(view: request.view, query: request.query, revision: revision)) }
        }
        let window = ViewWindow(view: request.view, query: request.query, total: offset + rows.count, offset: offset, rows: rows, counted: counted)
        return .loaded(window, counts: counts, selection: min(wanted, max(0, offset + rows.count - 1)))
    }

    private func searchCount(_ key: SearchCount, now: Date) -> Int? {
        guard let known = searchCounts.withLock({ $0[key] }), known.validUntil.map({ now < $0 }) ?? true else { return nil }
        return known.count
    }

    /// Starts counting what answers left uncounted; called once their frame is painted, so
    /// that counting does not compete with it for the processor.
    func startCounting() {
        for key in toCount.withLock({ keys in defer { keys.removeAll() }; return keys }) {
            countInBackground(key)
        }
    }

    private func countInBackground(_ key: SearchCount) {
        guard counting.withLock({ $0.insert(key).inserted }) else { return }
        Task.detached { [self] in
            let now = Date()
            // The revision is read before counting: a count tagged with it is of that
            // revision, or of a later one that makes the tag stale anyway.
            let count = (try? store.revision()) == key.revision ? try? store.count(view: key.view, query: key.query, now: now) : nil
            let validUntil = try? store.nextTimedChange(after: now)
            counting.withLock { _ = $0.remove(key) }
            // A count of a store that has changed since is of no use: that change reloads anyway.
            guard let count, (try? store.revision()) == key.revision else { return }
            searchCounts.withLock { counts in
                counts = counts.filter { $0.key.revision == key.revision }
                counts[key] = (count, validUntil)
            }
            recount()
        }
    }

    private func counts(now: Date) throws -> (revision: Int64, counts: ViewCounts) {
        let revision = try store.revision()
        if let cached = cached.withLock({ $0 }), cached.revision == revision, cached.validUntil.map({ now < $0 }) ?? true {
            return (revision, cached.counts)
        }
        let counts = try store.counts(now: now)
        let validUntil = try store.nextTimedChange(after: now)
        self.cached.withLock { $0 = (revision, validUntil, counts) }
        return (revision, counts)
    }
}

// glibc's, left out of Swift's Glibc module (malloc.h).
@_silgen_name("malloc_trim") private func c_malloc_trim(_ pad: Int) -> Int32

/// Adds the rows that are not in the search index yet, a few thousand per transaction, in the
/// background whenever the store changed; one run at a time.
final class SearchIndexer: Sendable {
    let store: LocalStore
    private let running = Atomic<Bool>(false)

    init(store: LocalStore) {
        self.store = store
    }

    func catchUp() {
        guard running.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged else { return }
        Task.detached(priority: .background) { [self] in
            var rounds = 0
            var finished = false  // false after an error: the next change tries again
            while !Task.isCancelled, let more = try? store.indexForSearch() {
                rounds += 1
                if !more { finished = true; break }
            }
            if rounds > 1 { _ = c_malloc_trim(0) }  // give the heap the index build used back
            running.store(false, ordering: .releasing)
            // Rows written after the last round but before the flag was cleared.
            if finished, (try? store.rowsToIndexForSearch()) ?? 0 > 0 { catchUp() }
        }
    }
}

/// The terminal notification center: one thread owns ncurses and runs the loop; key presses,
/// resizes, store changes (from any process), sync status and ticks all become `TUIEvent`s for
/// the pure `update`, whose effects are performed here, and `render` output is painted (only
/// the cells that changed).
final class Center: @unchecked Sendable {
    let store: LocalStore
    let credentials: Credentials
    let client: ServiceClient
    let engine: SyncEngine
    let settings: ClientSettings
    private let inbox = Mutex<[TUIEvent]>([])
    private let quitRequested = Atomic<Bool>(false)
    private var liveSync: LiveSync?
    private var connection: SyncStatus.Connection = .connecting

    init(store: LocalStore, credentials: Credentials, client: ServiceClient, engine: SyncEngine, settings: ClientSettings) {
        self.store = store
        self.credentials = credentials
        self.client = client
        self.engine = engine
        self.settings = settings
    }

    /// Runs until `q` (or SIGTERM/SIGINT/SIGHUP); the terminal is restored on every path.
    func run() async throws {
        Terminal.installCrashHandlers()
        let signals = Terminal.terminationSignals()
        let liveSync = LiveSync(engine: engine, client: client, mode: .live) { [weak self] event in self?.syncEvent(event) }
        self.liveSync = liveSync
        let syncTask = Task { await liveSync.run() }
        let signalTask = Task { [weak self] in
            for await _ in signals { self?.quitRequested.store(true, ordering: .relaxed); break }
        }
        let indexer = SearchIndexer(store: store)
        let changes = store.changes()
        let watcher = Task { [weak self] in
            try? await Task.sleep(for: .milliseconds(200))
            indexer.catchUp()  // after the first frame
            for await change in changes {
                self?.post(.storeChanged)
                if change == .committed {
                    self?.postStatus()
                    indexer.catchUp()
                }
            }
        }
        defer {
            watcher.cancel()
            signalTask.cancel()
            syncTask.cancel()
        }
        let exit: Result<Void, any Error> = await withCheckedContinuation { continuation in
            let thread = Thread { [self] in
                continuation.resume(returning: Result { try self.loop() })
            }
            thread.stackSize = 8 << 20
            thread.start()
        }
        try exit.get()
    }

    func post(_ event: TUIEvent) {
        inbox.withLock { $0.append(event) }
    }

    private func postStatus() {
        let info = try? store.syncInfo()
        post(.status(SyncStatus(
            user: credentials.userName, server: credentials.server, connection: connection,
            outbox: info?.outbox ?? 0, lastSync: info?.lastSync)))
    }

    private func syncEvent(_ event: LiveSyncEvent) {
        switch event {
        case .connection(let state):
            switch state {
            case .connecting: connection = .connecting
            case .live: connection = .live
            case .polling(let every): connection = .polling(everySeconds: every)
            case .offline(let since): connection = .offline(since: since)
            }
            postStatus()
        case .synced:
            postStatus()
        case .failed(let error):
            postStatus()
            if !error.isTransient { post(.message(error.description)) }
        }
    }

    // MARK: - The loop (one thread: the only one that touches ncurses)

    private func loop() throws {
        let terminal = Terminal()
        let useColor = settings.color && Terminal.colorAllowed()
        try terminal.start(useColor: useColor)
        defer { terminal.stop() }
        var state = TUIState(size: terminal.size(), now: Date(), timeZone: .current, useColor: useColor, view: settings.view)
        let loader = WindowLoader(store: store) { [weak self] in self?.post(.storeChanged) }
        var pending: [TUIEvent] = [.storeChanged]
        postStatus()
        var lastTick = Date()
        var running = true
        while running {
            if quitRequested.load(ordering: .relaxed) { break }
            pending += inbox.withLock { events in defer { events.removeAll() }; return events }
            let now = Date()
            if now.timeIntervalSince(lastTick) >= 1 {
                pending.append(.tick(now))
                lastTick = now
            }
            var index = 0
            let dirty = !pending.isEmpty
            while index < pending.count {
                let effects = update(&state, pending[index])
                index += 1
                for effect in effects {
                    switch effect {
                    case .load(let request):
                        pending.append(try loader.answer(request, now: Date()))
                    case .mutate(let changes):
                        try store.record(changes.map { ($0.id, LocalAction.patch($0.change)) })
                        pending.append(.storeChanged)
                        requestSync()
                    case .delete(let ids):
                        try store.record(ids.map { ($0, LocalAction.delete) })
                        pending.append(.storeChanged)
                        requestSync()
                    case .markAllRead(let view, let query):
                        // Only the Unread ones change (and are what `u` restores).
                        let ids = try store.window(view: view, query: query, offset: 0, limit: Int(Int32.max), now: Date())
                            .filter { $0.readState == .unread }.map(\.id)
                        try store.record(ids.map { ($0, LocalAction.patch(StateChange(readState: .read))) })
                        pending.append(.markedAllRead(ids))
                        pending.append(.storeChanged)
                        requestSync()
                    case .findUnread(let request, let forward):
                        let now = Date()
                        if let anchor = request.anchorId,
                           let found = try store.nextUnread(view: request.view, query: request.query, after: anchor, forward: forward, now: now) {
                            var jump = request
                            jump.anchorId = found
                            if case .loaded(let window, let counts, let selection) = try loader.answer(jump, now: now) {
                                pending.append(.jumped(window, counts: counts, selection: selection))
                            }
                        } else {
                            pending.append(.message(TUIState.noUnread(forward: forward)))
                        }
                    case .open(let url):
                        if let problem = LinkOpener.open(url) { pending.append(.message(problem)) }
                    case .sync:
                        requestSync()
                    case .quit:
                        running = false
                    }
                }
            }
            pending.removeAll()
            if dirty {
                terminal.paint(render(state))
                loader.startCounting()  // answers leave counts only while events are handled
            }
            guard running else { break }
            switch terminal.readKey(timeoutMilliseconds: 50) {
            case .key(let key)?: pending.append(.key(key))
            case .resize(let size)?: pending.append(.resize(size))
            case .closed?: running = false
            case nil: break
            }
        }
    }

    private func requestSync() {
        guard let liveSync else { return }
        Task { await liveSync.requestSync() }
    }
}

struct TUI: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tui",
        abstract: "The terminal notification center (what plain `notty` runs).",
        discussion: """
            Views: 1 Unread, 2 Read, 3 Activated, 4 Dismissed, 5 Snoozed, 6 All (Tab cycles).
            Keys: j/k move, Enter opens (and marks read), a activate, o open the link, d dismiss,
            r read/unread, s snooze, x delete, Space select, M mark all read, u undo, / search,
            n/p next or previous unread, R sync now, ? help, q quit. Changes from your other
            devices appear by themselves. NO_COLOR=1 turns colour off.

            config.toml sets the view it opens on and colour (see notty --help).
            """)

    func run() async throws {
        try await reportingErrors {
            try await openCenter(Device())
        }
    }
}

/// Opens the notification center for a signed-in device.
func openCenter(_ device: Device) async throws {
    guard isatty(STDOUT_FILENO) != 0 else {
        throw CLIError("the notification center needs a terminal; for scripts use notty list, notty poll or notty sync")
    }
    let settings = try device.settings()
    let (client, store, engine) = try device.session()
    try await Center(store: store, credentials: await client.current, client: client, engine: engine, settings: settings).run()
}
