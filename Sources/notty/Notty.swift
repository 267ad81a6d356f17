import ArgumentParser
import Foundation
import Logging
import NottyCenter
import NottyCore
import NottyServer
import NottyStore
import NottySync

@main
struct Notty: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "notty",
        abstract: "Notifications from your own services, handled once and gone everywhere.",
        discussion: """
            notty serve runs the service: app servers publish to it with the Microsoft
            Graph notifications contract (POST /beta/me/notifications with X-UNS-ID) and
            every device of the user is told of every change.

            Get started on one machine:
              notty admin user add alice            (type a password, then Enter)
              notty admin app add ci.example.com    (prints client_id and client_secret)
              notty serve                           (listens on 127.0.0.1:8787)

            Files: $XDG_CONFIG_HOME/notty/config.toml (settings) and credentials.json,
            $XDG_DATA_HOME/notty/ (the local store); NOTTY_HOME=DIR puts them all in DIR.
            config.toml, every key optional (a flag wins over its setting):

            \(ClientSettings.template.split(separator: "\n", omittingEmptySubsequences: false).dropFirst(2).map { $0.isEmpty ? "" : "  " + $0 }.joined(separator: "\n"))
            """,
        version: Notty.version,
        subcommands: [
            TUI.self, Demo.self, Login.self, Logout.self, Subscribe.self, Devices.self, Sync.self, Status.self, List.self, Show.self,
            Read.self, Unread.self, Activate.self, Dismiss.self, Snooze.self, Delete.self, Open.self,
            Poll.self, Push.self, Publish.self, Serve.self, Admin.self,
        ],
        defaultSubcommand: TUI.self)

    /// What `notty --version` prints.
    static let version = "0.1.0"

    /// Runs the command; invalid input of any kind (ArgumentParser's own checks included)
    /// ends with one line on stderr and a non-zero exit, never a usage dump. `--help` and
    /// `--version` print as usual.
    static func main() async {
        do {
            var command = try parseAsRoot()
            if var asyncCommand = command as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            let code = exitCode(for: error)
            // Help and version go to stdout; an ExitCode was reported by whoever threw it.
            if code == .success || error is ExitCode { exit(withError: error) }
            let text = message(for: error).split(whereSeparator: \.isNewline)
                .map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }.joined(separator: " ")
            warn("\(text.isEmpty ? "invalid input" : text) (see \(commandPath(CommandLine.arguments.dropFirst())) --help)")
            Foundation.exit(code.rawValue)
        }
    }

    /// `notty admin user` for `admin user add --bad`: the subcommands named on the command line.
    static func commandPath(_ arguments: ArraySlice<String>) -> String {
        var path = ["notty"]
        var commands: [ParsableCommand.Type] = configuration.subcommands
        for argument in arguments {
            guard let next = commands.first(where: { $0._commandName == argument }) else { break }
            path.append(argument)
            commands = next.configuration.subcommands
        }
        return path.joined(separator: " ")
    }
}

/// Where the service's SQLite file lives unless `--db` says otherwise:
/// `$NOTTY_HOME/server.sqlite`, else `$XDG_DATA_HOME/notty/server.sqlite`
/// (`~/.local/share/notty/server.sqlite`).
enum Paths {
    static var defaultServerDB: String { ClientPaths().serverDatabase }
}

/// Options shared by every command that opens the service's storage.
struct StorageOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("The service's SQLite file.", discussion: "Default: $NOTTY_HOME/server.sqlite, else $XDG_DATA_HOME/notty/server.sqlite.", valueName: "path"))
    var db: String?

    @Option(name: .long, help: ArgumentHelp(
        "Keep everything in PostgreSQL instead of SQLite (several instances may share it).",
        discussion: "postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?sslmode=disable|prefer|require]. Default: $NOTTY_POSTGRES_URL when set.",
        valueName: "url"))
    var postgres: String?

    func validate() throws {
        if db != nil && postgresURL != nil { throw ArgumentParser.ValidationError("--db and --postgres are two different stores: give one") }
        if let postgresURL {
            do { _ = try PostgresURL(postgresURL) } catch { throw ArgumentParser.ValidationError("--postgres: \(error)") }
        }
    }

    private var postgresURL: String? {
        postgres ?? (db == nil ? ProcessInfo.processInfo.environment["NOTTY_POSTGRES_URL"].flatMap { $0.isEmpty ? nil : $0 } : nil)
    }

    /// Where the storage is, for logs (no password).
    var place: String {
        if let postgresURL, let url = try? PostgresURL(postgresURL) { return url.description }
        return db ?? Paths.defaultServerDB
    }

    func open(logger: Logger = Logger(label: "notty.storage")) async throws -> any NotificationStorage {
        if let postgresURL {
            let url = try PostgresURL(postgresURL)
            do {
                return try await PostgresStorage.connect(url: url, logger: logger)
            } catch {
                throw CLIError("cannot use PostgreSQL at \(url): \(error). Is it running, and may \(url.user) connect to \(url.database)? Check --postgres.")
            }
        }
        let path = db ?? Paths.defaultServerDB
        do {
            return try SQLiteStorage(path: path)
        } catch {
            throw CLIError("cannot open the database at \(path): \(error). Check the path and its permissions, or pass --db PATH.")
        }
    }

    /// The service over ``open(logger:)``, for administration.
    func service() async throws -> NotificationService {
        NotificationService(storage: try await open())
    }
}

/// A failure reported as one line on stderr with a non-zero exit.
struct CLIError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Turns any failure into one clear line on stderr and exit 1, never a stack trace.
func reportingErrors(_ body: () async throws -> Void) async throws {
    do {
        try await body()
    } catch let error as ExitCode {
        throw error
    } catch {
        let line: String
        switch error {
        case let error as APIError: line = error.message
        case let error as CustomStringConvertible: line = error.description
        default: line = String(describing: error)
        }
        warn(line)
        throw ExitCode(1)
    }
}

/// Parses `65536`, `64k`, `64KiB`, `1m`, `1MiB` (k and m are 1024 and 1024²) for ArgumentParser.
struct ByteSizeArgument: ExpressibleByArgument {
    var bytes: Int
    init?(argument: String) {
        let text = argument.lowercased()
        let units: [(String, Int)] = [("kib", 1 << 10), ("mib", 1 << 20), ("kb", 1 << 10), ("mb", 1 << 20), ("k", 1 << 10), ("m", 1 << 20), ("b", 1), ("", 1)]
        guard let (suffix, scale) = units.first(where: { text.hasSuffix($0.0) }),
              let number = Int(text.dropLast(suffix.count)), number > 0, number <= Int(Int32.max) / scale
        else { return nil }
        bytes = number * scale
    }
}

/// Parses `90s`, `15m`, `4h`, `7d` for ArgumentParser.
struct DurationArgument: ExpressibleByArgument {
    var seconds: Int
    init?(argument: String) {
        guard let seconds = DurationText.seconds(argument) else { return nil }
        self.seconds = seconds
    }
}
