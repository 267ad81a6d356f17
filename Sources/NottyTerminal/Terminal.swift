import CNcursesw
import Foundation
import NottyCore
import NottyPOSIX
import NottyTUI

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Why the terminal could not be started.
public enum TerminalError: Error, Hashable, Sendable {
    /// ncurses does not know the terminal (`$TERM` unset, unknown, or not a terminal at all).
    case unknownTerminal(String?)
    /// The tty device could not be opened.
    case cannotOpen(String)
}

/// The ncurses backend: paints a `Screen` and reads keys. The only code in notty that calls ncurses.
///
/// Threading: `@unchecked Sendable`. Every ncurses call is made under one internal lock, so the
/// instance may be created on one thread and used from another, and `stop()` may be called from
/// any thread. `readKey` waits for input *without* holding the lock (it polls the tty), so a
/// `paint` from another thread is never held up by a waiting `readKey`. The simplest shell
/// still uses one loop: `readKey(timeoutMilliseconds:)`, update, `paint`.
///
/// Exit paths: `stop()` is idempotent; an `atexit` hook restores the terminal on `exit()`, and
/// every handler of `Signals` (NottyPOSIX) restores it first: `Signals.installCrashHandlers()`
/// for crashes; for SIGTERM/SIGINT/SIGHUP/SIGQUIT choose either
/// `Signals.installTerminationHandlers()` (restore, then die of the signal) or observe
/// `Signals.terminationSignals()` and quit cleanly yourself.
public final class Terminal: @unchecked Sendable {
    private let lock = NSLock()
    private let ttyPath: String?
    private let terminalType: String?

    // Guarded by `lock`.
    private var screenPointer: OpaquePointer?
    private var window: UnsafeMutablePointer<WINDOW>?
    private var ttyFile: UnsafeMutablePointer<FILE>?
    private var inputDescriptor: Int32 = 0
    private var colorPairs: [SemanticColor: (pair: Int16, extra: attr_t)] = [:]
    private var previous: Screen?
    private var cursorVisible = false

    /// A terminal on the process's stdin/stdout, of type `$TERM`.
    public convenience init() {
        self.init(ttyPath: nil, terminalType: nil)
    }

    /// A terminal on another tty device (tests drive a tmux pane this way; `notty-bench frames`
    /// a pseudo-terminal of its own); nil: the process's stdin/stdout and `$TERM`.
    public init(ttyPath: String?, terminalType: String?) {
        self.ttyPath = ttyPath
        self.terminalType = terminalType
    }

    deinit {
        stop()
    }

    // MARK: - Start and stop

    /// Whether colour may be used: false when `NO_COLOR` is set to a non-empty value
    /// (https://no-color.org). Attributes (bold, reverse, dim, underline) stay on either way.
    public static func colorAllowed(environment: [String: String] = ProcessInfo.processInfo.environment) -> Bool {
        guard let value = environment["NO_COLOR"] else { return true }
        return value.isEmpty
    }

    /// Enters curses mode: raw keys (Ctrl-C arrives as `.control("c")`, not SIGINT), no echo,
    /// keypad decoding, 25 ms Esc delay, hidden cursor, and — when `useColor` and the terminal
    /// has colours — one colour pair per `SemanticColor` on the terminal's default background.
    ///
    /// Takes the locale from the environment; if that is not UTF-8 (e.g. `LANG` unset), uses
    /// `C.UTF-8` for characters, since notifications are Unicode and the renderer measures
    /// them as such. Also installs the `atexit` restore. Calling `start` twice does nothing.
    public func start(useColor: Bool) throws {
        try lock.withLock {
            guard window == nil else { return }
            setlocale(LC_ALL, "")
            if !Self.localeIsUTF8() {
                setlocale(LC_CTYPE, "C.UTF-8")
            }

            let output: UnsafeMutablePointer<FILE>
            let input: UnsafeMutablePointer<FILE>
            if let ttyPath {
                guard let file = fopen(ttyPath, "r+") else { throw TerminalError.cannotOpen(ttyPath) }
                ttyFile = file
                output = file
                input = file
            } else {
                output = notty_stdout()
                input = notty_stdin()
            }
            // On another tty, $LINES/$COLUMNS describe our own terminal, not that one.
            use_env(ttyPath == nil)
            guard let screen = newterm(terminalType, output, input) else {
                if let ttyFile { fclose(ttyFile) }
                ttyFile = nil
                throw TerminalError.unknownTerminal(terminalType ?? ProcessInfo.processInfo.environment["TERM"])
            }
            set_term(screen)
            let win = notty_stdscr()!
            screenPointer = screen
            window = win
            inputDescriptor = fileno(input)

            raw()
            noecho()
            nonl()
            keypad(win, true)
            leaveok(win, true)
            set_escdelay(25)
            curs_set(0)
            cursorVisible = false
            // A frame in one write(). ncurses 6.4 flushes its output at every cursor movement
            // while the screen is still in its first run (`_nc_mvcur` flushes while `_endwin`
            // is `ewInitial`, which only a suspend and resume ends), so a frame went out as
            // ~80 small writes, each waking the terminal's reader; leaving curses mode once
            // and coming back ends that. No typeahead check either: it polls the keyboard
            // every few lines of a frame and cuts the frame short when a key is waiting, and
            // notty reads the next key after painting anyway.
            endwin()
            doupdate()
            typeahead(-1)
            colorPairs = useColor ? Self.startColors() : [:]
            previous = nil

            installAtExitRestore()
            markCursesActive()
        }
    }

    /// Leaves curses mode and gives the terminal back as it was. Idempotent; safe from any thread.
    public func stop() {
        lock.withLock {
            guard let screen = screenPointer else { return }
            restoreTerminalFromAnywhere()
            delscreen(screen)
            if let ttyFile { fclose(ttyFile) }
            ttyFile = nil
            screenPointer = nil
            window = nil
            previous = nil
            colorPairs = [:]
        }
    }

    /// The terminal size in cells (zero before `start`).
    public func size() -> Size {
        lock.withLock { window.map(Self.size(of:)) ?? Size(columns: 0, rows: 0) }
    }

    // MARK: - Painting

    /// Paints `screen`, writing only the cells that changed since the last painted screen
    /// (everything after a size change, a resize event or on the first frame, and only then
    /// clearing), then places the cursor and updates the terminal once.
    public func paint(_ screen: Screen) {
        lock.withLock {
            guard let win = window else { return }
            let terminalSize = Self.size(of: win)
            let wantsCursor =
                screen.cursor.map {
                    $0.column >= 0 && $0.row >= 0 && $0.column < terminalSize.columns && $0.row < terminalSize.rows
                } ?? false
            if cursorVisible, !wantsCursor {
                curs_set(0)
                cursorVisible = false
            }

            switch screenChanges(from: previous, to: screen) {
            case .full:
                wclear(win)
                for row in 0..<screen.size.rows {
                    paintRun(CellRun(row: row, columns: 0..<screen.size.columns), of: screen, in: win, clippedTo: terminalSize)
                }
            case .runs(let runs):
                for run in runs {
                    paintRun(run, of: screen, in: win, clippedTo: terminalSize)
                }
            }

            if wantsCursor, let cursor = screen.cursor {
                leaveok(win, false)
                wmove(win, Int32(cursor.row), Int32(cursor.column))
            } else {
                leaveok(win, true)
            }
            wnoutrefresh(win)
            doupdate()
            if wantsCursor, !cursorVisible {
                curs_set(1)
                cursorVisible = true
            }
            previous = screen
        }
    }

    private func paintRun(_ run: CellRun, of screen: Screen, in win: UnsafeMutablePointer<WINDOW>, clippedTo terminal: Size) {
        guard run.row < terminal.rows else { return }
        // Neighbouring cells mostly share a style: work out its attributes once per change.
        var style: CellStyle?
        var attributes = notty_a_normal()
        var pair: Int16 = 0
        let first = run.row * screen.size.columns
        screen.withCells { cells in
            for column in run.columns where column < terminal.columns {
                if cells[first + column].isContinuation { continue }
                if cells[first + column].style != style {
                    style = cells[first + column].style
                    (attributes, pair) = cursesAttributes(cells[first + column].style)
                }
                _ = withCellScalars(cells[first + column].character) { text in
                    notty_put_cell(win, Int32(run.row), Int32(column), text, attributes, pair)
                }
            }
        }
    }

    private func cursesAttributes(_ style: CellStyle) -> (attr_t, Int16) {
        var attributes = notty_a_normal()
        if style.bold { attributes |= notty_a_bold() }
        if style.reverse { attributes |= notty_a_reverse() }
        if style.dim { attributes |= notty_a_dim() }
        if style.underline { attributes |= notty_a_underline() }
        var pair: Int16 = 0
        if let color = style.color, let entry = colorPairs[color] {
            pair = entry.pair
            attributes |= entry.extra
        }
        return (attributes, pair)
    }

    // MARK: - Keys

    /// Waits up to `timeoutMilliseconds` (nil: forever) for a key press or a resize and returns
    /// it decoded; nil on timeout, when `wakeUp` is signalled (before or during the wait), or
    /// before `start`. Keys notty does not use (F1…) are skipped. After `.resize` the next
    /// `paint` repaints everything. `.closed`: the terminal hung up.
    public func readKey(timeoutMilliseconds: Int?, wakeUp: WakeUp? = nil) -> KeyInput? {
        let clock = ContinuousClock()
        let deadline = timeoutMilliseconds.map { clock.now.advanced(by: .milliseconds(max(0, $0))) }
        while true {
            switch readPending() {
            case .notStarted:
                return nil
            case .input(let input):
                return input
            case .ignored:
                continue
            case .nothing(let descriptor):
                // Wait for the tty outside the lock, in slices, so that a SIGWINCH taken by
                // another thread is still noticed within 100 ms.
                var slice = 100
                if let deadline {
                    let left = clock.now.duration(to: deadline)
                    if left <= .zero { return nil }
                    slice = min(slice, max(1, Int(left.milliseconds)))
                }
                var descriptors = [
                    pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0),
                    pollfd(fd: wakeUp?.descriptor ?? -1, events: Int16(POLLIN), revents: 0),
                ]
                let ready = poll(&descriptors, nfds_t(descriptors.count), Int32(slice))
                // A hung-up tty polls as readable *and* HUP/ERR; input already queued was
                // read above, so this means the terminal is gone.
                if ready > 0, descriptors[0].revents & Int16(POLLHUP | POLLERR | POLLNVAL) != 0 {
                    return .closed
                }
                // A key and a wake-up at once: the key is read now, and the wake-up, left in
                // its pipe, ends the next wait.
                if ready > 0, descriptors[1].revents != 0, descriptors[0].revents == 0 {
                    wakeUp?.drain()
                    return nil
                }
            }
        }
    }

    private enum Pending {
        case notStarted
        case nothing(Int32)
        case ignored
        case input(KeyInput)
    }

    /// One non-blocking `wget_wch` (ncurses still waits `ESCDELAY` for the rest of a sequence).
    private func readPending() -> Pending {
        lock.withLock {
            guard let win = window else { return .notStarted }
            wtimeout(win, 0)
            var value: wint_t = 0
            let status = wget_wch(win, &value)
            if status == notty_key_code_yes() {
                if Int32(bitPattern: value) == notty_key_resize() {
                    previous = nil
                    return .input(.resize(Self.size(of: win)))
                }
                return decodeKey(.keyCode(Int32(bitPattern: value))).map { .input(.key($0)) } ?? .ignored
            }
            if status == notty_ok() {
                return decodeKey(.character(UInt32(value))).map { .input(.key($0)) } ?? .ignored
            }
            return .nothing(inputDescriptor)
        }
    }

    // MARK: - Helpers

    private static func size(of win: UnsafeMutablePointer<WINDOW>) -> Size {
        Size(columns: Int(notty_columns(win)), rows: Int(notty_rows(win)))
    }

    private static func localeIsUTF8() -> Bool {
        guard let codeset = nl_langinfo(nl_item(CODESET)) else { return false }
        let name = String(cString: codeset).lowercased()
        return name == "utf-8" || name == "utf8"
    }

    /// One pair per semantic colour (pair numbers 1…7), on the default background.
    private static func startColors() -> [SemanticColor: (pair: Int16, extra: attr_t)] {
        guard has_colors() else { return [:] }
        start_color()
        let background: Int16 = use_default_colors() == notty_ok() ? -1 : Int16(COLOR_BLACK)
        let manyColors = notty_colors() >= 16
        var pairs: [SemanticColor: (pair: Int16, extra: attr_t)] = [:]
        for (index, color) in SemanticColor.allCases.enumerated() {
            let pair = Int16(index + 1)
            var extra = notty_a_normal()
            let foreground: Int32
            switch color {
            case .accent: foreground = COLOR_CYAN
            case .high: foreground = COLOR_MAGENTA
            case .low: foreground = COLOR_BLUE
            case .ok: foreground = COLOR_GREEN
            case .warning: foreground = COLOR_YELLOW
            case .error: foreground = COLOR_RED
            case .muted:
                // Bright black (grey) where there is one, otherwise the default colour dimmed.
                if manyColors {
                    foreground = 8
                } else {
                    foreground = -1
                    extra = notty_a_dim()
                }
            }
            init_pair(pair, Int16(foreground), background)
            pairs[color] = (pair, extra)
        }
        return pairs
    }
}
