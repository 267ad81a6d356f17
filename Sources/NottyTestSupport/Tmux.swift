import Foundation

/// A tmux session on a private server (its own socket, no config) running one shell command:
/// the one way tests drive a real terminal, whether `notty` runs in it or the test paints on
/// its pane's tty (``paneTTY()``). The server is killed by ``close()`` and deinit.
public final class TmuxSession: @unchecked Sendable {
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
        try tmux(["-f", "/dev/null", "new-session", "-d", "-s", name, "-x", String(columns), "-y", String(rows),
                  "env \(exports) TERM=screen-256color \(command); echo \"[exited $?]\"; sleep 60"])
    }

    /// A session whose pane only sleeps, and the path of the pane's terminal device, for a test
    /// that opens that tty itself.
    public static func paneTTY(columns: Int, rows: Int) throws -> (TmuxSession, tty: String) {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("notty-tty-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: file) }
        let session = try TmuxSession(command: "tty > '\(file.path)'; exec sleep 300", columns: columns, rows: rows)
        for _ in 0..<100 {
            if let text = try? String(contentsOf: file, encoding: .utf8), text.hasPrefix("/dev/"), text.hasSuffix("\n") {
                return (session, text.trimmingCharacters(in: .whitespacesAndNewlines))
            }
            Thread.sleep(forTimeInterval: 0.05)
        }
        session.close()
        throw SupportError("the tmux pane never reported its tty")
    }

    @discardableResult
    public func tmux(_ arguments: [String]) throws -> String {
        try Tmux.run(socket: socket, arguments)
    }

    /// The pane's text, one string per row (`escapes`: with its SGR sequences).
    public func lines(escapes: Bool = false) throws -> [String] {
        try tmux(["capture-pane", "-p", "-t", name] + (escapes ? ["-e"] : [])).split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    }

    public func screen() -> String { (try? tmux(["capture-pane", "-p", "-t", name])) ?? "" }
    public func keys(_ keys: String...) throws { try tmux(["send-keys", "-t", name] + keys) }
    public func keys(_ keys: [String]) throws { try tmux(["send-keys", "-t", name] + keys) }
    public func resize(columns: Int, rows: Int) throws { try tmux(["resize-window", "-t", name, "-x", String(columns), "-y", String(rows)]) }

    /// A tmux format about the pane (`#{cursor_x}`, `#{pane_title}`, …).
    public func query(_ format: String) throws -> String {
        try tmux(["display-message", "-p", "-t", name, format]).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Waits until the screen contains `text`.
    public func waitFor(_ text: String, timeout: Duration = .seconds(10)) async -> Bool {
        await eventually(timeout: timeout) { screen().contains(text) }
    }

    public func close() {
        _ = try? tmux(["kill-server"])
        try? FileManager.default.removeItem(atPath: socket)
    }

    deinit { close() }
}
