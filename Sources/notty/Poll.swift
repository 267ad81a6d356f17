import ArgumentParser
import Foundation
import NottyCenter
import NottyCore
import NottyDBus
import NottyDesktop
import NottyStore
import NottySync
import NottyTerminal
import Synchronization

struct Poll: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Keep the local store in sync in the background and report new notifications.",
        discussion: """
            Prints each notification that arrives in Unread while it runs as one JSON line
            on stdout (the service's field names); one already read, dismissed or snoozed
            on another device when it arrives is not reported. --exec runs a command for
            each (NOTTY_ID, NOTTY_TITLE, NOTTY_BODY, NOTTY_PRIORITY, NOTTY_APP, NOTTY_GROUP,
            NOTTY_URL set) beside syncing: at most 4 at once, the rest queued in order, each stopped
            after --exec-timeout. --on-change runs a command (same variables, and NOTTY_STATE:
            read, unread, activated, dismissed, snoozed or deleted) when a notification known
            here changes state on any device, once per notification and round. --desktop shows desktop popups that close by themselves
            when the notification is handled on any device; closing one dismisses it
            everywhere, clicking it activates it. Polls at the service's X-Poll-Interval
            (or --interval when longer), backing off while the service is away; --live
            listens on the doorbell instead and falls back to polling. Defaults come from
            config.toml (see notty --help). SIGINT or SIGTERM stops it.

              notty poll --live --desktop
              notty poll --live --exec 'echo "$NOTTY_TITLE" >> ~/notty.log'
              notty poll --live --on-change 'echo "$NOTTY_ID $NOTTY_STATE" >> ~/notty.log'
              notty poll --once          # one sync, print what is new, exit
            """)

    @Option(help: ArgumentHelp("Seconds between polls (never more often than the service allows; default: poll.interval in config.toml).", valueName: "seconds")) var interval: Int?
    @Option(help: ArgumentHelp("A shell command to run for each new notification (default: poll.exec in config.toml).", valueName: "command")) var exec: String?
    @Option(name: .customLong("on-change"), help: ArgumentHelp("A shell command to run when a notification known here changes state on any device, with NOTTY_STATE set (default: poll.on_change in config.toml).", valueName: "command")) var onChange: String?
    @Option(name: .customLong("exec-timeout"), help: ArgumentHelp("Stop an --exec command that runs longer than this (default 60s).", valueName: "duration")) var execTimeout: DurationArgument?
    @Flag(help: "Sync once, report, and exit.") var once = false
    @Flag(inversion: .prefixedNo, help: "Use the doorbell WebSocket, falling back to polling (default: poll.live in config.toml, unless --interval is given).") var live: Bool?
    @Flag(inversion: .prefixedNo, help: "Desktop popups (org.freedesktop.Notifications on the session D-Bus) that follow every device (default: poll.desktop in config.toml).") var desktop: Bool?

    func validate() throws {
        if let interval, interval < 1 { throw ArgumentParser.ValidationError("--interval must be at least 1 second") }
        if once && live == true { throw ArgumentParser.ValidationError("--once and --live do not go together") }
    }

    func run() async throws {
        try await reportingErrors {
            let device = Device()
            let settings = try device.settings()
            let (client, store, engine) = try device.session()
            let runner = CommandRunner(timeout: execTimeout?.seconds ?? 60)
            let announcer = Announcer(store: store, exec: exec ?? settings.pollExec, runner: runner)
            let onChange = self.onChange ?? settings.pollOnChange
            // What the store already holds is not news: report what arrives from now on.
            try store.markAllAnnounced()
            try store.watchStates(onChange != nil)
            defer { try? store.watchStates(false) }
            if once {
                try await engine.sync()
                _ = try announcer.announce()
                if let onChange { try announcer.reportStateChanges(onChange) }
                runner.waitUntilIdle()
                return
            }
            // A flag wins over the file: --interval (or --no-live) asks for polling.
            let useLive = live ?? (interval == nil && settings.pollLive)
            let mode: LiveSync.Mode = useLive ? .live : .polling(minimumInterval: interval ?? settings.pollInterval ?? 1)
            // A popup's change is sent at once: the sync engine is made below, so it is looked up then.
            let engineBox = Mutex<LiveSync?>(nil)
            let popups = (desktop ?? settings.pollDesktop)
                ? DesktopPopups.start(store: store, changed: { if let sync = engineBox.withLock({ $0 }) { Task { await sync.requestSync() } } }) : nil
            let report: @Sendable () async -> Void = {
                let fresh = (try? announcer.announce()) ?? []
                if let onChange {
                    do { try announcer.reportStateChanges(onChange) } catch { warn("cannot read the state changes: \(error)") }
                }
                await popups?.arrived(fresh)
                await popups?.storeChanged()
            }
            let liveSync = LiveSync(engine: engine, client: client, mode: mode) { event in
                switch event {
                case .connection(let state): warn("connection: \(describe(state))")
                case .failed(let error): warn(error.description)
                case .synced: Task { await report() }  // at once: popups close within milliseconds
                }
            }
            engineBox.withLock { $0 = liveSync }
            let task = Task { await liveSync.run() }
            // The store's one watcher: whatever else wrote (the center, another process).
            let watcher = Task {
                await popups?.storeChanged()
                for await _ in store.changes() { await report() }
            }
            await waitForTermination()
            watcher.cancel()
            task.cancel()
            await task.value
            await popups?.stop()
            runner.stop()
        }
    }
}

func describe(_ state: ConnectionState) -> String {
    switch state {
    case .connecting: "connecting"
    case .live: "live"
    case .polling(let every): "polling every \(every)s"
    case .offline(let since): "offline since \(ISOTime.format(since))"
    }
}

/// Reports notifications not yet announced on this device: a JSON line and `--exec` for those
/// in Unread when they arrive (the others were handled elsewhere first: they are only marked).
final class Announcer: Sendable {
    let store: LocalStore
    let exec: String?
    let runner: CommandRunner
    private let lock = Mutex(())

    init(store: LocalStore, exec: String?, runner: CommandRunner) {
        self.store = store
        self.exec = exec
        self.runner = runner
    }

    /// What arrived since the last call, each with its view now.
    func announce() throws -> [(UserNotification, NotificationView?)] {
        try lock.withLock { _ in
            let fresh = try store.unannounced()
            guard !fresh.isEmpty else { return [] }
            // Marked first: a crash may skip an announcement but never repeats a command.
            try store.markAnnounced(fresh.map(\.id))
            let now = Date()
            let arrived = fresh.map { ($0, NotificationView.current(of: $0, now: now)) }
            for (notification, view) in arrived where view == .unread {
                print(jsonLine(notification))
                fflush(nil)
                if let exec { runner.submit(.init(option: "--exec", command: exec, notification: notification)) }
            }
            return arrived
        }
    }

    /// `--on-change`: runs `command` for each notification known here whose state changed
    /// (anywhere) since the last call, with `NOTTY_STATE` set.
    func reportStateChanges(_ command: String) throws {
        try lock.withLock { _ in
            while true {
                let changes = try store.stateChanges()
                guard !changes.isEmpty else { return }
                for change in changes {
                    runner.submit(.init(option: "--on-change", command: command, notification: change.notification, state: change.stateName))
                }
            }
        }
    }
}

/// Runs `--exec` and `--on-change` commands beside syncing: at most `limit` at once, the rest
/// queued in order, each stopped (SIGTERM, then SIGKILL) after `timeout` seconds.
final class CommandRunner: Sendable {
    struct Job: Sendable {
        /// The option the command came from, for messages.
        let option: String
        let command: String
        let notification: UserNotification
        /// `NOTTY_STATE` (`--on-change`).
        var state: String?
    }

    let timeout: Int
    let limit: Int
    private let state = Mutex<(running: Int, queue: [Job])>((0, []))
    private let processes = Mutex<[pid_t: Process]>([:])

    init(timeout: Int, limit: Int = 4) {
        self.timeout = timeout
        self.limit = limit
    }

    func submit(_ job: Job) {
        let start = state.withLock { state -> Bool in
            if state.running < limit { state.running += 1; return true }
            state.queue.append(job)
            return false
        }
        if start { launch(job) }
    }

    /// Waits for every queued and running command (for `--once`).
    func waitUntilIdle() {
        while state.withLock({ $0.running > 0 || !$0.queue.isEmpty }) { usleep(20_000) }
    }

    /// When `notty poll` stops: the queue is dropped and running commands get SIGTERM.
    func stop() {
        state.withLock { $0.queue.removeAll() }
        for pid in processes.withLock({ Array($0.keys) }) { kill(-pid, SIGTERM) }  // its process group: sh and what it runs
    }

    /// The variables a command gets (SPEC §4, §7.1, §7.4).
    static func environment(_ job: Job) -> [String: String] {
        let n = job.notification
        var environment = ProcessInfo.processInfo.environment
        environment["NOTTY_ID"] = n.id
        environment["NOTTY_TITLE"] = n.displayTitle
        environment["NOTTY_BODY"] = n.payload.visualContent?.body ?? n.payload.rawContent ?? ""
        environment["NOTTY_PRIORITY"] = n.priority.rawValue
        environment["NOTTY_APP"] = n.targetHostName
        environment["NOTTY_GROUP"] = n.groupName ?? ""
        environment["NOTTY_URL"] = n.launchUrl ?? ""
        environment["NOTTY_STATE"] = job.state
        return environment
    }

    private func launch(_ job: Job) {
        let id = job.notification.id
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", job.command]
        process.environment = Self.environment(job)
        process.terminationHandler = { [self] finished in
            _ = processes.withLock { $0.removeValue(forKey: finished.processIdentifier) }
            if finished.terminationReason == .exit, finished.terminationStatus != 0 {
                warn("\(job.option) exited with \(finished.terminationStatus) for \(id)")
            }
            done()
        }
        do {
            try process.run()
        } catch {
            warn("cannot run \(job.option): \(error)")
            done()
            return
        }
        let pid = process.processIdentifier
        processes.withLock { $0[pid] = process }
        DispatchQueue.global().asyncAfter(deadline: .now() + .seconds(timeout)) {
            guard process.isRunning else { return }
            warn("\(job.option) ran longer than \(self.timeout)s for \(id): stopped")
            kill(-pid, SIGTERM)  // the command's process group (Process starts one per child): sh and what it runs
            DispatchQueue.global().asyncAfter(deadline: .now() + .seconds(2)) { if process.isRunning { kill(-pid, SIGKILL) } }
        }
    }

    private func done() {
        let next = state.withLock { state -> Job? in
            guard !state.queue.isEmpty else { state.running -= 1; return nil }
            return state.queue.removeFirst()
        }
        if let next { launch(next) }
    }
}

/// `notty poll --desktop`: the desktop's popups kept true to the store through ``PopupBridge``
/// (pure) and ``DesktopBus`` (libdbus). Signals from the daemon and the store's changes are
/// handled one at a time; the mapping is saved to the store after each.
actor DesktopPopups {
    private var bridge: PopupBridge
    private let bus: DesktopBus
    private let store: LocalStore
    private let changed: @Sendable () -> Void
    private var signals: Task<Void, Never>?

    /// Connects to the session bus; without one (or without a daemon) says so in one line and
    /// answers nil: polling goes on without popups.
    static func start(store: LocalStore, changed: @escaping @Sendable () -> Void) -> DesktopPopups? {
        let (stream, continuation) = AsyncStream.makeStream(of: DesktopBus.Signal.self)
        let bus: DesktopBus
        do {
            bus = try DesktopBus { continuation.yield($0) }
        } catch {
            warn(error.description)
            return nil
        }
        let entries = ((try? store.popups()) ?? []).map { ($0.notificationId, PopupBridge.Entry(popupId: $0.popupId, view: $0.view)) }
        let popups = DesktopPopups(bridge: PopupBridge(entries: Dictionary(entries, uniquingKeysWith: { a, _ in a })), bus: bus, store: store, changed: changed)
        warn("desktop popups through \(bus.server)")
        Task { await popups.listen(stream) }
        return popups
    }

    private init(bridge: PopupBridge, bus: DesktopBus, store: LocalStore, changed: @escaping @Sendable () -> Void) {
        self.bridge = bridge
        self.bus = bus
        self.store = store
        self.changed = changed
    }

    private func listen(_ stream: AsyncStream<DesktopBus.Signal>) {
        signals = Task {
            for await signal in stream {
                switch signal {
                case .closed(let popupId, let reason): await handle(.closed(popupId: popupId, reason: reason))
                case .action(let popupId, let key): await handle(.action(popupId: popupId, key: key))
                }
            }
        }
    }

    func arrived(_ notifications: [(UserNotification, NotificationView?)]) async {
        for (notification, view) in notifications { await handle(.arrived(notification, view: view)) }
    }

    /// Reports where every notification with a popup (or a snoozed one that had one) is now.
    func storeChanged() async {
        let now = Date()
        for id in bridge.trackedIds {
            let notification = try? store.notification(id: id)
            await handle(.moved(id: id, notification, view: notification.flatMap { NotificationView.current(of: $0, now: now) }))
        }
    }

    func stop() {
        signals?.cancel()
        bus.stop()
    }

    private func handle(_ event: PopupBridge.Event) async {
        var pending = bridge.handle(event)
        while !pending.isEmpty {
            let effect = pending.removeFirst()
            switch effect {
            case .show(let id, let content, let replacing):
                do {
                    let popupId = try await bus.notify(content, replacing: replacing)
                    pending += bridge.handle(.shown(id: id, popupId: popupId))
                } catch {
                    warn("cannot show a popup: \(error)")
                }
            case .close(let popupId):
                bus.close(popupId)
            case .dismiss(let id):
                record(id, StateChange(userActionState: .dismissed))
            case .activate(let id):
                let url = (try? store.notification(id: id))?.launchUrl
                record(id, StateChange(readState: .read, userActionState: .activated))
                if let url, let problem = LinkOpener.open(url) { warn(problem) }
            }
        }
        let records = bridge.entries.map { LocalStore.PopupRecord(notificationId: $0.key, popupId: $0.value.popupId, view: $0.value.view) }
        do { try store.savePopups(records) } catch { warn("cannot save the popups: \(error)") }
    }

    private func record(_ id: String, _ change: StateChange) {
        do {
            try store.record([(id, .patch(change))])
            changed()
        } catch {
            warn("cannot record the popup's change: \(error)")
        }
    }
}

/// Returns when SIGINT or SIGTERM arrives (through the one signal helper, `Terminal.terminationSignals`;
/// a second signal after that has its default action again).
func waitForTermination() async {
    for await _ in Terminal.terminationSignals([SIGINT, SIGTERM]) { break }
}
