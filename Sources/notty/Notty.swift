import ArgumentParser
import Foundation
import NottyCenter
import NottyCommandLine
import NottyCore
import NottyPOSIX
import NottyStore
import NottySync

struct Notty: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "notty",
        abstract: "Notifications from your own services, handled once and gone everywhere.",
        discussion: """
            notty serve runs the service: app servers publish to it with the Microsoft \
            Graph notifications contract (POST /beta/me/notifications with X-UNS-ID) and \
            every device of the user is told of every change.

            Get started on one machine:
              notty admin user add alice            (type a password, then Enter)
              notty admin app add ci.example.com    (prints client_id and client_secret)
              notty serve                           (listens on 127.0.0.1:8787)

            Files: $XDG_CONFIG_HOME/notty/config.toml (settings) and credentials.json, \
            $XDG_DATA_HOME/notty/ (the local store); NOTTY_HOME=DIR puts them all in DIR. \
            config.toml, every key optional (a flag wins over its setting):

            \(ClientSettings.template.split(separator: "\n", omittingEmptySubsequences: false).dropFirst(2).map { $0.isEmpty ? "" : "  " + $0 }.joined(separator: "\n"))
            """,
        version: nottyVersion,
        subcommands: [
            TUI.self, Demo.self, Login.self, Logout.self, PasswordCommand.self, Subscribe.self, Devices.self, Sync.self, Resync.self, Status.self,
            List.self, Show.self, ViewCommand.self,
            Read.self, Unread.self, Activate.self, Dismiss.self, Snooze.self, Delete.self, Open.self, Quiet.self, Mute.self, Unmute.self,
            Act.self, Escalate.self, TeamCommand.self, OnCallCommand.self, ContactCommand.self, HeartbeatCommand.self, Count.self, Watch.self,
            Poll.self, Push.self,
            Publish.self, Serve.self, Admin.self, IcuCheckCommand.self,
        ],
        defaultSubcommand: TUI.self)

    /// Every command but ``Main``'s quick ones. `notty serve` and `notty admin` (and `notty
    /// help serve`) are `notty-server`'s: handed over whole, before any parsing here. Everything
    /// else is parsed here; invalid input of any kind ends with one line on stderr and a
    /// non-zero exit (``runRoot(_:)``).
    static func start(_ arguments: [String]) async {
        // The loader is done with its relocation and symbol tables (3 to 4 MiB resident).
        ResidentMemory.releaseLoaderTables()
        // A damaged store is met wherever it is first read: each command then says what to run.
        errorExplanation.withLock { explain in
            explain = { error in StoreError.damage(in: error, path: Device().paths.store)?.description }
        }
        if arguments.first == "count", let (view, format) = Count.quick(Array(arguments.dropFirst())) {
            // A store to open fully first: to migrate, or to say what is wrong with it (``Main``
            // answered every other quick count).
            do {
                try await Count.print(view: view, format: format, quick: false)
            } catch {
                warn(explained(error))
                Foundation.exit(1)
            }
            return
        }
        if arguments.isEmpty || arguments == ["tui"] {
            // The center, the usual start, takes no option: run it without building
            // ArgumentParser's tree of every command (a protocol-conformance lookup, a scan of
            // the binary's ~9,700 conformance records, for each type it meets the first time).
            do {
                try await TUI().run()
            } catch let code as ExitCode {
                Foundation.exit(code.rawValue)
            } catch {
                warn(explained(error))
                Foundation.exit(1)
            }
            return
        }
        await runRoot(Self.self)
    }
}
