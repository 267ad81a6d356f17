import Foundation
import NottyCommandLine
import NottyCore
import NottyPOSIX
import NottyStore
import Synchronization

/// Where `notty poll`'s decisions read the time and wait for it: the wall clock, or a manual
/// clock in the tests.
public protocol PollClock: Sendable {
    func now() -> Date
    /// Returns at `deadline`; throws when the waiting task is cancelled.
    func sleep(until deadline: Date) async throws
}

/// The wall clock.
public struct WallClock: PollClock {
    public init() {}
    public func now() -> Date { Date() }
    public func sleep(until deadline: Date) async throws {
        try await Task.sleep(for: .milliseconds(max(0, Int(deadline.timeIntervalSinceNow * 1000))))
    }
}

/// What `notty poll` does beside syncing, after every sync and every change of the store by
/// any process: announces what arrived (a JSON line each, `--exec` for those that may
/// interrupt), runs `--on-change` once for each notification whose state changed, keeps the
/// desktop popups true to the store, and sums up what a quiet period held back once it ends
/// (by the clock too: a period's end, a schedule's window). The command (`notty/Poll.swift`)
/// only wires it to the sync and the store's watcher.
///
/// Every store call runs off Swift's cooperative pool.
public final class PollReporter: Sendable {
    let store: LocalStore
    let announcer: Announcer
    let onChange: String?
    let popups: (any PollPopups)?
    let clock: any PollClock
    /// The quiet period's end a wait runs for, and that wait.
    private let quietEndWait = Mutex<(end: Date, task: Task<Void, Never>)?>(nil)

    public init(
        store: LocalStore, exec: String?, onChange: String?, jobs: any CommandJobs, popups: (any PollPopups)?,
        clock: any PollClock = WallClock(), output: @escaping @Sendable (String) -> Void = Announcer.printLine
    ) {
        self.store = store
        announcer = Announcer(store: store, exec: exec, jobs: jobs, output: output)
        self.onChange = onChange
        self.popups = popups
        self.clock = clock
    }

    /// Before the first sync: what the store already holds is not news (only what arrives from
    /// now on is reported), and state changes are queued while `--on-change` watches. On a
    /// full disk this cannot be written: it says so and polling runs on.
    public func begin() async {
        let watch = onChange != nil
        do {
            try await store.perform { store in
                try store.markAllAnnounced()
                try store.watchStates(watch)
            }
        } catch let error as StoreError {
            warn(error.description)
        } catch {
            warn("cannot prepare the store for reporting: \(error)")
        }
    }

    /// Stops watching state changes and any wait for quiet's end.
    public func end() async {
        quietEndWait.withLock { wait in
            wait?.task.cancel()
            wait = nil
        }
        _ = try? await store.perform { try $0.watchStates(false) }
    }

    /// `notty poll --once`: announces what arrived and runs `--on-change` (no popups, no waits).
    public func reportOnce() async {
        let now = clock.now()
        _ = await announce(now: now)
        await reportStateChanges(now: now)
    }

    /// After a sync or a change of the store: everything, in order.
    public func report() async {
        let now = clock.now()
        let fresh = await announce(now: now)
        await armQuietEnd(now: now)
        await reportStateChanges(now: now)
        await popups?.arrived(fresh, at: now)
        await popups?.storeChanged(now: now)
        await summarizeQuiet()
    }

    /// Once quiet has ended: what it held back and is still Unread, as one summary (a popup,
    /// one `--exec`); nothing while quiet, nothing twice.
    public func summarizeQuiet() async {
        let announcer = announcer, now = clock.now()
        do {
            if let summary = try await offThePool({ try announcer.summarizeQuiet(now: now) }) { await popups?.show(summary) }
        } catch {
            warn("cannot read what quiet held back: \(error)")
        }
    }

    private func announce(now: Date) async -> [(UserNotification, NotificationView?)] {
        let announcer = announcer
        do {
            return try await offThePool { try announcer.announce(now: now) }
        } catch {
            warn("cannot read what arrived: \(error)")
            return []
        }
    }

    private func reportStateChanges(now: Date) async {
        guard let onChange else { return }
        let announcer = announcer
        do {
            try await offThePool { try announcer.reportStateChanges(onChange, now: now) }
        } catch {
            warn("cannot read the state changes: \(error)")
        }
    }

    /// While quiet holds notifications back: a wait for its end (unless one runs for that end
    /// already), then the summary.
    private func armQuietEnd(now: Date) async {
        let announcer = announcer
        guard let end = (try? await offThePool({ try announcer.quietEnds(now: now) })) ?? nil else { return }
        quietEndWait.withLock { wait in
            guard wait?.end != end else { return }
            wait?.task.cancel()
            let task = Task { [self] in
                do { try await clock.sleep(until: end.addingTimeInterval(0.05)) } catch { return }
                quietEndWait.withLock { if $0?.end == end { $0 = nil } }
                await summarizeQuiet()
            }
            wait = (end, task)
        }
    }
}
