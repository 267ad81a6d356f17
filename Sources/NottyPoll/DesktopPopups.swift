import Foundation
import NottyCommandLine
import NottyCore
import NottyDBus
import NottyDesktop
import NottyPOSIX
import NottyStore
import Synchronization

/// Where popups are shown: the desktop's notification daemon (``DesktopBus``, libdbus), or a
/// recording bus in the tests.
public protocol PopupBus: Sendable {
    /// Shows `content` (in place of popup `replacing`, when not 0); answers the popup's id.
    func notify(_ content: PopupContent, replacing: UInt32) async throws -> UInt32
    func close(_ popupId: UInt32)
    func stop()
}

extension DesktopBus: PopupBus {}

/// What ``PollReporter`` tells the popups (``DesktopPopups``).
public protocol PollPopups: Sendable {
    /// Notifications that arrived at `now`, each with its view.
    func arrived(_ notifications: [(UserNotification, NotificationView?)], at now: Date) async
    /// The store changed: every popup follows its notification.
    func storeChanged(now: Date) async
    /// The one popup for what a quiet period held back.
    func show(_ summary: QuietSummary) async
    func stop() async
}

/// `notty poll --desktop`: the desktop's popups kept true to the store through ``PopupBridge``
/// (pure) and a ``PopupBus`` (the daemon through libdbus). Signals from the daemon and the
/// store's changes are handled one at a time; the mapping is saved to the store after each.
/// Store calls run off the pool (``LocalStore/perform(_:)``).
public actor DesktopPopups: PollPopups {
    private var bridge: PopupBridge
    private let bus: any PopupBus
    private let store: LocalStore
    private let changed: @Sendable () -> Void
    /// Asks the service to run an http action (PROTOCOL.md §12); answers the line to say how it went.
    public typealias Press = @Sendable (_ id: String, _ number: Int) async -> String
    private let press: Press?
    private var signals: Task<Void, Never>?

    /// Connects to the session bus; without one (or without a daemon) says so in one line and
    /// answers nil: polling goes on without popups.
    /// `storm`: more popups than this of one app and group within 60 s become one (PROTOCOL.md §9).
    public static func start(store: LocalStore, storm: Int, press: Press? = nil, changed: @escaping @Sendable () -> Void) async -> DesktopPopups? {
        let (stream, continuation) = AsyncStream.makeStream(of: DesktopBus.Signal.self)
        let bus: DesktopBus
        do {
            bus = try DesktopBus { continuation.yield($0) }
        } catch {
            warn(error.description)
            return nil
        }
        warn("desktop popups through \(bus.server)")
        return await start(store: store, bus: bus, signals: stream, storm: storm, press: press, changed: changed)
    }

    /// Popups on `bus`, told of the daemon's `signals` (a popup closed, an action pressed).
    public static func start(
        store: LocalStore, bus: any PopupBus, signals: AsyncStream<DesktopBus.Signal>, storm: Int,
        press: Press? = nil, changed: @escaping @Sendable () -> Void
    ) async -> DesktopPopups {
        let records = (try? await store.perform { try $0.popups() }) ?? []
        let entries = records.map { ($0.notificationId, PopupBridge.Entry(popupId: $0.popupId, view: $0.view)) }
        let popups = DesktopPopups(
            bridge: PopupBridge(entries: Dictionary(entries, uniquingKeysWith: { a, _ in a }), stormLimit: storm), bus: bus, store: store,
            press: press, changed: changed)
        await popups.listen(signals)
        return popups
    }

    private init(bridge: PopupBridge, bus: any PopupBus, store: LocalStore, press: Press?, changed: @escaping @Sendable () -> Void) {
        self.bridge = bridge
        self.bus = bus
        self.store = store
        self.press = press
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

    public func arrived(_ notifications: [(UserNotification, NotificationView?)], at now: Date) async {
        await handle(notifications.map { .arrived($0.0, view: $0.1, at: now) })
    }

    /// Reports where every notification with a popup (or a snoozed one that had one) is now.
    /// A snooze that ended while the notification may not interrupt (quiet, a mute: PROTOCOL.md §9)
    /// is not reported yet: it pops up again at the first change after it may.
    public func storeChanged(now: Date) async {
        let tracked = bridge.trackedIds
        guard
            let (preferences, notifications) = try? await store.perform({ store in
                (try store.preferences(), try tracked.map { try store.notification(id: $0) })
            })
        else { return }
        let interruptions = Interruptions(preferences: preferences, now: now)
        let entries = bridge.entries
        await handle(
            zip(tracked, notifications).compactMap { id, notification in
                let view = notification.flatMap { NotificationView.current(of: $0, now: now) }
                if view == .unread, let notification, entries[id]?.popupId == nil, !interruptions.interrupts(notification) { return nil }
                return .moved(id: id, notification, view: view)
            })
    }

    /// The one popup for what a quiet period held back (PROTOCOL.md §9); it stands for nothing to
    /// act on: the notifications stay in Unread.
    public func show(_ summary: QuietSummary) async {
        do {
            _ = try await bus.notify(PopupContent(summary: summary.title, body: PopupContent.escapingMarkup(summary.body)), replacing: 0)
        } catch {
            warn("cannot show a popup: \(error)")
        }
    }

    public func stop() {
        signals?.cancel()
        bus.stop()
    }

    private func handle(_ event: PopupBridge.Event) async {
        await handle([event])
    }

    /// Events waiting while a batch's D-Bus calls run.
    private var queued: [PopupBridge.Event] = []
    private var draining = false

    /// Handles events in batches, one batch at a time: an actor call that waits for the daemon
    /// lets other calls in, so events that come meanwhile are queued and handled by the call
    /// already draining (never interleaved with its batch). A batch's effects are coalesced: a
    /// storm of arrivals asks for its popup once, not once an arrival.
    private func handle(_ events: [PopupBridge.Event]) async {
        queued += events
        guard !draining else { return }
        draining = true
        defer { draining = false }
        while !queued.isEmpty {
            let batch = queued
            queued.removeAll()
            await run(bridge.coalesced(batch.flatMap { bridge.handle($0) }))
        }
    }

    private func run(_ effects: [PopupBridge.Effect]) async {
        var pending = effects
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
                await record(id, StateChange(userActionState: .dismissed))
            case .activate(let id):
                let url = (try? await store.perform { try $0.notification(id: id) })??.launchUrl
                await record(id, StateChange.activate)
                if let url, let problem = LinkOpener.open(url) { warn(problem) }
            case .runAction(let id, let number):
                guard let notification = (try? await store.perform { try $0.notification(id: id) }) ?? nil,
                    let actions = notification.actions, actions.indices.contains(number - 1)
                else { continue }
                let action = actions[number - 1]
                if action.kind == .view, let url = action.url {
                    await record(id, StateChange.activate)
                    if let problem = LinkOpener.open(url) { warn(problem) }
                } else if let press {
                    // Not awaited here: the request may take its 15 s, and popups go on meanwhile.
                    let changed = self.changed
                    Task {
                        warn(await press(id, number))
                        changed()
                    }
                } else {
                    warn("\(action.label): this device cannot reach the service to run it")
                }
            }
        }
        let records = bridge.entries.map { LocalStore.PopupRecord(notificationId: $0.key, popupId: $0.value.popupId, view: $0.value.view) }
        do { try await store.perform { try $0.savePopups(records) } } catch { warn("cannot save the popups: \(error)") }
    }

    private func record(_ id: String, _ change: StateChange) async {
        do {
            _ = try await store.perform { try $0.record([(id, .patch(change))]) }
            changed()
        } catch {
            warn("cannot record the popup's change: \(error)")
        }
    }
}
