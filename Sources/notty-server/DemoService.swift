import ArgumentParser
import Foundation
import Hummingbird
import Logging
import NottyCommandLine
import NottyComposition
import NottyCore
import NottyHTTP
import NottyOutbound
import NottyPOSIX
import NottyRecords
import NottyService
import NottyServicePostgres
import NottyServiceSQLite
import Synchronization

/// The service of `notty demo`, which `notty demo` starts as its child: a service on
/// 127.0.0.1 with a SQLite store in `--data`, a demo user with a realistic history, and a new
/// notification every `--every` seconds. When it is ready it prints one JSON line on stdout,
/// `{"url": …, "password": …}`; it stops when its standard input ends (when `notty demo`
/// exits, however it exits).
struct DemoService: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo-service",
        abstract: "The embedded service of notty demo (notty demo runs it).",
        shouldDisplay: false)

    @Option(help: ArgumentHelp("The demo's folder (the service keeps server.sqlite there).", valueName: "dir")) var data: String
    @Option(help: ArgumentHelp("Seconds between new notifications (0: none).", valueName: "seconds")) var every: Int = 20

    func run() async throws {
        try await reportingErrors {
            let script = try DemoScript.load()
            // Quiet: notty demo keeps this program's stderr in a file and shows it only if
            // the service does not start.
            let clock = DemoClock()
            LogLines.bootstrap()
            var logger = Logger(label: "notty.demo")
            logger.logLevel = .critical
            var config = ServiceConfig()
            config.port = 0
            config.bcryptCost = 8
            config.pollInterval = 5
            let store = try SQLiteStorage(path: data + "/server.sqlite")
            let secrets = try await SecretKeyFile.open(data + "/secret.key", storage: store, warning: warn)
            // What the demo's actions and escalation reach: a stand-in CI, Alertmanager and pager
            // on loopback (through the service's outbound policy, as a user's would).
            let target = try await DemoTarget.start()
            defer { target.stop() }
            let service = NotificationService(
                storage: store, config: config, clock: clock, logger: logger, outbound: HTTPClientOutbound(policy: try OutboundPolicy()),
                secrets: secrets)
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

            // The demo user, a teammate (priya, on her phone) in the team ops, apps, an escalation
            // rule (High and unhandled for 5 minutes: the pager), a heartbeat and the history.
            let password = UUID().uuidString
            let user = try await service.admin.addUser(name: "demo", password: password, displayName: "Demo User")
            let priya = try await service.admin.addUser(name: "priya", password: UUID().uuidString, displayName: "Priya")
            let phone = try await service.inbox.createSubscription(
                userId: priya.id, body: Data(#"{"deviceName":"phone","platform":"websocket"}"#.utf8))
            try await service.teams.create(name: "ops", owner: "demo")
            _ = try await service.teams.setMember(team: "ops", by: user.id, body: Data(#"{"user":"priya"}"#.utf8))
            let rule = #"{"name":"pager","after":"5m","targets":["webhook:\#(target.base)/pager"]}"#
            _ = try await service.inbox.addEscalationRule(userId: user.id, EscalationRuleRequest(body: Data(rule.utf8)))
            // The team's nightly export, which never pings its heartbeat: a minute in, "nightly-export:
            // no ping for 1m 6s" arrives (PROTOCOL.md §16.3).
            _ = try await service.heartbeats.add(
                userId: user.id,
                HeartbeatRequest(name: "nightly-export", every: 60, team: "ops", message: "the export to the data warehouse did not check in"),
                baseURL: "http://127.0.0.1:\(port)")
            let publisher = try await DemoPublisher(
                service: service, userId: user.id, teammate: (priya.id, phone.deviceId), apps: script.apps, target: target.base, clock: clock)
            for item in script.initial.reversed() { try await publisher.publish(item) }
            let ready = JSONValue.object(["url": .string("http://127.0.0.1:\(port)"), "password": .string(password)]).jsonText
            FileHandle.standardOutput.write(Data((ready + "\n").utf8))

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
            await standardInputEnds()
        }
    }
}

/// Returns when standard input reaches its end: `notty demo` holds the other end of the pipe,
/// so the kernel closes it when that process ends, even by SIGKILL.
private func standardInputEnds() async {
    _ = try? await offThePool {
        var buffer = [UInt8](repeating: 0, count: 256)
        while true {
            let count = read(STDIN_FILENO, &buffer, buffer.count)
            if count == 0 || (count < 0 && errno != EINTR) { break }
        }
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
        /// `ops`: published to the team (every member's), not to the demo user alone.
        var team: String?
        /// `priya`: the teammate made `state` (on her phone), not the demo user.
        var by: String?
        /// Actions the demo's stand-in servers answer (`path` on them).
        var actions: [Action]?
    }

    struct Action: Decodable {
        var label: String
        var path: String
        var clear: Bool?
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
    /// The teammate's user id and phone (her device's id).
    let teammate: (userId: String, device: String?)
    let clock: DemoClock
    /// Each app with its subscription to the demo user and to the team ops.
    let apps: [String: (app: AppRecord, uns: String, team: String)]
    /// The stand-in servers' address, for actions.
    let target: String

    init(
        service: NotificationService, userId: String, teammate: (userId: String, device: String?), apps names: [String], target: String,
        clock: DemoClock
    ) async throws {
        self.service = service
        self.userId = userId
        self.teammate = teammate
        self.clock = clock
        self.target = target
        var apps: [String: (AppRecord, String, String)] = [:]
        for name in names {
            let (clientId, secret) = try await service.admin.addApp(hostName: name)
            let token = try await service.auth.token(form: ["grant_type": "client_credentials", "client_id": clientId, "client_secret": secret])
            let app = try await service.auth.authenticateApp(bearer: token.access_token)
            let body = JSONValue.object(["targetHostName": .string(name), "deviceName": .string("demo app server")]).jsonText
            let uns = try await service.inbox.createSubscription(userId: userId, body: Data(body.utf8)).userNotificationSubscriptionId
            let teamBody = JSONValue.object(["targetHostName": .string(name), "team": .string("ops")]).jsonText
            let team = try await service.inbox.createSubscription(userId: userId, body: Data(teamBody.utf8)).userNotificationSubscriptionId
            apps[name] = (app, uns, team)
        }
        self.apps = apps
    }

    func publish(_ item: DemoScript.Item) async throws {
        guard let (app, personal, team) = apps[item.app] else { return }
        let uns = item.team == nil ? personal : team
        let ago = (item.minutesAgo ?? 0) * 60
        var visual: [String: JSONValue] = ["title": .string(item.title)]
        if let body = item.body { visual["body"] = .string(body) }
        var object: [String: JSONValue] = [
            "appNotificationId": .string(UUID().uuidString.lowercased()),
            "priority": .string(item.priority),
            "payload": .object(["visualContent": .object(visual)]),
        ]
        if let group = item.group { object["groupName"] = .string(group) }
        if let actions = item.actions {
            object["actions"] = .array(
                actions.map { action in
                    .object([
                        "action": .string("http"), "label": .string(action.label), "url": .string(target + action.path), "method": .string("POST"),
                        "clear": .bool(action.clear ?? false),
                    ])
                })
        }
        if let minutes = item.expiresInMinutes {
            object["expirationDateTime"] = .string(ISOTime.format(Date().addingTimeInterval(minutes * 60)))
        }
        try await clock.backdated(by: ago) {
            let stored = try await service.publishing.publish(app: app, unsId: uns, body: Data(JSONValue.object(object).jsonText.utf8))
            let change: StateChange?
            switch item.state {
            case "read": change = StateChange(readState: .read)
            case "activated": change = StateChange.activate
            case "dismissed": change = StateChange(userActionState: .dismissed)
            case "snoozed": change = StateChange(userActionState: .snoozed, snoozedUntil: Date().addingTimeInterval(3 * 3600))
            default: change = nil
            }
            if let change {
                if item.by == "priya" {
                    _ = try await service.inbox.mutate(userId: teammate.userId, device: teammate.device, [Mutation(id: stored.id, change: change)])
                } else {
                    _ = try await service.inbox.mutate(userId: userId, [Mutation(id: stored.id, change: change)])
                }
            }
        }
    }
}

/// The demo's stand-in servers on loopback: a CI that re-runs jobs, an Alertmanager that
/// silences, a pager that takes escalations. Each answers 200 to a POST.
struct DemoTarget: Sendable {
    let base: String
    let task: Task<Void, any Error>

    static func start() async throws -> DemoTarget {
        let router = Router()
        router.post("/ci/rerun") { _, _ in #"{"queued":true}"# }
        router.post("/alertmanager/api/v2/silences") { _, _ in #"{"silenceID":"demo-silence"}"# }
        router.post("/pager") { _, _ in HTTPResponse.Status.ok }
        let port = Mutex<Int?>(nil)
        let app = Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { channel in port.withLock { $0 = channel.localAddress?.port } })
        let task = Task { try await app.runService(gracefulShutdownSignals: []) }
        for _ in 0..<200 {
            if let port = port.withLock({ $0 }) { return DemoTarget(base: "http://127.0.0.1:\(port)", task: task) }
            try await Task.sleep(for: .milliseconds(25))
        }
        task.cancel()
        throw CLIError("the demo's stand-in servers did not start")
    }

    func stop() { task.cancel() }
}
