import ArgumentParser
import Foundation
import NottyCenter
import NottyCommandLine

struct TUI: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tui",
        abstract: "The terminal notification center (what plain `notty` runs).",
        discussion: """
            Views: 1 Unread, 2 Read, 3 Activated, 4 Dismissed, 5 Snoozed, 6 All (Tab cycles). \
            Keys: j/k move, Enter opens (and marks read), a activate, o open the link, d dismiss, \
            r read/unread, s snooze, x delete, Space select, M mark all read, u undo, / search, \
            n/p next or previous unread, R sync now, ? help, q quit. Changes from your other \
            devices appear by themselves. NO_COLOR=1 turns colour off.

            config.toml sets the view it opens on and colour (see notty --help).
            """)

    func run() async throws {
        try await reportingErrors {
            try await openCenter(Device())
        }
    }
}

/// Opens the notification center for a signed-in device.
func openCenter(_ device: Device) async throws {
    guard isatty(STDOUT_FILENO) != 0 else {
        throw CLIError("the notification center needs a terminal; for scripts use notty list, notty poll or notty sync")
    }
    let settings = try device.settings()
    let (client, store, engine) = try await device.session()
    try await Center(store: store, credentials: await client.current, client: client, engine: engine, settings: settings).run()
}
