import Foundation
import NottyCore
import Synchronization

/// One run of a command line a person configured (escalation's `command:` targets, `notty
/// poll --exec`): `/bin/sh -c LINE` in a process group of its own, with this process's
/// environment and `variables`, nothing on standard input or output, standard error kept to
/// say how it failed; stopped after `timeout` (SIGTERM to its group: sh and what it runs,
/// then SIGKILL 2 s later).
public enum ShellCommand {
    /// How a run ended.
    public struct Outcome: Sendable, Equatable {
        /// The exit status, or the signal that killed it.
        public var status: Int32
        public var signalled: Bool
        /// Stopped for running longer than its timeout.
        public var timedOut: Bool
        /// The last line it wrote to standard error (at most 300 characters).
        public var lastErrorLine: String?
        /// Why it could not be started at all.
        public var launchError: String?
        /// Its process group's id (its `sh`'s pid); 0 when it did not start.
        public var pid: pid_t = 0

        public var succeeded: Bool { launchError == nil && !timedOut && !signalled && status == 0 }

        /// "exited with 3: the last line", "was killed by signal 9", "ran longer than 30 s".
        public var words: String {
            if let launchError { return "could not start: \(launchError)" }
            if timedOut { return "ran longer than its time limit: stopped" }
            return (signalled ? "was killed by signal \(status)" : "exited with \(status)") + (lastErrorLine.map { ": \($0)" } ?? "")
        }
    }

    /// Starts `line`; `ended` is called once with its outcome. Returns the process group's id
    /// (its `sh`'s pid), or nil when it could not start (`ended` was called already).
    @discardableResult
    public static func start(
        _ line: String, variables: [String: String], timeout: Duration,
        ended: @escaping @Sendable (Outcome) -> Void
    ) -> pid_t? {
        let errors = FileManager.default.temporaryDirectory.appendingPathComponent("notty-command-\(UUID().uuidString)")
        guard FileManager.default.createFile(atPath: errors.path, contents: nil), let errorFile = try? FileHandle(forWritingTo: errors) else {
            ended(
                Outcome(
                    status: 127, signalled: false, timedOut: false,
                    launchError: "cannot make a file for its errors in \(FileManager.default.temporaryDirectory.path)"))
            return nil
        }
        let stopped = Atomic<Bool>(false)
        let process: ChildProcess
        do {
            process = try ChildProcess.start(
                "/bin/sh", ["-c", line], environment: ProcessInfo.processInfo.environment.merging(variables) { _, given in given }, stdin: .null,
                stdout: .null, stderr: .descriptor(errorFile.fileDescriptor), processGroup: true
            ) { finished in
                let said = (try? String(contentsOf: errors, encoding: .utf8)) ?? ""
                try? FileManager.default.removeItem(at: errors)
                ended(
                    Outcome(
                        status: finished.status, signalled: finished.signalled, timedOut: stopped.load(ordering: .acquiring),
                        lastErrorLine: said.split(whereSeparator: \.isNewline).last.map { String($0.prefix(300)) },
                        pid: finished.pid))
            }
        } catch {
            try? errorFile.close()
            try? FileManager.default.removeItem(at: errors)
            ended(Outcome(status: 127, signalled: false, timedOut: false, launchError: "\(error)"))
            return nil
        }
        try? errorFile.close()  // the child has its own copy
        let pid = process.pid
        DispatchQueue.global().asyncAfter(deadline: .now() + timeout.seconds) {
            guard process.isRunning else { return }
            stopped.store(true, ordering: .releasing)
            process.signal(SIGTERM, group: true)  // its process group: sh and what it runs
            DispatchQueue.global().asyncAfter(deadline: .now() + 2) { process.signal(SIGKILL, group: true) }
        }
        return pid
    }

    /// Runs `line` to its end (see ``start(_:variables:timeout:ended:)``).
    public static func run(_ line: String, variables: [String: String], timeout: Duration) async -> Outcome {
        await withCheckedContinuation { continuation in
            start(line, variables: variables, timeout: timeout) { continuation.resume(returning: $0) }
        }
    }
}
