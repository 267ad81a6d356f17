import Foundation
import NottyCommandLine
import NottyCore
import NottyStore
import Synchronization

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

    /// What arrived since the last call, each with its view now, for the popups: those in
    /// Unread that may not interrupt (muted, or quiet: SPEC §9) are left out. Each in Unread
    /// is a JSON line; `--exec` runs only for those that may interrupt.
    public func announce() throws -> [(UserNotification, NotificationView?)] {
        try lock.withLock { _ in
            let fresh = try store.unannounced()
            guard !fresh.isEmpty else { return [] }
            // Marked first: a crash may skip an announcement but never repeats a command.
            try store.markAnnounced(fresh.map(\.id))
            let now = Date()
            let interruptions = Interruptions(preferences: try store.preferences(), now: now)
            let arrived = fresh.map { ($0, NotificationView.current(of: $0, now: now)) }
            for (notification, view) in arrived where view == .unread {
                print(jsonLine(notification))
                fflush(nil)
                if let exec, interruptions.interrupts(notification) {
                    runner.submit(.init(option: "--exec", command: exec, notification: notification))
                }
            }
            return arrived.filter { $0.1 != .unread || interruptions.interrupts($0.0) }
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
