import ArgumentParser
import Foundation
import Logging
import NottyCommandLine
import NottyComposition
import NottyCore
import NottyHTTP
import NottySecrets
import NottyService
import NottyServicePostgres
import NottyServiceSQLite

/// `notty-server`: the service's side of notty. People run it as `notty serve` and `notty admin`
/// (the `notty` beside it hands those commands over whole); `notty demo` starts its embedded
/// service as `notty-server demo-service`.
@main
struct NottyServerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "notty",
        abstract: "The notty service and its administration (notty serve, notty admin).",
        discussion: """
            This program is what `notty serve` and `notty admin` run: install it beside \
            notty. See notty --help for everything else.
            """,
        version: nottyVersion,
        subcommands: [Serve.self, Admin.self, DemoService.self, HealthCheck.self, IcuCheckCommand.self])

    static func main() async {
        // The store, its backups and the key are the service's user's alone, whatever the umask.
        FilePrivacy.restrictNewFiles()
        let arguments: [String]
        do {
            arguments = try ServeConfigFile.expand(Array(CommandLine.arguments.dropFirst()))
        } catch {
            warn("\(error)")
            Foundation.exit(1)
        }
        await runRoot(Self.self, arguments: arguments)
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
    @Option(
        name: .long,
        help: ArgumentHelp(
            "The service's SQLite file.", discussion: "Default: $NOTTY_HOME/server.sqlite, else $XDG_DATA_HOME/notty/server.sqlite.",
            valueName: "path"))
    var db: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Keep everything in PostgreSQL instead of SQLite (several instances may share it).",
            discussion: "postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?sslmode=disable|prefer|require]. Default: $NOTTY_POSTGRES_URL when set.",
            valueName: "url"))
    var postgres: String?

    @Option(
        name: .customLong("secret-key-file"),
        help: ArgumentHelp(
            "The key that seals the secrets users hand the service (action headers, target credentials, webhook secrets).",
            discussion:
                "Default: $NOTTY_SECRET_KEY_FILE, else secret.key beside the SQLite store (made at first start, 0600). With PostgreSQL, give every instance the same file. Back it up apart from the store.",
            valueName: "file"))
    var secretKeyFile: String?

    /// The key file: `--secret-key-file`, `NOTTY_SECRET_KEY_FILE`, else `secret.key` beside
    /// the SQLite store (for PostgreSQL, in the folder the SQLite store would be in).
    var keyPath: String {
        if let secretKeyFile { return secretKeyFile }
        if let named = ProcessInfo.processInfo.environment["NOTTY_SECRET_KEY_FILE"], !named.isEmpty { return named }
        return ((sqlitePath ?? Paths.defaultServerDB) as NSString).deletingLastPathComponent + "/secret.key"
    }

    /// The key file opened and checked against `store` (made when the store has none yet).
    func secrets(_ store: any SecretStorage, forget: Bool = false) async throws -> SecretBox {
        try await SecretKeyFile.open(keyPath, storage: store, forget: forget, warning: warn)
    }

    func validate() throws {
        if db != nil && postgresURL != nil { throw ArgumentParser.ValidationError("--db and --postgres are two different stores: give one") }
        if let postgresURL {
            do { _ = try PostgresURL(postgresURL) } catch { throw ArgumentParser.ValidationError("--postgres: \(error)") }
        }
    }

    private var postgresURL: String? {
        postgres ?? (db == nil ? ProcessInfo.processInfo.environment["NOTTY_POSTGRES_URL"].flatMap { $0.isEmpty ? nil : $0 } : nil)
    }

    /// The SQLite file, when the storage is one (nil for PostgreSQL).
    var sqlitePath: String? { postgresURL == nil ? db ?? Paths.defaultServerDB : nil }

    /// Where the storage is, for logs (no password).
    var place: String {
        if let postgresURL, let url = try? PostgresURL(postgresURL) { return url.description }
        return db ?? Paths.defaultServerDB
    }

    func open(logger: Logger = Logger(label: "notty.storage")) async throws -> any ServiceStorage {
        if let postgresURL {
            let url = try PostgresURL(postgresURL)
            do {
                return try await PostgresStorage.connect(url: url, logger: logger)
            } catch let newer as NewerStoreError {
                throw CLIError(newer.description)
            } catch {
                throw CLIError(
                    "cannot use PostgreSQL at \(url): \(error). Is it running, and may \(url.user) connect to \(url.database)? Check --postgres.")
            }
        }
        let path = db ?? Paths.defaultServerDB
        if let advice = FilePrivacy.advice(path, store: true) { warn(advice) }
        do {
            return try SQLiteStorage(path: path)
        } catch let newer as NewerStoreError {
            throw CLIError(newer.description)
        } catch {
            throw CLIError("cannot open the database at \(path): \(error). Check the path and its permissions, or pass --db PATH.")
        }
    }

    /// The service over ``open(logger:)``, for administration.
    func service() async throws -> NotificationService {
        let store = try await open()
        return NotificationService(storage: store, secrets: try await secrets(store))
    }
}

/// Parses `65536`, `64k`, `64KiB`, `1m`, `1MiB` (k and m are 1024 and 1024²) for ArgumentParser.
struct ByteSizeArgument: ExpressibleByArgument {
    var bytes: Int
    init?(argument: String) {
        let text = argument.lowercased()
        let units: [(String, Int)] = [
            ("kib", 1 << 10), ("mib", 1 << 20), ("kb", 1 << 10), ("mb", 1 << 20), ("k", 1 << 10), ("m", 1 << 20), ("b", 1), ("", 1),
        ]
        guard let (suffix, scale) = units.first(where: { text.hasSuffix($0.0) }),
            let number = Int(text.dropLast(suffix.count)), number > 0, number <= Int(Int32.max) / scale
        else { return nil }
        bytes = number * scale
    }
}
