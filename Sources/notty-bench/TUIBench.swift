import CPOSIX
import Foundation
import NottyCore
import NottyStore
import NottyTestSupport

/// Issue 4's figures: the real `notty` (the terminal notification center) on a pseudo-terminal
/// this process owns, with the device's 100,000-notification store. A frame is the terminal
/// output that follows an event until the output has been quiet for `quiet`; its time is the
/// arrival of its last byte (the quiet wait itself is not counted).
struct TUIBench {
    let service: ServiceBench
    let device: SyncedDevice
    static let quiet: Duration = .milliseconds(15)

    func run(quick: Bool) async throws {
        let store = try await LocalStore.open(path: device.storePath)
        guard let newest = try (await store.perform { try $0.window(view: .unread, limit: 1) }).first?.payload.visualContent?.title else {
            throw SupportError("no unread notification to look for")
        }
        let terminal = try PseudoTerminal(columns: 120, rows: 40)
        let start = ContinuousClock.now
        let process = try terminal.spawn(
            Repository.nottyBinary.path, ["tui"], environment: ["NOTTY_HOME": device.home.path, "TERM": "xterm-256color"])
        defer {
            kill(process, SIGTERM)
            var status: Int32 = 0
            waitpid(process, &status, 0)
        }
        // The first frame: the newest unread title (list) and the account (status line, the
        // last row ncurses paints).
        let first = try terminal.readUntil(timeout: .seconds(10)) { text in
            text.contains(newest) && text.contains("alice@")
        }
        print("")
        print(
            String(
                format: "first full frame (120×40, %d notifications in the store): %.1f ms after the process started", device.count,
                (first - start).seconds * 1000))
        let atFirst = memory(pid: process)
        print(String(format: "resident memory at the first frame: %.1f MiB", Double(atFirst.resident) / 1_048_576))
        try await Task.sleep(for: .seconds(2))  // the doorbell connects, the status line settles
        _ = terminal.drain(quiet: .milliseconds(200))
        // notty builds its search index in the background after the first frame.
        var unindexed = try (await store.perform { try $0.rowsToIndexForSearch() })
        while unindexed > 0, ContinuousClock.now - first < .seconds(30) {
            try await Task.sleep(for: .milliseconds(50))
            unindexed = try (await store.perform { try $0.rowsToIndexForSearch() })
        }
        let indexed = memory(pid: process)
        print(
            String(
                format: "search index built in the background: %@ %.1f s after the first frame; resident memory then %.1f MiB",
                unindexed == 0 ? "complete" : "NOT complete (\(unindexed) rows left)", (ContinuousClock.now - first).seconds,
                Double(indexed.resident) / 1_048_576))
        _ = terminal.drain(quiet: .milliseconds(200))

        // 400 of each kind of key: the 99th percentile is then the fourth slowest, not the
        // slowest (of 100 it would be the maximum, whatever happened to the machine then).
        let repeats = quick ? 20 : 400
        var moving: [Double] = [], switching: [Double] = [], jumping: [Double] = [], typing: [Double] = [], enter: [Double] = [],
            settled: [Double] = [], escapes: [Double] = []
        for i in 0..<repeats {
            moving.append(try terminal.keyToFrame(i % 10 < 5 ? "j" : "k"))
        }
        for i in 0..<repeats {
            switching.append(try terminal.keyToFrame(i % 2 == 0 ? "\t" : "\u{1B}[Z"))  // Tab, Shift-Tab
        }
        for i in 0..<(repeats / 2) {
            jumping.append(try terminal.keyToFrame(i % 2 == 0 ? "G" : "g"))
            jumping.append(try terminal.keyToFrame(i % 2 == 0 ? "\u{02}" : "\u{06}"))  // Ctrl-b after G, Ctrl-f after g
        }
        // Each search three times (the four in turn, so that none is the one the store remembers).
        let searches = quick ? Array(ClientBench.searchQueries.prefix(2)) : Array(repeating: ClientBench.searchQueries, count: 3).flatMap { $0 }
        for query in searches {
            _ = try terminal.keyToFrame("/")
            for character in query {
                typing.append(try terminal.keyToFrame(String(character)))
            }
            // Enter: the first rows, then (for many matches) the count from the background.
            // The first matches' frame is the one whose bottom line says how many ("match"):
            // the count's frame may follow it within the 15 ms of quiet that end a frame.
            let (rows, last) = try terminal.keyToFrames("\r", settle: .milliseconds(150), firstShows: "match")
            enter.append(rows)
            settled.append(last)
            escapes.append(try terminal.keyToFrame("\u{1B}"))  // Esc clears the search
            _ = terminal.drain(quiet: .milliseconds(100))
        }
        print("key press → repainted frame:")
        print("  moving (j/k):                 \(summary(moving))")
        print("  switching views (Tab/S-Tab):  \(summary(switching))")
        print("  jumping (g/G, Ctrl-f/Ctrl-b): \(summary(jumping))")
        print("  typing a search:              \(summary(typing))")
        print("  Enter → the first matches:    \(summary(enter))")
        print("  Enter → the count of matches (a later frame for many matches; any frame within 150 ms): \(summary(settled))")
        print("  Esc clearing the search (includes ncurses' ESCDELAY wait): \(summary(escapes))")
        print("  all keys but Esc (first frame): \(summary(moving + switching + jumping + typing + enter))")
        print(
            "  the slowest three of each: moving \(slowest(moving)), switching \(slowest(switching)), jumping \(slowest(jumping)), Enter \(slowest(enter)) ms"
        )
        let before = memory(pid: process)
        print(
            String(
                format: "resident memory of notty: %.1f MiB now, %.1f MiB peak", Double(before.resident) / 1_048_576, Double(before.peak) / 1_048_576)
        )
        // Left alone (its clock ticks every second; the doorbell is connected). CPU time
        // counts in clock ticks of 10 ms: 20 s make that 0.5 ms a second.
        let idle: Duration = .seconds(20)
        let cpuBefore = cpuSeconds(pid: process)
        try await Task.sleep(for: idle)
        print(
            String(
                format: "left alone for %.0f s: %.2f ms of CPU a second", idle.seconds, (cpuSeconds(pid: process) - cpuBefore) * 1000 / idle.seconds))
        _ = terminal.drain(quiet: .milliseconds(2))

        // A burst: another device dismisses 1,000 notifications at once; the doorbell brings
        // them in while keys keep arriving every 10 ms.
        let ids = Array(try (await store.perform { try $0.ids(view: .unread) }).prefix(1000))
        let burst = Task {
            try await service.sendBatches(
                ids.map {
                    #"{"id":"\#($0)","userActionState":"Dismissed","changedAt":\#(ISOTime.millis(Date())),"mutationId":"\#(UUID().uuidString)"}"#
                })
        }
        var during: [Double] = []
        let burstStart = ContinuousClock.now
        var applied = false
        while ContinuousClock.now - burstStart < .seconds(10) {
            during.append(try terminal.keyToFrame(during.count % 2 == 0 ? "j" : "k"))
            try await Task.sleep(for: .milliseconds(10))
            if try (await store.perform { try $0.count(view: .dismissed) }) >= ids.count, ContinuousClock.now - burstStart > .seconds(2) {
                applied = true
                break
            }
        }
        try await burst.value
        print(
            "a burst of 1,000 changes from another device (\(applied ? "all reached the store" : "NOT all in the store after 10 s")): keys every 10 ms meanwhile, key → frame \(summary(during))"
        )
        let after = memory(pid: process)
        print(
            String(
                format: "resident memory after the burst: %.1f MiB now, %.1f MiB peak", Double(after.resident) / 1_048_576,
                Double(after.peak) / 1_048_576))
    }
}

/// A pseudo-terminal whose far side a child process gets as its terminal.
final class PseudoTerminal {
    let master: Int32
    let slavePath: String

    init(columns: Int, rows: Int) throws {
        master = posix_openpt(O_RDWR | O_NOCTTY)
        guard master >= 0, grantpt(master) == 0, unlockpt(master) == 0 else { throw SupportError("no pseudo-terminal: errno \(errno)") }
        var name = [CChar](repeating: 0, count: 128)
        guard ptsname_r(master, &name, name.count) == 0 else { throw SupportError("ptsname: errno \(errno)") }
        slavePath = String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        var size = winsize(ws_row: UInt16(rows), ws_col: UInt16(columns), ws_xpixel: 0, ws_ypixel: 0)
        _ = ioctl(master, UInt(TIOCSWINSZ), &size)
    }

    deinit { close(master) }

    /// Starts `path` in a new session with the pseudo-terminal as its controlling terminal and
    /// standard input, output and error.
    func spawn(_ path: String, _ arguments: [String], environment: [String: String]) throws -> pid_t {
        let merged = ProcessInfo.processInfo.environment.filter { $0.key != "NO_COLOR" }.merging(environment) { $1 }
        return try NottyTestSupport.spawn(path, arguments, environment: merged, newSession: true) { actions in
            posix_spawn_file_actions_addopen(&actions, 0, slavePath, O_RDWR, 0)
            posix_spawn_file_actions_adddup2(&actions, 0, 1)
            posix_spawn_file_actions_adddup2(&actions, 0, 2)
        }
    }

    /// Reads output until `done` holds for everything read so far; returns when the last
    /// byte needed arrived.
    func readUntil(timeout: Duration, _ done: (String) -> Bool) throws -> ContinuousClock.Instant {
        var seen = Data()
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            guard let chunk = read(waiting: .milliseconds(50)) else { continue }
            seen.append(chunk)
            if done(String(decoding: seen, as: UTF8.self)) { return ContinuousClock.now }
        }
        throw SupportError("the terminal never showed what was expected; it got \(seen.count) bytes")
    }

    /// Sends `keys` and returns the milliseconds until the last byte of the frame they caused.
    func keyToFrame(_ keys: String) throws -> Double {
        try keyToFrames(keys, settle: nil).first
    }

    /// Sends `keys` and returns the milliseconds until the last byte of the first frame they
    /// caused, and until the last byte of any frame that followed within `settle`.
    /// With `firstShows`, the first frame ends with the output that first contains that text
    /// (and what follows it within 2 ms), not at the first 15 ms of quiet: a second frame
    /// that comes sooner than that is not counted in the first.
    func keyToFrames(_ keys: String, settle: Duration?, firstShows: String? = nil) throws -> (first: Double, last: Double) {
        _ = drain(quiet: .milliseconds(2))
        let start = ContinuousClock.now
        let bytes = Array(keys.utf8)
        guard bytes.withUnsafeBytes({ Glibc.write(master, $0.baseAddress, $0.count) }) == bytes.count else {
            throw SupportError("write to the terminal failed")
        }
        guard var seen = read(waiting: .seconds(2)) else { throw SupportError("no frame within 2 s of \(keys.debugDescription)") }
        let first: ContinuousClock.Instant
        if let firstShows {
            var shown = ContinuousClock.now
            while !String(decoding: seen, as: UTF8.self).contains(firstShows) {
                guard let chunk = read(waiting: .seconds(2)) else { throw SupportError("no frame showed \(firstShows.debugDescription) within 2 s") }
                seen.append(chunk)
                shown = ContinuousClock.now
            }
            first = max(shown, drain(quiet: .milliseconds(2)))
        } else {
            first = drain(quiet: TUIBench.quiet)
        }
        let last = settle.map { drain(quiet: $0) } ?? first
        return ((first - start).seconds * 1000, (max(first, last) - start).seconds * 1000)
    }

    /// Reads until nothing arrives for `quiet`; returns when the last byte arrived.
    @discardableResult
    func drain(quiet: Duration) -> ContinuousClock.Instant {
        var last = ContinuousClock.now
        while read(waiting: quiet) != nil { last = ContinuousClock.now }
        return last
    }

    private func read(waiting: Duration) -> Data? {
        var descriptor = pollfd(fd: master, events: Int16(POLLIN), revents: 0)
        let milliseconds = Int32(waiting.seconds * 1000)
        guard poll(&descriptor, 1, milliseconds) > 0 else { return nil }
        var buffer = [UInt8](repeating: 0, count: 65_536)
        let n = Glibc.read(master, &buffer, buffer.count)
        guard n > 0 else { return nil }
        return Data(buffer[0..<n])
    }
}
