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
final class WindowLoader {
    let store: LocalStore
    private var cached: (revision: Int64, validUntil: Date?, counts: ViewCounts)?

    init(store: LocalStore) {
        self.store = store
    }

    func answer(_ request: WindowRequest, now: Date) throws -> TUIEvent {
        let counts = try counts(now: now)
        let total = request.query.isEmpty ? counts[request.view] : try store.count(view: request.view, query: request.query, now: now)
        let anchor = try request.anchorId.flatMap { try store.position(of: $0, view: request.view, query: request.query, now: now) }
        let (selection, offset, length) = request.placement(total: total, anchorIndex: anchor)
        let rows = length > 0 ? try store.window(view: request.view, query: request.query, offset: offset, limit: length, total: total, now: now) : []
        let window = ViewWindow(view: request.view, query: request.query, total: total, offset: offset, rows: rows)
        return .loaded(window, counts: counts, selection: selection)
    }

    private func counts(now: Date) throws -> ViewCounts {
        let revision = try store.revision()
        if let cached, cached.revision == revision, cached.validUntil.map({ now < $0 }) ?? true {
            return cached.counts
        }
        let counts = try store.counts(now: now)
        cached = (revision, try store.nextTimedChange(after: now), counts)
        return counts
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
    private let inbox = Mutex<[TUIEvent]>([])
    private let quitRequested = Atomic<Bool>(false)
    private var liveSync: LiveSync?
    private var connection: SyncStatus.Connection = .connecting

    init(store: LocalStore, credentials: Credentials, client: ServiceClient, engine: SyncEngine) {
        self.store = store
        self.credentials = credentials
        self.client = client
        self.engine = engine
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
        let watcher = Task { [weak self, store] in
            var revision = (try? store.revision()) ?? 0
            var nextTimed = try? store.nextTimedChange()
            while !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(200))
                let now = (try? store.revision()) ?? revision
                if now != revision {
                    revision = now
                    nextTimed = try? store.nextTimedChange()
                    self?.post(.storeChanged)
                    self?.postStatus()
                } else if let due = nextTimed, due <= Date() {
                    nextTimed = try? store.nextTimedChange()
                    self?.post(.storeChanged)  // a snooze ended or a notification expired
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
        try terminal.start(useColor: Terminal.colorAllowed())
        defer { terminal.stop() }
        var state = TUIState(size: terminal.size(), now: Date(), timeZone: .current, useColor: Terminal.colorAllowed())
        let loader = WindowLoader(store: store)
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
                        let ids = try store.ids(view: view, query: query)
                        try store.record(ids.map { ($0, LocalAction.patch(StateChange(readState: .read))) })
                        pending.append(.storeChanged)
                        requestSync()
                    case .sync:
                        requestSync()
                    case .quit:
                        running = false
                    }
                }
            }
            pending.removeAll()
            if dirty { terminal.paint(render(state)) }
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
            Keys: j/k move, Enter opens (and marks read), a activate, d dismiss, r read/unread,
            s snooze, x delete, Space select, M mark all read, u undo, / search, n/p next or
            previous unread, R sync now, ? help, q quit. Changes from your other devices appear
            by themselves. NO_COLOR=1 turns colour off.
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
    let (client, store, engine) = try device.session()
    try await Center(store: store, credentials: await client.current, client: client, engine: engine).run()
}
