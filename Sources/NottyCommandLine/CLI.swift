import ArgumentParser
import Foundation
import NottyCore
import Synchronization

// What both of notty's programs share: `notty` (the device: the center, sync, poll, the
// scriptable commands) and `notty-server` (the service: `notty serve`, `notty admin`, the
// demo's embedded service), which `notty` runs for those commands. Keeping the service's
// libraries out of `notty` keeps its start-up and memory small (docs/ARCHITECTURE.md).

/// What `notty --version` prints (both programs).
public let nottyVersion = "0.1.0"

/// The subcommands that `notty-server` runs: `notty` hands them over whole (`exec`).
public enum ServerCommand {
    public static let names: Set<String> = ["serve", "admin"]
    public static let serveAbstract = "Run the notty service."
    public static let adminAbstract = "Manage users and apps in the service's storage (on the service's machine)."
}

/// A failure reported as one line on stderr with a non-zero exit.
public struct CLIError: Error, CustomStringConvertible, Sendable {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// What a program says of an error that carries no advice of its own, set once at its start:
/// `notty` turns a damaged local store (an SQLite error met anywhere) into what to run.
public let errorExplanation = Mutex<(@Sendable (any Error) -> String?)?>(nil)

/// The line a failure is reported with: ``errorExplanation``'s, else its description.
public func explained(_ error: any Error) -> String {
    errorExplanation.withLock { $0 }?(error) ?? String(describing: error)  // CLIError, ServiceError, … describe themselves
}

/// Turns any failure into one clear line on stderr and exit 1, never a stack trace.
public func reportingErrors(_ body: () async throws -> Void) async throws {
    do {
        try await body()
    } catch let error as ExitCode {
        throw error
    } catch {
        warn(explained(error))
        throw ExitCode(1)
    }
}

/// Runs a root command; invalid input of any kind (ArgumentParser's own checks included) ends
/// with one line on stderr and a non-zero exit, never a usage dump. `--help` and `--version`
/// print as usual.
public func runRoot<Root: ParsableCommand>(_ root: Root.Type, arguments: [String]? = nil) async {
    do {
        var command = try root.parseAsRoot(arguments)
        if var asyncCommand = command as? AsyncParsableCommand {
            try await asyncCommand.run()
        } else {
            try command.run()
        }
    } catch {
        let code = root.exitCode(for: error)
        // Help and version go to stdout; an ExitCode was reported by whoever threw it.
        if code == .success || error is ExitCode { root.exit(withError: error) }
        let text = root.message(for: error).split(whereSeparator: \.isNewline)
            .map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }.joined(separator: " ")
        warn("\(text.isEmpty ? "invalid input" : text) (see \(commandPath(root, CommandLine.arguments.dropFirst())) --help)")
        Foundation.exit(code.rawValue)
    }
}

/// `notty admin user` for `admin user add --bad`: the subcommands named on the command line.
func commandPath(_ root: ParsableCommand.Type, _ arguments: ArraySlice<String>) -> String {
    var path = ["notty"]
    var commands: [ParsableCommand.Type] = root.configuration.subcommands
    for argument in arguments {
        guard let next = commands.first(where: { $0._commandName == argument }) else { break }
        path.append(argument)
        commands = next.configuration.subcommands
    }
    return path.joined(separator: " ")
}

/// Parses `90s`, `15m`, `4h`, `7d` for ArgumentParser.
public struct DurationArgument: ExpressibleByArgument, Sendable {
    public var seconds: Int
    public init?(argument: String) {
        guard let seconds = DurationText.seconds(argument) else { return nil }
        self.seconds = seconds
    }
}

/// A wait that may be none: an escalation step's `--after` (a team's step may page at once,
/// `--after 0s`); every other duration is at least a second.
public struct DelayArgument: ExpressibleByArgument, Sendable {
    public var seconds: Int
    public init?(argument: String) {
        if ["0", "0s", "0m", "0h"].contains(argument.trimmingCharacters(in: .whitespaces).lowercased()) {
            seconds = 0
            return
        }
        guard let seconds = DurationText.seconds(argument) else { return nil }
        self.seconds = seconds
    }
}

/// Reads a password: without echo from a terminal, else the first line of standard input.
public func readPassword(prompt: String) -> String {
    if isatty(STDIN_FILENO) != 0, let pointer = getpass(prompt) {
        return String(cString: pointer)
    }
    return readLine(strippingNewline: true) ?? ""
}
