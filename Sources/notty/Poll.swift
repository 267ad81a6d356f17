import ArgumentParser
import Foundation
import NottyCommandLine
import NottyCore
import NottyPOSIX
import NottyPoll
import NottyStore
import NottySync
import Synchronization

struct Poll: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "poll",
        abstract: "Keep the local store in sync in the background and report new notifications.",
        discussion: """
            Prints each notification that arrives in Unread while it runs as one JSON line \
            on stdout (the service's field names); one already read, dismissed or snoozed \
            on another device when it arrives is not reported. --exec runs a command for \
            each (NOTTY_ID, NOTTY_TITLE, NOTTY_BODY, NOTTY_PRIORITY, NOTTY_APP, \
            NOTTY_GROUP, NOTTY_URL set) beside syncing; while quiet (notty quiet) or \
            muted it runs for none, and when quiet ends it runs once for what is still \
            Unread (NOTTY_SUMMARY=1, NOTTY_COUNT, NOTTY_TITLE "12 notifications while \
            quiet", NOTTY_IDS), as --desktop shows one popup: at most 4 at once, the rest queued \
            in order, each stopped after --exec-timeout. --on-change runs a command (same \
            variables, and NOTTY_STATE: read, unread, activated, dismissed, snoozed or \
            deleted) when a notification known here changes state on any device, once per \
            notification and round. --desktop shows desktop popups that close by \
            themselves when the notification is handled on any device; closing one \
            dismisses it everywhere, clicking it activates it. Polls at the service's \
            X-Poll-Interval (or --interval when longer), backing off while the service is \
            away; --live listens on the doorbell instead and falls back to polling. \
            Defaults come from config.toml (see notty --help). SIGINT or SIGTERM stops it.

              notty poll --live --desktop
              notty poll --live --exec 'echo "$NOTTY_TITLE" >> ~/notty.log'
              notty poll --live --on-change 'echo "$NOTTY_ID $NOTTY_STATE" >> ~/notty.log'
              notty poll --once          # one sync, print what is new, exit
            """)

    @Option(
        help: ArgumentHelp(
            "Seconds between polls (never more often than the service allows; default: poll.interval in config.toml).", valueName: "seconds"))
    var interval: Int?
    @Option(help: ArgumentHelp("A shell command to run for each new notification (default: poll.exec in config.toml).", valueName: "command"))
    var exec: String?
    @Option(
        name: .customLong("on-change"),
        help: ArgumentHelp(
            "A shell command to run when a notification known here changes state on any device, with NOTTY_STATE set (default: poll.on_change in config.toml).",
            valueName: "command")) var onChange: String?
    @Option(
        name: .customLong("exec-timeout"),
        help: ArgumentHelp("Stop an --exec command that runs longer than this (default 60s).", valueName: "duration")) var execTimeout:
        DurationArgument?
    @Flag(help: "Sync once, report, and exit.") var once = false
    @Flag(
        inversion: .prefixedNo,
        help: "Use the doorbell WebSocket, falling back to polling (default: poll.live in config.toml, unless --interval is given).") var live: Bool?
    @Flag(
        inversion: .prefixedNo,
        help: "Desktop popups (org.freedesktop.Notifications on the session D-Bus) that follow every device (default: poll.desktop in config.toml).")
    var desktop: Bool?

    func validate() throws {
        if let interval, interval < 1 { throw ArgumentParser.ValidationError("--interval must be at least 1 second") }
        if once && live == true { throw ArgumentParser.ValidationError("--once and --live do not go together") }
    }

    func run() async throws {
        try await reportingErrors {
            let device = Device()
            let settings = try device.settings()
            let (client, store, engine) = try await device.session()
            let runner = CommandRunner(timeout: execTimeout?.seconds ?? 60)
            let exec = exec ?? settings.pollExec, onChange = self.onChange ?? settings.pollOnChange
            if once {
                let reporter = PollReporter(store: store, exec: exec, onChange: onChange, jobs: runner, popups: nil)
                await reporter.begin()
                try await engine.sync()
                await reporter.reportOnce()
                await reporter.end()
                await runner.waitUntilIdle()
                return
            }
            // A flag wins over the file: --interval (or --no-live) asks for polling.
            let useLive = live ?? (interval == nil && settings.pollLive)
            let mode: LiveSync.Mode = useLive ? .live : .polling(minimumInterval: interval ?? settings.pollInterval ?? 1)
            // A popup's change is sent at once: the sync engine is made below, so it is looked up then.
            let engineBox = Mutex<LiveSync?>(nil)
            let popups =
                (desktop ?? settings.pollDesktop)
                ? await DesktopPopups.start(
                    store: store, storm: settings.pollStorm,
                    press: { id, number in
                        // A popup's action button (PROTOCOL.md §12): the service runs it.
                        do {
                            let result = try await client.pressAction(id: id, action: number)
                            return "\(result.label): \(result.line(now: Date()))"
                        } catch {
                            return "action \(number): \(error)"
                        }
                    }, changed: { if let sync = engineBox.withLock({ $0 }) { Task { await sync.requestSync() } } }) : nil
            let reporter = PollReporter(store: store, exec: exec, onChange: onChange, jobs: runner, popups: popups)
            await reporter.begin()
            let liveSync = LiveSync(engine: engine, client: client, mode: mode) { event in
                switch event {
                case .connection(let state): warn("connection: \(state.words { ISOTime.format($0) })")
                case .failed(let error): warn(error.description)
                case .synced:
                    Task {
                        await reporter.report()  // at once: popups close within milliseconds
                        // Started and synced once: the code only start-up needed is given back.
                        ResidentMemory.releaseStartupCodeOnce()
                    }
                }
            }
            engineBox.withLock { $0 = liveSync }
            let task = Task { await liveSync.run() }
            // The store's one watcher: whatever else wrote (the center, another process).
            let watcher = Task {
                await popups?.storeChanged(now: Date())
                for await _ in store.changes() { await reporter.report() }
            }
            await waitForTermination()
            watcher.cancel()
            task.cancel()
            await task.value
            await reporter.end()
            await popups?.stop()
            runner.stop()
        }
    }
}

/// Returns when SIGINT or SIGTERM arrives (through the one signal helper, `Signals.terminationSignals`;
/// a second signal after that has its default action again).
func waitForTermination() async {
    for await _ in Signals.terminationSignals([SIGINT, SIGTERM]) { break }
}
