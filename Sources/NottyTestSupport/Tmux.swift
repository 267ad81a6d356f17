import Foundation

/// A tmux session on a private server (its own socket, no config) running one shell command:
/// the one way tests drive a real terminal, whether `notty` runs in it or the test paints on
/// its pane's tty (``paneTTY()``). The server is killed by ``close()`` and deinit.
public final class TmuxSession: Sendable {
    public static let available = Tmux.path != nil
    /// In CI the terminal tests must run.
    public static let required = ProcessInfo.processInfo.environment["CI"] == "true"

    public let name = "notty-test-\(UUID().uuidString.prefix(8))"
    public let socket: String

    /// Runs `command` (a shell command line) with `environment` and `TERM=screen-256color` in a
    /// detached `columns`×`rows` window; when it ends the pane shows `[exited STATUS]`.
    public init(command: String, columns: Int = 100, rows: Int = 30, environment: [String: String] = [:]) throws {
        socket = FileManager.default.temporaryDirectory.appendingPathComponent("\(name).sock").path
        let exports = environment.map { "\($0.key)='\($0.value)'" }.joined(separator: " ")
        _ = try Tmux.run(
            socket: socket,
            [
                "-f", "/dev/null", "new-session", "-d", "-s", name, "-x", String(columns), "-y", String(rows),
                "env \(exports) TERM=screen-256color \(command); echo \"[exited $?]\"; sleep 60",
            ])
    }

    /// A session whose pane only sleeps, and the path of the pane's terminal device, for a test
    /// that opens that tty itself.
    public static func paneTTY(columns: Int, rows: Int) async throws -> (TmuxSession, tty: String) {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("notty-tty-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: file) }
        let session = try TmuxSession(command: "tty > '\(file.path)'; exec sleep 300", columns: columns, rows: rows)
        for _ in 0..<100 {
            if let text = try? String(contentsOf: file, encoding: .utf8), text.hasPrefix("/dev/"), text.hasSuffix("\n") {
                return (session, text.trimmingCharacters(in: .whitespacesAndNewlines))
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        session.close()
        throw SupportError("the tmux pane never reported its tty")
    }

    /// Runs tmux on this session's server, waiting off the cooperative pool (``offThePool(_:)``).
    @discardableResult
    public func tmux(_ arguments: [String]) async throws -> String {
        try await offThePool { [socket] in try Tmux.run(socket: socket, arguments) }
    }

    /// The pane's text, one string per row (`escapes`: with its SGR sequences).
    public func lines(escapes: Bool = false) async throws -> [String] {
        try await tmux(capturePane + (escapes ? ["-e"] : [])).split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    }

    public func screen() async -> String { (try? await tmux(capturePane)) ?? "" }
    /// ``screen()`` holding the calling thread: for a failed expectation's message (evaluated
    /// only on failure, where nothing can be awaited).
    public var shown: String { (try? Tmux.run(socket: socket, capturePane)) ?? "" }
    private var capturePane: [String] { ["capture-pane", "-p", "-t", name] }
    public func keys(_ keys: String...) async throws { try await tmux(["send-keys", "-t", name] + keys) }
    public func keys(_ keys: [String]) async throws { try await tmux(["send-keys", "-t", name] + keys) }
    public func resize(columns: Int, rows: Int) async throws {
        try await tmux(["resize-window", "-t", name, "-x", String(columns), "-y", String(rows)])
    }

    /// A tmux format about the pane (`#{cursor_x}`, `#{pane_title}`, …).
    public func query(_ format: String) async throws -> String {
        try await tmux(["display-message", "-p", "-t", name, format]).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Waits until the screen contains `text`.
    public func waitFor(_ text: String, timeout: Duration = .seconds(10)) async -> Bool {
        await eventually(timeout: timeout) { await screen().contains(text) }
    }

    public func close() {
        _ = try? Tmux.run(socket: socket, ["kill-server"])
        try? FileManager.default.removeItem(atPath: socket)
    }

    deinit { close() }
}

/// tmux for tests that drive a real terminal.
public enum Tmux {
    public static let path: String? = ["/usr/bin/tmux", "/usr/local/bin/tmux", "/opt/homebrew/bin/tmux"]
        .first { FileManager.default.isExecutableFile(atPath: $0) }

    /// Runs tmux on a private server (`socket`) with ``spawn(_:_:environment:newSession:files:)``
    /// and waitpid: Foundation's `Process.waitUntilExit` on Linux also waits for the tmux server
    /// that `new-session` leaves running.
    public static func run(socket: String, _ arguments: [String]) throws -> String {
        guard let path else { throw SupportError("tmux is not installed (apt-get install -y tmux)") }
        let outputPath = FileManager.default.temporaryDirectory.appendingPathComponent("notty-tmux-out-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: outputPath) }
        let environment = ProcessInfo.processInfo.environment.filter { $0.key != "TMUX" }
        let pid = try spawn(path, ["-S", socket] + arguments, environment: environment) { actions in
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
            posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
            posix_spawn_file_actions_adddup2(&actions, 1, 2)
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0, errno == EINTR {}
        let text = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        guard status == 0 else { throw SupportError("tmux \(arguments.joined(separator: " ")) (status \(status)): \(text)") }
        return text
    }
}
