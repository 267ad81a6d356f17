import Foundation
import NottyCore
import NottyPOSIX
import NottyStore
import NottySync
import NottyTUI
import NottyTerminal
import Synchronization

/// The terminal notification center: one thread owns ncurses and runs the loop; key presses,
/// resizes, store changes (from any process), sync status and ticks all become `TUIEvent`s for
/// the pure `update`, whose effects are performed here, and `render` output is painted (only
/// the cells that changed).
public final class Center: Sendable {
    let store: LocalStore
    let credentials: Credentials
    let client: ServiceClient
    let engine: SyncEngine
    let settings: ClientSettings
    /// Events posted from other threads (the sync's callbacks, the store's watcher) for the loop.
    private let eventQueue = Mutex<[TUIEvent]>([])
    /// Set when the status line's facts may have changed; the loop reads them from the store
    /// (two small reads: never on a callback's thread, which may be Swift's cooperative pool,
    /// and no thread of their own, whose malloc arena would stay resident).
    private let statusStale = Atomic<Bool>(true)
    private let quitRequested = Atomic<Bool>(false)
    /// Ends the loop's wait for a key when an event is posted or a quit requested, so that the
    /// loop sleeps until its next tick instead of looking every 50 ms (nil: it looks).
    private let wakeUp = WakeUp()
    /// Set once `run` starts it; read by the loop's thread and the sync's callbacks.
    private let liveSync = Mutex<LiveSync?>(nil)
    /// Told once the first frame is painted (then nil).
    private let firstPaint = Mutex<AsyncStream<Void>.Continuation?>(nil)
    /// Written by the sync's callbacks, read when the status line is built.
    private let connection = Mutex<ConnectionState>(.connecting)
    /// Where the user is on call (PROTOCOL.md §13.2), as the service last said.
    private let onCall = Mutex<[MyOnCall]>([])
    /// Counts the saved views' tabs off the loop (a search with many matches is a scan of All):
    /// one run at a time, one more when the store changed meanwhile.
    private let savedViewCount = Mutex<(running: Bool, again: Bool)>((false, false))
    /// How often the center asks the service where the user is on call.
    static let onCallRefresh: Duration = .seconds(300)

    public init(store: LocalStore, credentials: Credentials, client: ServiceClient, engine: SyncEngine, settings: ClientSettings) {
        self.store = store
        self.credentials = credentials
        self.client = client
        self.engine = engine
        self.settings = settings
    }

    /// Runs until `q` (or SIGTERM/SIGINT/SIGHUP); the terminal is restored on every path.
    public func run() async throws {
        Signals.installCrashHandlers()
        let signals = Signals.terminationSignals()
        let liveSync = LiveSync(engine: engine, client: client, mode: .live) { [weak self] event in self?.syncEvent(event) }
        self.liveSync.withLock { $0 = liveSync }
        // Syncing and the status line's "on call for ops until Mon 09:00" (asked now and every
        // few minutes) start once the first frame is painted: on two cores their start (NIO's
        // threads, TLS, the connections) would otherwise compete with the first frame.
        let (painted, paintedContinuation) = AsyncStream.makeStream(of: Void.self)
        firstPaint.withLock { $0 = paintedContinuation }
        let syncTask = Task { [weak self, client] in
            for await _ in painted { break }
            guard !Task.isCancelled else { return }  // the loop ended before it painted
            await withDiscardingTaskGroup { group in
                group.addTask { await liveSync.run() }
                group.addTask {
                    while !Task.isCancelled {
                        if let mine = try? await client.myOnCall() {
                            self?.onCall.withLock { $0 = mine.filter(\.onCall) }
                            self?.postStatus()
                        }
                        try? await Task.sleep(for: Self.onCallRefresh)
                    }
                }
            }
        }
        let signalTask = Task { [weak self] in
            for await _ in signals {
                self?.quitRequested.store(true, ordering: .relaxed)
                self?.wakeUp?.signal()
                break
            }
        }
        let indexer = SearchIndexer(store: store)
        let changes = store.changes()
        let watcher = Task { [weak self] in
            try? await Task.sleep(for: .milliseconds(200))
            indexer.catchUp()  // after the first frame
            self?.countSavedViews()
            for await change in changes {
                self?.post(.storeChanged)
                self?.countSavedViews()
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

    public func post(_ event: TUIEvent) {
        eventQueue.withLock { $0.append(event) }
        wakeUp?.signal()
    }

    /// Asks the loop to read the status line's facts again.
    private func postStatus() {
        statusStale.store(true, ordering: .releasing)
        wakeUp?.signal()
    }

    /// The status line's facts, read from the store (on the loop's thread).
    private func readStatus() -> TUIEvent {
        let info = try? store.syncInfo()
        let interruptions = Interruptions(preferences: (try? store.preferences()) ?? [], now: Date())
        return .status(
            SyncStatus(
                user: credentials.userName, server: credentials.server, connection: connection.withLock { $0 },
                outbox: info?.outbox ?? 0, lastSync: info?.lastSync, quietUntil: interruptions.quietUntil, mutes: interruptions.mutes.count,
                onCall: onCall.withLock { $0 }))
    }

    private func syncEvent(_ event: LiveSyncEvent) {
        switch event {
        case .connection(let state):
            connection.withLock { $0 = state }
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
        var lastTick = Date()
        var running = true
        // Windows and frames read and rendered ahead of their keys while the user is idle.
        var ahead = WorkAhead()
        /// Runs a write of the user's. A store error a user can act on (a full disk) is said
        /// in the status line and the view is read again from the store, where the change did
        /// not happen; the center stays up. Answers whether the change was saved.
        func saved(_ write: () throws -> Void) throws -> Bool {
            do {
                try write()
            } catch let error as StoreError {
                pending.append(.message(error.description))
                pending.append(.storeChanged)
                return false
            }
            pending.append(.storeChanged)
            return true
        }
        while running {
            if quitRequested.load(ordering: .relaxed) { break }
            pending += eventQueue.withLock { events in
                defer { events.removeAll() }; return events
            }
            if statusStale.exchange(false, ordering: .acquiringAndReleasing) { pending.append(readStatus()) }
            let now = Date()
            if now.timeIntervalSince(lastTick) >= 1 || now < lastTick {  // or the wall clock stepped back
                pending.append(.tick(now))
                lastTick = now
            }
            var index = 0
            let dirty = !pending.isEmpty
            let timeOnly = pending.allSatisfy { event in
                switch event {
                case .tick, .status: true
                default: false
                }
            }
            while index < pending.count {
                if case .storeChanged = pending[index] { ahead.storeChanged(at: now) }
                let effects = update(&state, pending[index])
                index += 1
                for effect in effects {
                    switch effect {
                    case .load(let request):
                        do {
                            pending.append(try loader.answer(request, now: Date()))
                        } catch let error as StoreError {
                            pending.append(.message(error.description))  // a saved view's search this build cannot read
                        }
                    case .mutate(let changes):
                        if try saved({ _ = try store.record(changes.map { ($0.id, LocalChange.patch($0.change)) }) }) { requestSync() }
                    case .delete(let ids):
                        if try saved({ _ = try store.record(ids.map { ($0, LocalChange.delete) }) }) { requestSync() }
                    case .markAllRead(let view, let query):
                        // Only the Unread ones change (and are what `u` restores).
                        var ids: [String] = []
                        if try saved({ ids = try store.markAllRead(view: view, query: query) }) {
                            pending.append(.markedAllRead(ids))
                            requestSync()
                        }
                    case .readGroup(let view, let query, let action):
                        // A group is few rows: read whole, acted on as one step.
                        let rows = try store.window(view: view, query: query, offset: 0, limit: Int(Int32.max), now: Date())
                        pending.append(.groupRead(action, rows))
                    case .findUnread(let request, let forward):
                        let now = Date()
                        if let anchor = request.anchorId,
                            let found = try store.nextUnread(view: request.view, query: request.query, after: anchor, forward: forward, now: now)
                        {
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
                    case .runAction(let id, let number, let label):
                        // The service runs it (PROTOCOL.md §12); the answer is a message, the outcome comes with the next sync.
                        Task { [client, weak self] in
                            let line: String
                            do {
                                let result = try await client.pressAction(id: id, action: number)
                                line = "\(label): \(result.line(now: Date()))"
                            } catch {
                                line = "\(label): \(error)"
                            }
                            self?.post(.message(line))
                            self?.requestSync()
                        }
                    case .sync:
                        requestSync()
                    case .setQuiet(let until):
                        do {
                            try store.setQuiet(until: until)
                            postStatus()
                            requestSync()  // sends it
                        } catch {
                            pending.append(.message("\(error)"))
                        }
                    case .quit:
                        running = false
                    }
                }
            }
            pending.removeAll()
            if dirty {
                terminal.paint(ahead.frame(for: state, timeOnly: timeOnly))
                loader.startCounting()  // answers leave counts only while events are handled
                if let told = firstPaint.withLock({ continuation in
                    defer { continuation = nil }; return continuation
                }) {
                    told.yield()
                    told.finish()
                }
            }
            guard running else { break }
            // With nothing to do ahead, the wait lasts until the next tick (a second at most,
            // should the wall clock step back): anything posted meanwhile ends it.
            let untilTick = min(1000, max(1, Int((1 - Date().timeIntervalSince(lastTick)) * 1000)))
            let idle = wakeUp == nil ? 50 : untilTick
            switch terminal.readKey(timeoutMilliseconds: ahead.waitMilliseconds ?? idle, wakeUp: wakeUp) {
            case .key(let key)?: pending.append(.key(key))
            case .resize(let size)?: pending.append(.resize(size))
            case .closed?: running = false
            case nil: ahead.step(state: state, loader: loader, now: Date())
            }
        }
    }

    private func requestSync() {
        guard let liveSync = liveSync.withLock({ $0 }) else { return }
        Task { await liveSync.requestSync() }
    }

    // MARK: - Saved views (PROTOCOL.md §17)

    /// Reads the saved views and counts each (off the loop), then posts them for the tabs.
    private func countSavedViews() {
        let start = savedViewCount.withLock { state -> Bool in
            if state.running {
                state.again = true
                return false
            }
            state.running = true
            return true
        }
        guard start else { return }
        startOffThePool(name: "notty-views") { [self] in
            while true {
                let now = Date()
                let tabs =
                    (try? SavedView.all(in: store.preferences()).map { view in
                        SavedViewTab(name: view.name, query: view.query, count: try? store.count(view: .all, query: view.query, now: now))
                    }) ?? []
                post(.savedViews(tabs))
                let again = savedViewCount.withLock { state -> Bool in
                    if state.again {
                        state.again = false
                        return true
                    }
                    state.running = false
                    return false
                }
                if !again { return }
            }
        }
    }
}
