import ArgumentParser
import Foundation
import Hummingbird
import Logging
import NottyCenter
import NottyCore
import NottyServer
import NottyStore
import NottySync
import Synchronization

struct Demo: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Try notty with no setup: an embedded service, a demo user and live notifications.",
        discussion: """
            Starts a service on 127.0.0.1 with a SQLite store in a temporary folder (or --data),
            publishes a realistic set of notifications and opens the notification center; a new
            notification arrives every 20 s or so. In a second terminal, `notty demo --join`
            signs in a second device: dismiss on one, watch it go on the other.
            """)

    @Option(help: ArgumentHelp("Keep the demo's files here instead of a temporary folder.", valueName: "dir")) var data: String?
    @Flag(help: "Join the demo running in another terminal as a second device.") var join = false
    @Option(help: ArgumentHelp("Seconds between new notifications (0: none).", valueName: "seconds")) var every: Int = 20

    /// Where a running demo says how to join it.
    static var stateFile: String {
        let dir = ProcessInfo.processInfo.environment["XDG_RUNTIME_DIR"].flatMap { $0.isEmpty ? nil : $0 } ?? NSTemporaryDirectory()
        return (dir as NSString).appendingPathComponent("notty-demo-\(getuid()).json")
    }

    func run() async throws {
        try await reportingErrors {
            if join { try await joinDemo() } else { try await runDemo() }
        }
    }

    private func runDemo() async throws {
        let script = try DemoScript.load()
        let directory = data ?? (NSTemporaryDirectory() as NSString).appendingPathComponent("notty-demo-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { if data == nil { try? FileManager.default.removeItem(atPath: directory) } }

        // The embedded service, quiet (its logs would draw over the terminal UI).
        let clock = DemoClock()
        LogLines.bootstrap()
        var logger = Logger(label: "notty.demo")
        logger.logLevel = .critical
        var config = ServiceConfig()
        config.port = 0
        config.bcryptCost = 8
        config.pollInterval = 5
        let service = NotificationService(
            storage: try SQLiteStorage(path: directory + "/server.sqlite"), config: config, clock: clock, logger: logger)
        let portBox = Mutex<Int?>(nil)
        let app = try ServerApplication.build(service: service) { port in portBox.withLock { $0 = port } }
        let server = Task { try await app.runService(gracefulShutdownSignals: []) }
        defer { server.cancel() }
        var port: Int?
        for _ in 0..<200 where port == nil {
            try await Task.sleep(for: .milliseconds(25))
            port = portBox.withLock { $0 }
        }
        guard let port else { throw CLIError("the demo service did not start") }
        let url = "http://127.0.0.1:\(port)"

        // The demo user, apps and history.
        let password = UUID().uuidString
        let user = try await service.addUser(name: "demo", password: password, displayName: "Demo User")
        let publisher = try await DemoPublisher(service: service, userId: user.id, apps: script.apps, clock: clock)
        for item in script.initial.reversed() { try await publisher.publish(item) }

        // Tell `notty demo --join` how to join, then sign this terminal in as the first device.
        let state = JSONValue.object(["url": .string(url), "user": .string("demo"), "password": .string(password), "dir": .string(directory), "pid": .number(Double(getpid()))])
        if !FileManager.default.createFile(atPath: Self.stateFile, contents: Data(state.jsonText.utf8), attributes: [.posixPermissions: 0o600]) {
            warn("cannot write \(Self.stateFile): notty demo --join will not find this demo")
        }
        defer { try? FileManager.default.removeItem(atPath: Self.stateFile) }
        let device = try await signIn(url: url, password: password, home: directory + "/device-1", name: "demo device 1")

        let ticker = Task {
            guard every > 0 else { return }
            var index = 0
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(Double(every)))
                guard !Task.isCancelled, !script.later.isEmpty else { break }
                try? await publisher.publish(script.later[index % script.later.count])
                index += 1
            }
        }
        defer { ticker.cancel() }
        try await openCenter(device)
    }

    private func joinDemo() async throws {
        guard let data = FileManager.default.contents(atPath: Self.stateFile),
              case .object(let state)? = JSONParser.parse(data),
              case .string(let url)? = state["url"], case .string(let password)? = state["password"], case .string(let directory)? = state["dir"]
        else {
            throw CLIError("no demo is running: start one with notty demo in another terminal first")
        }
        if case .number(let pid)? = state["pid"], kill(pid_t(pid), 0) != 0 {
            throw CLIError("the demo that wrote \(Self.stateFile) is no longer running: start one with notty demo")
        }
        let number = getpid()
        let device = try await signIn(url: url, password: password, home: directory + "/device-\(number)", name: "demo device \(number)")
        try await openCenter(device)
    }

    /// Signs a device in over HTTP, exactly as `notty login` does, with its files in `home`.
    private func signIn(url: String, password: String, home: String, name: String) async throws -> Device {
        let device = Device(environment: ["NOTTY_HOME": home])
        _ = try await signInDevice(device, server: url, userName: "demo", password: password, deviceName: name)
        return device
    }
}

/// `Resources/demo-notifications.json`: the apps, the initial history and what arrives later.
struct DemoScript: Decodable {
    struct Item: Decodable {
        var app: String
        var group: String?
        var priority: String
        var title: String
        var body: String?
        var minutesAgo: Double?
        var expiresInMinutes: Double?
        var state: String?
    }

    var apps: [String]
    var initial: [Item]
    var later: [Item]

    /// `$NOTTY_DEMO_FILE` when set (to try another script), else the script built into the
    /// binary (a copy of `Resources/demo-notifications.json`), so no file is needed.
    static func load() throws -> DemoScript {
        if let path = ProcessInfo.processInfo.environment["NOTTY_DEMO_FILE"], !path.isEmpty {
            guard let data = FileManager.default.contents(atPath: path) else { throw CLIError("cannot read NOTTY_DEMO_FILE \(path)") }
            do {
                return try JSONDecoder().decode(DemoScript.self, from: data)
            } catch {
                throw CLIError("\(path) is not a valid demo script: \(error)")
            }
        }
        do {
            return try JSONDecoder().decode(DemoScript.self, from: Data(embeddedDemoScript.utf8))
        } catch {
            throw CLIError("the built-in demo script is broken (\(error)): set NOTTY_DEMO_FILE to a copy of Resources/demo-notifications.json")
        }
    }
}

/// The service's clock, which the demo can set back while it publishes its history, so that
/// notifications have realistic ages.
final class DemoClock: ServiceClock {
    private let offset = Mutex<TimeInterval>(0)
    func now() -> Date { Date().addingTimeInterval(offset.withLock { $0 }) }
    func backdated<T>(by seconds: TimeInterval, _ body: () async throws -> T) async rethrows -> T {
        offset.withLock { $0 = -seconds }
        defer { offset.withLock { $0 = 0 } }
        return try await body()
    }
}

/// Publishes demo notifications through the service's own publishing path (apps, tokens,
/// subscriptions, validation), then applies their scripted state as the user would.
struct DemoPublisher: Sendable {
    let service: NotificationService
    let userId: String
    let clock: DemoClock
    let apps: [String: (app: AppRecord, uns: String)]

    init(service: NotificationService, userId: String, apps names: [String], clock: DemoClock) async throws {
        self.service = service
        self.userId = userId
        self.clock = clock
        var apps: [String: (AppRecord, String)] = [:]
        for name in names {
            let (clientId, secret) = try await service.addApp(hostName: name)
            let token = try await service.token(form: ["grant_type": "client_credentials", "client_id": clientId, "client_secret": secret])
            let app = try await service.authenticateApp(bearer: token.access_token)
            let body = JSONValue.object(["targetHostName": .string(name), "deviceName": .string("demo app server")]).jsonText
            let uns = try await service.createSubscription(userId: userId, body: Data(body.utf8)).userNotificationSubscriptionId
            apps[name] = (app, uns)
        }
        self.apps = apps
    }

    func publish(_ item: DemoScript.Item) async throws {
        guard let (app, uns) = apps[item.app] else { return }
        let ago = (item.minutesAgo ?? 0) * 60
        var visual: [String: JSONValue] = ["title": .string(item.title)]
        if let body = item.body { visual["body"] = .string(body) }
        var object: [String: JSONValue] = [
            "appNotificationId": .string(UUID().uuidString.lowercased()),
            "priority": .string(item.priority),
            "payload": .object(["visualContent": .object(visual)]),
        ]
        if let group = item.group { object["groupName"] = .string(group) }
        if let minutes = item.expiresInMinutes {
            object["expirationDateTime"] = .string(ISOTime.format(Date().addingTimeInterval(minutes * 60)))
        }
        try await clock.backdated(by: ago) {
            let stored = try await service.publish(app: app, unsId: uns, body: Data(JSONValue.object(object).jsonText.utf8))
            let change: StateChange?
            switch item.state {
            case "read": change = StateChange(readState: .read)
            case "activated": change = StateChange(readState: .read, userActionState: .activated)
            case "dismissed": change = StateChange(userActionState: .dismissed)
            case "snoozed": change = StateChange(userActionState: .snoozed, snoozedUntil: Date().addingTimeInterval(3 * 3600))
            default: change = nil
            }
            if let change {
                _ = try await service.mutate(userId: userId, [Mutation(id: stored.id, change: change)])
            }
        }
    }
}
