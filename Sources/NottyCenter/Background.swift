import Foundation
import NottyCore
import NottyDBus
import NottyDesktop
import NottyStore
import Synchronization

// `notty poll`'s work beside syncing: announcing what arrives, running `--exec` and
// `--on-change` commands, and the desktop popups.

/// Reports notifications not yet announced on this device: a JSON line and `--exec` for those
/// in Unread when they arrive (the others were handled elsewhere first: they are only marked).
public final class Announcer: Sendable {
    public let store: LocalStore
    public let exec: String?
    public let runner: CommandRunner
    private let lock = Mutex(())

    public init(store: LocalStore, exec: String?, runner: CommandRunner) {
        self.store = store
        self.exec = exec
        self.runner = runner
    }

    /// What arrived since the last call, each with its view now.
    public func announce() throws -> [(UserNotification, NotificationView?)] {
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
    public func reportStateChanges(_ command: String) throws {
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
public final class CommandRunner: Sendable {
    public struct Job: Sendable {
        /// The option the command came from, for messages.
        public let option: String
        public let command: String
        public let notification: UserNotification
        /// `NOTTY_STATE` (`--on-change`).
        public var state: String?

        public init(option: String, command: String, notification: UserNotification, state: String? = nil) {
            self.option = option
            self.command = command
            self.notification = notification
            self.state = state
        }
    }

    public let timeout: Int
    public let limit: Int
    private let state = Mutex<(running: Int, queue: [Job])>((0, []))
    private let processes = Mutex<[pid_t: Process]>([:])

    public init(timeout: Int, limit: Int = 4) {
        self.timeout = timeout
        self.limit = limit
    }

    public func submit(_ job: Job) {
        let start = state.withLock { state -> Bool in
            if state.running < limit { state.running += 1; return true }
            state.queue.append(job)
            return false
        }
        if start { launch(job) }
    }

    /// Waits for every queued and running command (for `--once`).
    public func waitUntilIdle() {
        while state.withLock({ $0.running > 0 || !$0.queue.isEmpty }) { usleep(20_000) }
    }

    /// When `notty poll` stops: the queue is dropped and running commands get SIGTERM.
    public func stop() {
        state.withLock { $0.queue.removeAll() }
        for pid in processes.withLock({ Array($0.keys) }) { kill(-pid, SIGTERM) }  // its process group: sh and what it runs
    }

    /// The variables a command gets (SPEC §4, §7.1, §7.4).
    public static func environment(_ job: Job) -> [String: String] {
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
        // Kept only while running: a command that already ended has been through its handler.
        processes.withLock { if process.isRunning { $0[pid] = process } }
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
public actor DesktopPopups {
    private var bridge: PopupBridge
    private let bus: DesktopBus
    private let store: LocalStore
    private let changed: @Sendable () -> Void
    private var signals: Task<Void, Never>?

    /// Connects to the session bus; without one (or without a daemon) says so in one line and
    /// answers nil: polling goes on without popups.
    public static func start(store: LocalStore, changed: @escaping @Sendable () -> Void) -> DesktopPopups? {
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

    public func arrived(_ notifications: [(UserNotification, NotificationView?)]) async {
        for (notification, view) in notifications { await handle(.arrived(notification, view: view)) }
    }

    /// Reports where every notification with a popup (or a snoozed one that had one) is now.
    public func storeChanged() async {
        let now = Date()
        for id in bridge.trackedIds {
            let notification = try? store.notification(id: id)
            await handle(.moved(id: id, notification, view: notification.flatMap { NotificationView.current(of: $0, now: now) }))
        }
    }

    public func stop() {
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
                record(id, StateChange.activate)
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
