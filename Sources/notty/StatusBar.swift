import ArgumentParser
import Foundation
import NottyCommandLine
import NottyCore
import NottyPOSIX
import NottyStore

#if canImport(Glibc)
import Glibc
#endif

/// `--view` and `--format` of `notty count` and `notty watch`.
struct BadgeOptions: ParsableArguments {
    @Option(help: "The view to count: a built-in one or a saved view's name (notty view --list).") var view: ViewChoice = ViewChoice(.unread)
    @Option(
        help: ArgumentHelp(
            "How to print it: plain is the number alone.",
            discussion:
                "tmux, starship, i3blocks and polybar print nothing at 0; tmux and polybar colour the count red while a High one is unread (not with NO_COLOR).",
            valueName: "format")) var format: BadgeFormatArgument = BadgeFormatArgument(argument: "plain")!
    @Flag(help: "The same as --format json.") var json = false

    var chosenFormat: BadgeFormat { json ? .json : format.format }
    var color: Bool { Self.color }
    static var color: Bool { (ProcessInfo.processInfo.environment["NO_COLOR"] ?? "").isEmpty }

    /// The badge of this device's store now; an empty one when the store does not exist yet
    /// (nothing is created: a prompt may run this on a machine never signed in). `quick`: read
    /// first with the store opened to read only (``withQuickBadge(path:view:_:)``), unless the
    /// caller tried that already.
    static func badge(_ device: Device, view: ViewChoice, quick: Bool = true) async throws -> Badge {
        let path = device.paths.store
        if quick, let badge = (try? await offThePool { withQuickBadge(path: path, view: view) { $0 } }) ?? nil { return badge }
        return try await device.store().perform { try view.badge(of: $0) }
    }

    /// The badge of the store at `path` read on this thread with the store opened to read only
    /// (what every prompt pays for; an empty badge when there is no store yet), handed to `use`
    /// while the store is open. Nil, and nothing handed, when the store must be opened fully
    /// first: to be migrated by a new build, or to say what is wrong with it.
    @available(*, noasync, message: "blocks on SQLite: call it inside `offThePool { … }`, never on Swift's cooperative pool")
    static func withQuickBadge<T>(path: String, view: ViewChoice, _ use: (Badge) -> T) -> T? {
        guard FileManager.default.fileExists(atPath: path) else { return use(.empty(view: view.builtIn ?? .all, name: view.saved)) }
        guard let store = try? LocalStore.openedToRead(path: path), let badge = try? view.badge(of: store) else { return nil }
        return withExtendedLifetime(store) { use(badge) }
    }
}

extension ViewChoice {
    /// This view's badge in `store` now: a saved view's is All with its search.
    func badge(of store: LocalStore) throws -> Badge {
        if let builtIn { return try store.badge(view: builtIn) }
        let (_, _, saved) = try resolve(store)
        return try store.badge(saved: saved!)
    }
}

struct BadgeFormatArgument: ExpressibleByArgument {
    var format: BadgeFormat
    init?(argument: String) {
        guard let format = BadgeFormat(rawValue: argument.lowercased()) else { return nil }
        self.format = format
    }
    static var allValueStrings: [String] { BadgeFormat.allCases.map(\.rawValue) }
    var defaultValueDescription: String { format.rawValue }
}

struct Count: AsyncParsableCommand {
    /// `notty count [--view V] [--format F] [--json]` read without ArgumentParser (it runs in
    /// every prompt: building its tree of every command costs more than the count); nil for
    /// anything else (`--help`, a mistake), which ArgumentParser then answers.
    static func quick(_ arguments: [String]) -> (view: ViewChoice, format: BadgeFormat)? {
        var (view, format) = (ViewChoice(.unread), BadgeFormat.plain)
        var rest = arguments[...]
        while let argument = rest.popFirst() {
            switch argument {
            case "--json": format = .json
            case "--view": guard let next = rest.popFirst(), let chosen = ViewChoice(argument: next) else { return nil }; view = chosen
            case "--format":
                guard let next = rest.popFirst(), let chosen = BadgeFormat(rawValue: next.lowercased()) else { return nil }; format = chosen
            default: return nil
            }
        }
        return (view, format)
    }

    /// The count printed on this thread and the process ended (``Main``'s quick path: nothing
    /// else is set up, and the read-only store is not closed: it has nothing to write back).
    /// Returns when the store must be opened fully first, which ``print(view:format:quick:)`` does.
    static func printAndExit(view: ViewChoice, format: BadgeFormat) {
        _ = BadgeOptions.withQuickBadge(path: Device().paths.store, view: view) { badge -> Never in
            Swift.print(format.line(badge, color: BadgeOptions.color))
            Foundation.exit(0)
        }
    }

    static func print(view: ViewChoice, format: BadgeFormat, quick: Bool = true) async throws {
        Swift.print(format.line(try await BadgeOptions.badge(Device(), view: view, quick: quick), color: BadgeOptions.color))
    }

    static let configuration = CommandConfiguration(
        commandName: "count",
        abstract: "Print how many notifications a view holds, for a prompt or a status line.",
        discussion: """
            Reads this device's store only (no network): as fresh as its last sync, which \
            notty poll keeps live. Examples:
              tmux:      set -g status-right '#(notty count --format tmux) %H:%M'
              starship:  [custom.notty] command = "notty count --format starship"
                         when = true, symbol = "✉ "
            notty watch prints a new line whenever the count changes, for status bars that \
            keep a command running (waybar, i3blocks, polybar).
            """)

    @OptionGroup var options: BadgeOptions

    func run() async throws {
        try await reportingErrors {
            try await Self.print(view: options.view, format: options.chosenFormat)
        }
    }
}

struct Watch: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch",
        abstract: "Print the count of a view, and again each time it changes, for a status bar.",
        discussion: """
            One line at start, then one whenever the line would change: a sync, the center or \
            another process changed the store, a snooze ended or a notification expired (the \
            store's change signal: nothing is read while nothing changes). It ends on SIGTERM \
            or SIGINT, and when its output is closed. Examples:
              waybar:    "custom/notty": {"exec": "notty watch --format waybar", "return-type": "json"}
              i3blocks:  [notty] command=notty watch --format i3blocks, interval=persist
              polybar:   type = custom/script, exec = notty watch --format polybar, tail = true
            """)

    @OptionGroup var options: BadgeOptions

    func run() async throws {
        try await reportingErrors {
            let device = Device()
            let store = try await device.store()
            let (format, color, view) = (options.chosenFormat, options.color, options.view)
            signal(SIGPIPE, SIG_IGN)
            watchForClosedOutput()
            let printer = Task {
                var last: String?
                func show() async {
                    let line: String
                    do {
                        line = format.line(try await store.perform { try view.badge(of: $0) }, color: color)
                    } catch {
                        warn("cannot read the local store at \(device.paths.store): \(error)")
                        Foundation.exit(1)
                    }
                    guard line != last else { return }
                    last = line
                    guard writeLine(line) else { Foundation.exit(0) }  // the reader went away
                }
                await show()
                for await _ in store.changes() { await show() }
            }
            await waitForTermination()
            printer.cancel()
        }
    }

    /// Writes `line` and a newline to stdout at once (a status bar reads line by line);
    /// false when stdout is closed.
    private func writeLine(_ line: String) -> Bool {
        var bytes = Array((line + "\n").utf8)[...]
        while !bytes.isEmpty {
            let written = bytes.withUnsafeBytes { write(1, $0.baseAddress, $0.count) }
            if written < 0, errno == EINTR { continue }
            guard written > 0 else { return false }
            bytes = bytes.dropFirst(written)
        }
        return true
    }

    /// Ends the process when the reader of stdout goes away (a status bar restarted), even
    /// while nothing changes: a thread waits in poll(2) for the pipe's error or hang-up.
    private func watchForClosedOutput() {
        startOffThePool(name: "notty-watch-output") {
            var entry = pollfd(fd: 1, events: 0, revents: 0)
            while true {
                let ready = poll(&entry, 1, -1)
                if ready < 0, errno == EINTR { continue }
                if ready < 0 { return }  // not pollable: writes find out instead
                if entry.revents & Int16(POLLERR | POLLHUP | POLLNVAL) != 0 { Foundation.exit(0) }
                if ready > 0 { return }  // something else: not a pipe's end
            }
        }
    }
}
