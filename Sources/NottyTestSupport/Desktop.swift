import Foundation
import NottyPOSIX
import Synchronization

/// A real desktop for tests: a private session bus (`dbus-daemon --session`), an X server
/// (`Xvfb`) and the `dunst` notification daemon on them, driven with `dunstctl`. Popups never
/// expire by themselves here (timeout 0). Everything is stopped by ``stop()`` (and deinit).
// @unchecked: its processes are set while it starts and read when it stops, from one task
public final class TestDesktop: @unchecked Sendable {
    public static let available = ["/usr/bin/dbus-daemon", "/usr/bin/Xvfb", "/usr/bin/dunst", "/usr/bin/dunstctl"]
        .allSatisfy { FileManager.default.isExecutableFile(atPath: $0) }
    /// In CI the desktop tests must run.
    public static let required = ProcessInfo.processInfo.environment["CI"] == "true"

    private static let nextDisplay = Atomic<Int>(90 + Int(getpid() % 50) * 4)
    fileprivate static let turn = DesktopTurn()
    private let holdsTurn = Atomic<Bool>(false)

    public let busAddress: String
    public let display: String
    private let directory: URL
    private var bus: ChildProcess?
    private var xvfb: ChildProcess?
    private var dunst: ChildProcess?
    private var monitor: ChildProcess?
    private var monitorLog: URL { directory.appendingPathComponent("monitor.log") }

    /// What a process needs to reach this desktop.
    public var environment: [String: String] { ["DBUS_SESSION_BUS_ADDRESS": busAddress, "DISPLAY": display] }

    public init() async throws {
        // One desktop at a time in a process: two dunsts started together (tests of two suites)
        // stopped answering dunstctl.
        await Self.turn.acquire()
        holdsTurn.store(true, ordering: .releasing)
        directory = Repository.temporaryDirectory("notty-desktop")
        // The bus, on a socket of its own; ready when the socket is there.
        let socket = directory.appendingPathComponent("bus").path
        let address = "unix:path=\(socket)", busLog = directory.appendingPathComponent("dbus.log")
        busAddress = address
        bus = try Self.releasingTurnOnFailure {
            try startLogged(
                "/usr/bin/dbus-daemon", ["--session", "--nofork", "--nopidfile", "--address=\(address)"],
                log: busLog, environment: [:])
        }
        // An X display nobody else uses: of this process's desktops (they may start at once) each
        // takes its own number, and one another process holds is stepped over.
        var number = Self.nextDisplay.add(1, ordering: .relaxed).oldValue
        while FileManager.default.fileExists(atPath: "/tmp/.X11-unix/X\(number)") || FileManager.default.fileExists(atPath: "/tmp/.X\(number)-lock") {
            number += 1
        }
        display = ":\(number)"
        guard await eventually(timeout: .seconds(10), { FileManager.default.fileExists(atPath: socket) }) else {
            stop()
            throw SupportError("dbus-daemon did not start")
        }
        xvfb = try Self.releasingTurnOnFailure {
            try startLogged(
                "/usr/bin/Xvfb", [display, "-screen", "0", "1024x768x24", "-nolisten", "tcp"], log: directory.appendingPathComponent("xvfb.log"),
                environment: [:])
        }
        guard await eventually(timeout: .seconds(10), { FileManager.default.fileExists(atPath: "/tmp/.X11-unix/X\(number)") }) else {
            stop()
            throw SupportError("Xvfb did not start on \(display)")
        }
        // dunst's context menu runs `dmenu` with one line per action ("#Label (summary) [id,key]")
        // and invokes the line it prints: this one prints the first whose label is in `menu-choice`.
        let dmenu = directory.appendingPathComponent("dmenu")
        try writeProgram(
            """
            #!/bin/sh
            grep -m1 "^#$(cat '\(directory.appendingPathComponent("menu-choice").path)') ("
            """, to: dmenu)
        let config = directory.appendingPathComponent("dunstrc")
        try """
        [global]
            monitor = 0
            dmenu = \(dmenu.path)
        [urgency_low]
            timeout = 0
        [urgency_normal]
            timeout = 0
        [urgency_critical]
            timeout = 0
        """.write(to: config, atomically: true, encoding: .utf8)
        dunst = try Self.releasingTurnOnFailure {
            try startLogged("/usr/bin/dunst", ["-config", config.path], log: directory.appendingPathComponent("dunst.log"), environment: environment)
        }
        guard await eventually(timeout: .seconds(10), { (try? await self.displayed()) != nil }) else {
            let log = (try? String(contentsOf: directory.appendingPathComponent("dunst.log"), encoding: .utf8)) ?? ""
            stop()
            throw SupportError("dunst did not start: \(log)")
        }
        // Every Notify call on the bus, for `notifyCalls()`; ready once it is a monitor (it has
        // given up its name).
        monitor = try Self.releasingTurnOnFailure {
            try startLogged(
                "/usr/bin/dbus-monitor", ["--address", busAddress, "type='method_call',interface='org.freedesktop.Notifications',member='Notify'"],
                log: monitorLog, environment: [:])
        }
        guard
            await eventually(
                timeout: .seconds(10), { ((try? String(contentsOf: self.monitorLog, encoding: .utf8)) ?? "").contains("member=NameLost") })
        else {
            stop()
            throw SupportError("dbus-monitor did not start")
        }
    }

    /// One `Notify` call: a popup asked for, new (`replacesId` 0) or in place of one shown.
    public struct NotifyCall: Sendable, Equatable {
        public let replacesId: UInt32
        public let summary: String

        public init(replacesId: UInt32, summary: String) {
            self.replacesId = replacesId
            self.summary = summary
        }
    }

    /// Every `Notify` call made on the bus so far, in order (`dbus-monitor`): an event counter,
    /// so a test waits for the call that must come (or for a later one, as a barrier) instead
    /// of waiting some time for nothing to happen.
    public func notifyCalls() -> [NotifyCall] {
        let text = (try? String(contentsOf: monitorLog, encoding: .utf8)) ?? ""
        return text.components(separatedBy: "method call ").dropFirst().compactMap { call in
            // Arguments, one a line: app name, replaces_id, icon, summary, body, …
            let arguments = call.split(separator: "\n").dropFirst().map { $0.trimmingCharacters(in: .whitespaces) }
            guard arguments.count >= 4, arguments[1].hasPrefix("uint32 "), let replaces = UInt32(arguments[1].dropFirst(7)),
                arguments[3].hasPrefix("string \""), arguments[3].hasSuffix("\"")
            else { return nil }
            return NotifyCall(replacesId: replaces, summary: String(arguments[3].dropFirst(8).dropLast()))
        }
    }

    /// `dunstctl count displayed`: the popups on screen.
    public func displayed() async throws -> Int {
        let result = try await dunstctl(["count", "displayed"])
        guard let count = Int(result.trimmingCharacters(in: .whitespacesAndNewlines)) else { throw SupportError("dunstctl count: \(result)") }
        return count
    }

    /// `dunstctl close`: closes the topmost popup as the user would (reason 2).
    public func closeTopmost() async throws { _ = try await dunstctl(["close"]) }

    /// `dunstctl action 0`: the default action of the topmost popup (a click on it).
    public func clickTopmost() async throws { _ = try await dunstctl(["action", "0"]) }

    /// Chooses the action labelled `label` in dunst's context menu (`dunstctl context`).
    public func chooseAction(_ label: String) async throws {
        try label.write(to: directory.appendingPathComponent("menu-choice"), atomically: true, encoding: .utf8)
        _ = try await dunstctl(["context"])
    }

    /// The summaries in `dunstctl history` (popups closed so far), newest first.
    public func historySummaries() async throws -> [String] {
        let text = try await dunstctl(["history"])
        guard let root = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any],
            let data = root["data"] as? [[Any]], let items = data.first as? [[String: Any]]
        else { return [] }
        return items.compactMap { ($0["summary"] as? [String: Any])?["data"] as? String }
    }

    @discardableResult
    public func dunstctl(_ arguments: [String]) async throws -> String {
        let result = try await Repository.run(["dunstctl"] + arguments, environment: environment)
        guard result.status == 0 else { throw SupportError("dunstctl \(arguments.joined(separator: " ")): \(result.output)") }
        return result.output
    }

    public func stop() {
        // SIGKILL: nothing of theirs needs saving, and dunst may wait on its X connection.
        for process in [monitor, dunst, xvfb, bus].compactMap({ $0 }) where process.isRunning {
            process.signal(SIGKILL)
            process.wait()
        }
        monitor = nil
        dunst = nil
        xvfb = nil
        bus = nil
        try? FileManager.default.removeItem(at: directory)
        if holdsTurn.exchange(false, ordering: .acquiringAndReleasing) { Task { await Self.turn.release() } }
    }

    deinit { stop() }
}

extension TestDesktop {
    /// `body`'s result; when it throws, the turn taken at the start of `init` is given back (a
    /// failed `init` never reaches ``stop()``).
    fileprivate static func releasingTurnOnFailure<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch {
            Task { await turn.release() }
            throw error
        }
    }
}

/// Whose turn it is to run a desktop (``TestDesktop``): one at a time, in order of asking.
private actor DesktopTurn {
    private var busy = false
    private var waiting: [CheckedContinuation<Void, Never>] = []

    func acquire() async {
        guard busy else {
            busy = true
            return
        }
        await withCheckedContinuation { waiting.append($0) }
    }

    func release() {
        if waiting.isEmpty { busy = false } else { waiting.removeFirst().resume() }
    }
}
