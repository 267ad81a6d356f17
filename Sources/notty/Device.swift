import ArgumentParser
import Foundation
import NottyCenter
import NottyCommandLine
import NottyCore
import NottyStore
import NottySync

/// This device's files and the objects built on them, for the client commands.
struct Device {
    let paths: ClientPaths
    var credentialsFile: CredentialsFile { CredentialsFile(path: paths.credentials) }

    init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        paths = ClientPaths(environment: environment)
    }

    /// The local store (created on first use), opened off the pool.
    func store() async throws -> LocalStore {
        do {
            return try await LocalStore.open(path: paths.store)
        } catch StoreError.diskFull(let directory) {
            throw CLIError("cannot open the local store at \(paths.store): no space left on device (\(directory)). Free some space and try again.")
        } catch let error as StoreError {
            throw error  // damaged, or of a newer build: it says what to run
        } catch {
            throw CLIError("cannot open the local store at \(paths.store): \(error). Check its permissions, or set NOTTY_HOME.")
        }
    }

    /// The settings in config.toml (defaults when there is none).
    func settings() throws -> ClientSettings {
        try ClientSettings.load(path: paths.settings)
    }

    func credentials() throws -> Credentials {
        guard let credentials = try credentialsFile.load() else {
            throw CLIError("not signed in on this device: run notty login URL --user NAME first")
        }
        return credentials
    }

    /// The signed-in client, the store (bound to the account) and a sync engine over HTTP.
    func session(timeout: Int64 = 15) async throws -> (client: ServiceClient, store: LocalStore, engine: SyncEngine) {
        let credentials = try credentials()
        let client = ServiceClient(file: credentialsFile, credentials: credentials, timeout: .seconds(timeout))
        let store = try await store()
        try await store.perform { try $0.bind(account: credentials.account) }
        return (client, store, SyncEngine(store: store, transport: HTTPTransport(client: client)))
    }
}

/// `--all --view V` or ids: which notifications a state command acts on.
struct Targets: ParsableArguments {
    @Argument(help: ArgumentHelp("Notification ids, or unique prefixes of at least 6 characters.", valueName: "id"))
    var ids: [String] = []
    @Flag(help: "Act on every notification in --view.") var all = false
    @Option(help: "With --all: unread, read, activated, dismissed, snoozed or all.") var view: ViewArgument?

    func validate() throws {
        if all && !ids.isEmpty { throw ArgumentParser.ValidationError("give ids or --all --view V, not both") }
        if !all && ids.isEmpty { throw ArgumentParser.ValidationError("give at least one id (see notty list), or --all --view V") }
        if all && view == nil { throw ArgumentParser.ValidationError("--all needs --view V (unread, read, activated, dismissed, snoozed or all)") }
        if !all && view != nil { throw ArgumentParser.ValidationError("--view goes with --all") }
    }

    @available(*, noasync, message: "blocks on the store: call it inside `await store.perform { … }`")
    func resolve(in store: LocalStore) throws -> [String] {
        if all, let view { return try store.ids(view: view.view) }
        var seen = Set<String>()
        return try ids.map { try store.resolve($0) }.filter { seen.insert($0).inserted }
    }
}

/// A view name for ArgumentParser.
struct ViewArgument: ExpressibleByArgument {
    var view: NotificationView
    init?(argument: String) {
        guard let view = NotificationView(name: argument) else { return nil }
        self.view = view
    }
    static var allValueStrings: [String] { NotificationView.allCases.map(\.rawValue) }
    var defaultValueDescription: String { view.rawValue }
}
