import Foundation
import NottyCommandLine
import NottyCore
import NottyPOSIX
import Synchronization

/// Where `notty poll`'s commands go: a ``CommandRunner``, or a recording list in the tests.
public protocol CommandJobs: Sendable {
    func submit(_ job: CommandRunner.Job)
}

/// Runs `--exec` and `--on-change` commands beside syncing: at most `limit` at once, the rest
/// queued in order, each stopped (SIGTERM, then SIGKILL) after `timeout` seconds.
public final class CommandRunner: CommandJobs {
    public struct Job: Sendable {
        /// The option the command came from, for messages.
        public let option: String
        public let command: String
        /// What messages call the run (a notification's id).
        public let subject: String
        /// The `NOTTY_*` variables it gets (PROTOCOL.md §4, §7.1, §7.4, §9).
        public let variables: [String: String]

        /// A run for one notification; `state` is `NOTTY_STATE` (`--on-change`).
        public init(option: String, command: String, notification n: UserNotification, state: String? = nil) {
            self.option = option
            self.command = command
            subject = n.id
            var variables = n.commandVariables
            variables["NOTTY_STATE"] = state
            self.variables = variables
        }

        /// The one run for what a quiet period held back (PROTOCOL.md §9): `NOTTY_SUMMARY=1`,
        /// `NOTTY_COUNT`, `NOTTY_TITLE` ("12 notifications while quiet"), `NOTTY_BODY` (their
        /// titles, a line each) and `NOTTY_IDS` (their ids, space-separated).
        public init(option: String, command: String, summary: QuietSummary) {
            self.option = option
            self.command = command
            subject = "the quiet period's summary"
            variables = [
                "NOTTY_SUMMARY": "1", "NOTTY_COUNT": String(summary.notifications.count), "NOTTY_TITLE": summary.title,
                "NOTTY_BODY": summary.body, "NOTTY_IDS": summary.notifications.map(\.id).joined(separator: " "),
            ]
        }
    }

    public let timeout: Int
    public let limit: Int
    private let state = Mutex<(running: Int, queue: [Job], idle: [CheckedContinuation<Void, Never>])>((0, [], []))
    /// The process groups of the commands running now (for ``stop()``), and of those that ended
    /// before their start was recorded.
    private let groups = Mutex<(running: Set<pid_t>, ended: Set<pid_t>)>(([], []))

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

    /// How many commands run now and how many wait for a slot.
    public var load: (running: Int, queued: Int) {
        state.withLock { ($0.running, $0.queue.count) }
    }

    /// Returns when every queued and running command has ended (for `--once`): told by the
    /// last one's end, not by looking.
    public func waitUntilIdle() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let idle = state.withLock { state -> Bool in
                if state.running == 0 && state.queue.isEmpty { return true }
                state.idle.append(continuation)
                return false
            }
            if idle { continuation.resume() }
        }
    }

    /// When `notty poll` stops: the queue is dropped and running commands get SIGTERM.
    public func stop() {
        state.withLock { $0.queue.removeAll() }
        for pid in groups.withLock({ Array($0.running) }) { kill(-pid, SIGTERM) }  // its process group: sh and what it runs
    }

    private func launch(_ job: Job) {
        let id = job.subject
        let pid = ShellCommand.start(job.command, variables: job.variables, timeout: .seconds(timeout)) { [self] outcome in
            // Its end may come before start() returned its pid: then it is remembered as ended.
            groups.withLock { if $0.running.remove(outcome.pid) == nil { $0.ended.insert(outcome.pid) } }
            if let error = outcome.launchError {
                warn("cannot run \(job.option): \(error)")
            } else if outcome.timedOut {
                warn("\(job.option) ran longer than \(self.timeout)s for \(id): stopped")
            } else if !outcome.signalled && outcome.status != 0 {
                warn("\(job.option) exited with \(outcome.status) for \(id)")
            }
            done()
        }
        if let pid { groups.withLock { if $0.ended.remove(pid) == nil { $0.running.insert(pid) } } }
    }

    private func done() {
        let (next, idle) = state.withLock { state -> (Job?, [CheckedContinuation<Void, Never>]) in
            guard state.queue.isEmpty else { return (state.queue.removeFirst(), []) }
            state.running -= 1
            guard state.running == 0 else { return (nil, []) }
            defer { state.idle.removeAll() }
            return (nil, state.idle)
        }
        if let next { launch(next) }
        for waiter in idle { waiter.resume() }
    }
}
