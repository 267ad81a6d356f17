import Dispatch
import Foundation
import NottyCommandLine
import NottyPOSIX
import NottyStore

/// The program's start. What runs before every prompt and in status bars (`notty count`) and
/// `notty --version` are answered here on the main thread, before anything else is set up:
/// no Swift concurrency (its threads), no ArgumentParser tree (a scan of the binary's
/// conformance records for each type it meets), no tidying after the loader. `notty serve`
/// and `notty admin` are handed to `notty-server` from here too. Everything else runs as
/// Swift's async main would run it: a task on the main actor while the main queue is drained.
@main
enum Main {
    static func main() {
        // What notty makes (the store, credentials) is its user's alone, whatever the umask.
        umask(0o077)
        let arguments = Array(CommandLine.arguments.dropFirst())
        if arguments == ["--version"] {
            print(nottyVersion)
            exit(0)
        }
        if arguments.first == "count", let (view, format) = Count.quick(Array(arguments.dropFirst())) {
            Count.printAndExit(view: view, format: format)  // returns when the store is to be opened fully first
        }
        let named = arguments.first == "help" ? arguments.dropFirst().first : arguments.first
        if let named, ServerCommand.names.contains(named) { ServerProgram.exec(arguments) }
        // Before the first task: the arenas are shared by the threads it starts.
        ResidentMemory.shareArenas()
        Task { @MainActor in
            await Notty.start(arguments)
            exit(0)
        }
        dispatchMain()
    }
}
