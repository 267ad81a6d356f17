import Foundation
import NottyCommandLine
import NottyCore
import NottyStore
import Synchronization

/// Reports notifications not yet announced on this device: a JSON line and `--exec` for those
/// in Unread when they arrive (the others were handled elsewhere first: they are only marked).
/// Blocks on the store: ``PollReporter`` calls it off the pool.
public final class Announcer: Sendable {
    public let store: LocalStore
    public let exec: String?
    public let jobs: any CommandJobs
    /// Where each announced notification's JSON line goes (stdout).
    let output: @Sendable (String) -> Void
    private let lock = Mutex(())

    public init(store: LocalStore, exec: String?, jobs: any CommandJobs, output: @escaping @Sendable (String) -> Void = Announcer.printLine) {
        self.store = store
        self.exec = exec
        self.jobs = jobs
        self.output = output
    }

    /// A line on stdout, flushed at once (a pipe reader sees each when it is announced).
    public static let printLine: @Sendable (String) -> Void = { line in
        print(line)
        fflush(nil)
    }

    /// What arrived since the last call, each with its view now, for the popups: those in
    /// Unread that may not interrupt (muted, or quiet: PROTOCOL.md §9) are left out. Each in Unread
    /// is a JSON line; `--exec` runs only for those that may interrupt.
    @available(*, noasync, message: "blocks on the store: call it off the pool (PollReporter does)")
    public func announce(now: Date = Date()) throws -> [(UserNotification, NotificationView?)] {
        try lock.withLock { _ in
            let fresh = try store.unannounced(now: now)
            guard !fresh.isEmpty else { return [] }
            let interruptions = Interruptions(preferences: try store.preferences(), now: now)
            let arrived = fresh.map { ($0, NotificationView.current(of: $0, now: now)) }
            // Those in Unread that quiet holds back (not muted ones): at the end of the quiet
            // period, those still Unread are one summary. Kept in the store, so that a restart
            // meanwhile loses none.
            let held = arrived.filter { $0.1 == .unread && !interruptions.interrupts($0.0) && !interruptions.isMuted($0.0) }.map(\.0.id)
            // Marked first: a crash may skip an announcement but never repeats a command.
            try store.markAnnounced(fresh.map(\.id), held: held)
            for (notification, view) in arrived where view == .unread {
                output(jsonLine(notification))
                if interruptions.interrupts(notification), let exec {
                    jobs.submit(.init(option: "--exec", command: exec, notification: notification))
                }
            }
            return arrived.filter { $0.1 != .unread || interruptions.interrupts($0.0) }
        }
    }

    /// When the quiet period that holds notifications back ends (nil: none is held back).
    @available(*, noasync, message: "blocks on the store: call it off the pool (PollReporter does)")
    public func quietEnds(now: Date = Date()) throws -> Date? {
        guard try store.holdsForQuiet() else { return nil }
        return Interruptions(preferences: try store.preferences(), now: now).quietUntil ?? now
    }

    /// Once quiet has ended: what it held back and is still Unread (and not muted now), as one
    /// summary, run once through `--exec`; nil while quiet or when nothing is left.
    @available(*, noasync, message: "blocks on the store: call it off the pool (PollReporter does)")
    public func summarizeQuiet(now: Date = Date()) throws -> QuietSummary? {
        try lock.withLock { _ in
            guard try store.holdsForQuiet() else { return nil }
            let interruptions = Interruptions(preferences: try store.preferences(), now: now)
            guard !interruptions.isQuiet else { return nil }
            let held = try store.takeHeldByQuiet()
            let still = try held.compactMap { try store.notification(id: $0) }
                .filter { NotificationView.current(of: $0, now: now) == .unread && !interruptions.isMuted($0) }
            guard !still.isEmpty else { return nil }
            let summary = QuietSummary(notifications: still.sorted { $0.createdDateTime > $1.createdDateTime })
            if let exec { jobs.submit(.init(option: "--exec", command: exec, summary: summary)) }
            return summary
        }
    }

    /// `--on-change`: runs `command` for each notification known here whose state changed
    /// (anywhere) since the last call, with `NOTTY_STATE` set.
    @available(*, noasync, message: "blocks on the store: call it off the pool (PollReporter does)")
    public func reportStateChanges(_ command: String, now: Date = Date()) throws {
        try lock.withLock { _ in
            while true {
                let changes = try store.stateChanges(now: now)
                guard !changes.isEmpty else { return }
                for change in changes {
                    jobs.submit(.init(option: "--on-change", command: command, notification: change.notification, state: change.stateName))
                }
            }
        }
    }
}

/// What a quiet period held back and is still Unread when it ends: announced as one (PROTOCOL.md §9).
public struct QuietSummary: Sendable, Equatable {
    /// Newest first.
    public var notifications: [UserNotification]

    /// "12 notifications while quiet".
    public var title: String {
        notifications.count == 1 ? "1 notification while quiet" : "\(notifications.count) notifications while quiet"
    }

    /// The newest titles, a line each (at most 5, then "and N more").
    public var body: String {
        let shown = notifications.prefix(5).map { "\($0.targetHostName): \($0.displayTitle)" }
        let more = notifications.count > 5 ? ["and \(notifications.count - 5) more"] : []
        return (shown + more).joined(separator: "\n")
    }
}
