import ArgumentParser
import Foundation
import NottyCore
import NottyStore
import NottySync

struct Poll: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Keep the local store in sync in the background and report new notifications.",
        discussion: """
            Prints each notification that arrives while it runs as one JSON line on
            stdout (the service's field names) and, with --exec, runs a command for
            each with NOTTY_ID, NOTTY_TITLE, NOTTY_BODY, NOTTY_PRIORITY, NOTTY_APP and
            NOTTY_GROUP set. Polls
            at the service's X-Poll-Interval (or --interval when longer), backing off while
            the service is away; --live listens on the doorbell instead and falls back to
            polling. Defaults for these come from config.toml (see notty --help). SIGINT or
            SIGTERM stops it.

              notty poll --live --exec 'notify-send "$NOTTY_TITLE" "$NOTTY_BODY"'
              notty poll --once          # one sync, print what is new, exit
            """)

    @Option(help: ArgumentHelp("Seconds between polls (never more often than the service allows; default: poll.interval in config.toml).", valueName: "seconds")) var interval: Int?
    @Option(help: ArgumentHelp("A shell command to run for each new notification (default: poll.exec in config.toml).", valueName: "command")) var exec: String?
    @Flag(help: "Sync once, report, and exit.") var once = false
    @Flag(inversion: .prefixedNo, help: "Use the doorbell WebSocket, falling back to polling (default: poll.live in config.toml, unless --interval is given).") var live: Bool?

    func validate() throws {
        if let interval, interval < 1 { throw ArgumentParser.ValidationError("--interval must be at least 1 second") }
        if once && live == true { throw ArgumentParser.ValidationError("--once and --live do not go together") }
    }

    func run() async throws {
        try await reportingErrors {
            let device = Device()
            let settings = try device.settings()
            let (client, store, engine) = try device.session()
            let announcer = Announcer(store: store, command: exec ?? settings.pollExec)
            // What the store already holds is not news: report what arrives from now on.
            try store.markAllAnnounced()
            if once {
                try await engine.sync()
                try announcer.announce()
                return
            }
            // A flag wins over the file: --interval (or --no-live) asks for polling.
            let useLive = live ?? (interval == nil && settings.pollLive)
            let mode: LiveSync.Mode = useLive ? .live : .polling(minimumInterval: interval ?? settings.pollInterval ?? 1)
            let liveSync = LiveSync(engine: engine, client: client, mode: mode) { event in
                switch event {
                case .connection(let state): warn("connection: \(describe(state))")
                case .failed(let error): warn(error.description)
                case .synced: try? announcer.announce()
                }
            }
            let task = Task { await liveSync.run() }
            // Another process of this device (the terminal UI) may pull first: watch the store too.
            let watcher = Task {
                var revision = (try? store.revision()) ?? 0
                while !Task.isCancelled {
                    try? await Task.sleep(for: .milliseconds(250))
                    let now = (try? store.revision()) ?? revision
                    if now != revision { revision = now; try? announcer.announce() }
                }
            }
            await waitForTermination()
            watcher.cancel()
            task.cancel()
            await task.value
        }
    }
}

func describe(_ state: ConnectionState) -> String {
    switch state {
    case .connecting: "connecting"
    case .live: "live"
    case .polling(let every): "polling every \(every)s"
    case .offline(let since): "offline since \(ISOTime.format(since))"
    }
}

/// Prints (and runs `--exec` for) notifications not yet announced on this device.
final class Announcer: Sendable {
    let store: LocalStore
    let command: String?
    private let lock = NSLock()

    init(store: LocalStore, command: String?) {
        self.store = store
        self.command = command
    }

    func announce() throws {
        lock.lock()
        defer { lock.unlock() }
        let fresh = try store.unannounced()
        guard !fresh.isEmpty else { return }
        // Marked first: a crash may skip an announcement but never repeats a command.
        try store.markAnnounced(fresh.map(\.id))
        for notification in fresh {
            print(jsonLine(notification))
            fflush(nil)
            if let command { run(command, for: notification) }
        }
    }

    private func run(_ command: String, for n: UserNotification) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", command]
        var environment = ProcessInfo.processInfo.environment
        environment["NOTTY_ID"] = n.id
        environment["NOTTY_TITLE"] = n.displayTitle
        environment["NOTTY_BODY"] = n.payload.visualContent?.body ?? n.payload.rawContent ?? ""
        environment["NOTTY_PRIORITY"] = n.priority.rawValue
        environment["NOTTY_APP"] = n.targetHostName
        environment["NOTTY_GROUP"] = n.groupName ?? ""
        process.environment = environment
        do {
            try process.run()
            process.waitUntilExit()
            if process.terminationStatus != 0 { warn("--exec exited with \(process.terminationStatus) for \(n.id)") }
        } catch {
            warn("cannot run --exec: \(error)")
        }
    }
}

/// Returns when SIGINT or SIGTERM arrives.
func waitForTermination() async {
    signal(SIGINT, SIG_IGN)
    signal(SIGTERM, SIG_IGN)
    let (stream, continuation) = AsyncStream.makeStream(of: Int32.self)
    let sources = [SIGINT, SIGTERM].map { number in
        let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
        source.setEventHandler { continuation.yield(number) }
        source.resume()
        return source
    }
    for await _ in stream { break }
    sources.forEach { $0.cancel() }
}
