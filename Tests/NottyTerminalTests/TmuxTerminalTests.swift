import Foundation
import NottyPOSIX
import NottyTUI
import NottyTestSupport
import Testing

@testable import NottyTerminal

/// The process has one curses screen and one "restore" switch: every test that starts, stops
/// or restores it runs inside this suite, one at a time (a restore from a parallel test once
/// ended the tmux test's screen halfway through on a busy CI machine).
@Suite("The process's one curses screen", .serialized)
enum CursesScreenTests {}

extension CursesScreenTests {
    @Suite("Restoring before any start")
    struct Restoring {
        @Test func restoringIsIdempotentAndSafeBeforeStart() {
            let terminal = Terminal()
            terminal.stop()
            terminal.stop()
            restoreTerminalFromAnywhere()
            #expect(terminal.size() == .init(columns: 0, rows: 0))
            #expect(terminal.readKey(timeoutMilliseconds: 0) == nil)
        }
    }
}

/// Real ncurses against a real terminal emulator: a detached tmux pane whose only process
/// sleeps, while this test process opens the pane's tty and paints and reads on it.
extension CursesScreenTests {
    @Suite(
        "Real ncurses in a tmux pane",
        .enabled(
            if: TmuxSession.available || TmuxSession.required, "SKIPPED LOUDLY: tmux is not installed (apt-get install -y tmux); .ci/run installs it")
    )
    struct TmuxTerminalTests {
        @Test func paintsDiffsPlacesTheCursorReadsKeysAndRestores() async throws {
            let pane = try await TmuxPane(columns: 80, rows: 24)
            defer { pane.close() }
            let terminal = Terminal(ttyPath: pane.tty, terminalType: "screen")
            try terminal.start(useColor: true)
            defer { terminal.stop() }
            #expect(terminal.size() == Size(columns: 80, rows: 24))

            // First frame: wide characters, a combining mark, colour, the bottom-right cell.
            var screen = Screen(size: terminal.size())
            write("notty 世界 🎉 ok", at: 0, row: 0, on: &screen, style: CellStyle(bold: true))
            write("cafe\u{301} |", at: 0, row: 1, on: &screen)
            write("error", at: 0, row: 2, on: &screen, style: CellStyle(color: .error))
            screen[79, 23] = Cell("Z")
            terminal.paint(screen)
            try await pane.waitFor { $0.lines.first == "notty 世界 🎉 ok" }
            let lines = try await pane.capture().lines
            #expect(lines[1] == "café |")
            #expect(lines[23].hasSuffix("Z") && lines[23].count == 80)
            #expect(try await pane.capture(escapes: true).lines[2].contains("\u{1B}[31merror"))
            #expect(try await pane.query("#{cursor_flag}") == "0")

            // Next frame: one wide character changed and a visible cursor.
            var next = screen
            write("日", at: 6, row: 0, on: &next, style: CellStyle(bold: true))
            next.cursor = (column: 3, row: 5)
            terminal.paint(next)
            try await pane.waitFor { $0.lines.first == "notty 日界 🎉 ok" }
            try await pane.waitFor { _ in try await pane.query("#{cursor_x},#{cursor_y},#{cursor_flag}") == "3,5,1" }

            // Keys as tmux sends them for a terminal of this type.
            let presses: [([String], Key)] = [
                (["a"], .character("a")), (["Up"], .up), (["Down"], .down), (["Left"], .left),
                (["Right"], .right), (["Home"], .home), (["End"], .end), (["PPage"], .pageUp),
                (["NPage"], .pageDown), (["Enter"], .enter), (["Escape"], .escape), (["Tab"], .tab),
                (["BTab"], .backTab), (["BSpace"], .backspace), (["DC"], .delete),
                (["C-b"], .control("b")), (["C-c"], .control("c")),
                (["-l", "é"], .character("é")), (["-l", "世"], .character("世")),
            ]
            for (keys, expected) in presses {
                try await pane.sendKeys(keys)
                #expect(terminal.readKey(timeoutMilliseconds: 3000) == .key(expected), "\(keys)")
            }
            #expect(terminal.readKey(timeoutMilliseconds: 50) == nil)

            // A wake-up ends a long wait for a key: one signalled before the wait, and one
            // signalled by another thread during it (10 s each, were they not ended).
            let wakeUp = try #require(WakeUp())
            let waiting = ContinuousClock.now
            wakeUp.signal()
            #expect(terminal.readKey(timeoutMilliseconds: 10_000, wakeUp: wakeUp) == nil)
            Thread {
                usleep(100_000); wakeUp.signal()
            }.start()
            #expect(terminal.readKey(timeoutMilliseconds: 10_000, wakeUp: wakeUp) == nil)
            #expect(ContinuousClock.now - waiting < .seconds(9), "a wait was not ended by its wake-up")
            // Keys still arrive while a wake-up is at hand.
            try await pane.sendKeys(["z"])
            #expect(terminal.readKey(timeoutMilliseconds: 3000, wakeUp: wakeUp) == .key(.character("z")))

            // Leaving gives the terminal back: main screen, visible cursor.
            terminal.stop()
            terminal.stop()
            try await pane.waitFor { _ in try await pane.query("#{alternate_on},#{cursor_flag}") == "0,1" }
        }
    }
}

/// The pane a test paints on: a ``TmuxSession`` that only sleeps, and its tty.
private struct TmuxPane {
    let session: TmuxSession
    let tty: String

    struct Capture {
        let lines: [String]
    }

    init(columns: Int, rows: Int) async throws {
        (session, tty) = try await TmuxSession.paneTTY(columns: columns, rows: rows)
    }

    func close() { session.close() }
    func capture(escapes: Bool = false) async throws -> Capture { await Capture(lines: try session.lines(escapes: escapes)) }
    func query(_ format: String) async throws -> String { try await session.query(format) }
    func sendKeys(_ keys: [String]) async throws { try await session.keys(keys) }

    /// Polls the pane until `condition` holds (10 s at most).
    func waitFor(_ condition: (Capture) async throws -> Bool, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        var last = try await capture()
        let met = try await eventually(timeout: .seconds(10)) {
            last = try await capture()
            return try await condition(last)
        }
        if met { return }
        Issue.record("pane never matched; it shows:\n\(last.lines.joined(separator: "\n"))", sourceLocation: sourceLocation)
    }
}
