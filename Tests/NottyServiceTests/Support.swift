import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import NottyComposition
import NottyCore
import NottyTestSupport
import Testing

@testable import NottyHTTP
@testable import NottySecrets
@testable import NottyService
@testable import NottyServicePostgres
@testable import NottyServiceSQLite

/// The storage backends every service test runs against.
enum Backend: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case sqlite, postgres

    var testDescription: String { self == .sqlite ? "SQLite" : "PostgreSQL" }

    /// SQLite always; PostgreSQL when it can be found or started (and always in CI, where
    /// `NOTTY_REQUIRE_POSTGRES=1` turns its absence into failures instead of a skip).
    static let available: [Backend] = TestPostgres.testsRun ? [.sqlite, .postgres] : [.sqlite]

    /// A fresh, migrated store of this kind.
    func makeStorage(in directory: URL) async throws -> any ServiceStorage {
        switch self {
        case .sqlite: return try SQLiteStorage(path: directory.appendingPathComponent("server.sqlite").path)
        // A patient timeout: these tests check answers, not latency, and a user's writes queue
        // behind one lock; with the whole suite on 2 cores 32 of them took over 5 s (503s), and a
        // batch of 40 concurrent publishes over 30 s.
        case .postgres:
            let url = try await TestPostgres.createDatabase(template: Self.migrated())
            return try await PostgresStorage.connect(url: PostgresURL(url), logger: .quiet, timeout: .seconds(60))
        }
    }

    /// A database migrated once, which every PostgreSQL test's store is a copy of.
    static let migrated = TestPostgres.template { url in
        try await PostgresStorage.connect(url: PostgresURL(url), logger: .quiet, timeout: .seconds(60)).close()
    }
}

/// A fresh service on a fresh store (a temporary SQLite file, or a new PostgreSQL database),
/// with fast bcrypt and an optional manual clock.
struct ServiceHarness {
    let directory: URL
    /// Removes `directory` when the last copy of this harness is gone: a test that never runs
    /// `router` or `live` (which remove it at their end) leaves nothing behind either.
    private let removal: DirectoryRemoval
    let storage: any ServiceStorage
    let service: NotificationService
    let clock: ManualClock?

    init(
        _ backend: Backend = .sqlite, clock: ManualClock? = nil, outbound: (any OutboundHTTP)? = nil,
        configure: (inout ServiceConfig) -> Void = { _ in }
    ) async throws {
        let directory = Repository.temporaryDirectory("notty-test")
        try await self.init(storage: backend.makeStorage(in: directory), directory: directory, clock: clock, outbound: outbound, configure: configure)
    }

    /// A second instance of the service on `other`'s PostgreSQL database (its own pool and listener).
    init(sharingDatabaseOf other: ServiceHarness, outbound: (any OutboundHTTP)? = nil) async throws {
        let postgres = try #require(other.storage as? PostgresStorage, "only PostgreSQL is shared between instances")
        try await self.init(
            storage: PostgresStorage.connect(url: postgres.url, logger: .quiet, timeout: .seconds(30)), clock: other.clock, outbound: outbound,
            secrets: SecretBox(keys: other.service.secrets.all))
    }

    /// A service on a store made elsewhere.
    init(
        storage: any ServiceStorage, directory: URL = Repository.temporaryDirectory("notty-test"),
        clock: ManualClock? = nil, logger: Logger = Logger(label: "notty.serve"), outbound: (any OutboundHTTP)? = nil,
        secrets: SecretBox = .ephemeral(), configure: (inout ServiceConfig) -> Void = { _ in }
    ) async throws {
        self.directory = directory
        removal = DirectoryRemoval(directory)
        self.storage = storage
        var config = ServiceConfig()
        config.bcryptCost = 4
        config.port = 0
        // HummingbirdTesting's live client opens its one connection when the test starts and
        // sends its first head after the test's setup (users made through the storage), which
        // on a loaded machine took over the 10 s head timeout: the service cut the connection
        // and the first request failed with "I/O on closed channel". The limits themselves are
        // tested against `notty serve` processes.
        config.connections.headerTimeout = .seconds(600)
        config.connections.idleTimeout = .seconds(600)
        configure(&config)
        self.clock = clock
        service = NotificationService(
            storage: storage, config: config, clock: clock ?? SystemClock(), logger: logger, outbound: outbound, secrets: secrets)
    }

    /// Runs `test` against the in-process router, then removes the store.
    func router<T: Sendable>(_ test: @escaping @Sendable (any TestClientProtocol) async throws -> T) async throws -> T {
        try await run(.router, test)
    }

    /// Runs `test` against a live server on 127.0.0.1 with a free port.
    func live<T: Sendable>(_ test: @escaping @Sendable (any TestClientProtocol) async throws -> T) async throws -> T {
        try await run(.live, test)
    }

    private func run<T: Sendable>(_ setup: TestingSetup, _ test: @escaping @Sendable (any TestClientProtocol) async throws -> T) async throws -> T {
        defer { try? FileManager.default.removeItem(at: directory) }
        let result = await Result { try await ServerApplication.build(service: service).test(setup) { client in try await test(client) } }
        let closing = ContinuousClock.now
        try? await storage.close()
        // A storage that closes slowly (PostgresStorage gives up after 10 s) says so.
        if ContinuousClock.now - closing > .seconds(5) { print("ServiceHarness: closing the storage took \(ContinuousClock.now - closing)") }
        return try result.get()
    }
}

/// Removes a folder when it is released.
final class DirectoryRemoval: Sendable {
    let directory: URL
    init(_ directory: URL) { self.directory = directory }
    deinit { try? FileManager.default.removeItem(at: directory) }
}

/// A response as the tests read it.
struct Reply: Sendable {
    var status: HTTPResponse.Status
    var headers: HTTPFields
    var text: String
    var json: JSONValue? { JSONValue(jsonText: text) }

    subscript(key: String) -> JSONValue? {
        if case .object(let object)? = json { return object[key] }
        return nil
    }

    func string(_ key: String) -> String? {
        if case .string(let value)? = self[key] { return value }
        return nil
    }

    var errorCode: String? {
        if case .object(let error)? = self["error"], case .string(let code)? = error["code"] { return code }
        return nil
    }

    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try NottyJSON.decoder.decode(type, from: Data(text.utf8))
    }
}

extension TestClientProtocol {
    func call(
        _ method: HTTPRequest.Method, _ uri: String, token: String? = nil, json: String? = nil, form: String? = nil,
        headers extra: [String: String] = [:]
    ) async throws -> Reply {
        var headers = HTTPFields()
        if let token { headers[.authorization] = "Bearer \(token)" }
        var body: ByteBuffer?
        if let json {
            headers[.contentType] = "application/json"
            body = ByteBuffer(string: json)
        }
        if let form {
            headers[.contentType] = "application/x-www-form-urlencoded"
            body = ByteBuffer(string: form)
        }
        for (name, value) in extra { headers[HTTPField.Name(name)!] = value }
        let started = ContinuousClock.now
        do {
            let response = try await executeRequest(uri: uri, method: method, headers: headers, body: body)
            return Reply(status: response.status, headers: response.headers, text: String(buffer: response.body))
        } catch {
            // A live client's read timeout says nothing of which request it was: this does.
            throw SupportError("\(method) \(uri.split(separator: "?")[0]) after \(ContinuousClock.now - started): \(error)")
        }
    }
}

/// A user signed in as one device, and an app allowed to publish to them.
struct World: Sendable {
    var userToken: String
    var refreshToken: String
    var appToken: String
    var unsId: String
    var clientId: String
    var clientSecret: String
    var host: String
}

extension ServiceHarness {
    /// Creates a user (and, unless `app` is given, an app), signs both in through the real
    /// routes, and subscribes the user to the app.
    func world(
        _ client: any TestClientProtocol, user: String = "alice", host: String = "graphnotifications.sample.windows.com",
        app: (clientId: String, clientSecret: String)? = nil
    ) async throws -> World {
        // A storage just started on a loaded machine may not answer in time at first (it throws
        // "unavailable", or a route answers 503, retry later), and a live server's first connect
        // may time out (the test client gives it 5 s): asked again for up to a minute, as a
        // client would.
        func patiently<T>(_ work: () async throws -> T, busy: (T) -> Bool = { _ in false }) async throws -> T {
            let deadline = ContinuousClock.now + .seconds(60)
            while true {
                do {
                    let result = try await work()
                    if !busy(result) || ContinuousClock.now >= deadline { return result }
                } catch let error where ContinuousClock.now < deadline && ["navailable", "Connect timeout"].contains(where: "\(error)".contains) {}
                try await Task.sleep(for: .milliseconds(200))
            }
        }
        _ = try await patiently { try await service.admin.addUser(name: user, password: "s3cret-\(user)") }
        let credentials: (clientId: String, clientSecret: String)
        if let app { credentials = app } else { credentials = try await patiently { try await service.admin.addApp(hostName: host) } }
        func settled(_ call: () async throws -> Reply) async throws -> Reply {
            try await patiently(call, busy: { $0.status == .serviceUnavailable })
        }
        let login = try await settled {
            try await client.call(.post, "/oauth2/v2.0/token", form: "grant_type=password&username=\(user)&password=s3cret-\(user)")
        }
        guard login.status == .ok, let userToken = login.string("access_token") else {
            throw SupportError("login failed: \(login.status) \(login.text)")
        }
        let appLogin = try await settled {
            try await client.call(
                .post, "/oauth2/v2.0/token",
                form: "grant_type=client_credentials&client_id=\(credentials.clientId)&client_secret=\(credentials.clientSecret)&scope=x")
        }
        guard appLogin.status == .ok else { throw SupportError("app login failed: \(appLogin.status) \(appLogin.text)") }
        let sub = try await settled {
            try await client.call(
                .post, "/v1/me/subscriptions", token: userToken, json: #"{"targetHostName":"\#(host)","deviceName":"test","platform":"websocket"}"#)
        }
        guard sub.status == .created else { throw SupportError("subscribe failed: \(sub.status) \(sub.text)") }
        return World(
            userToken: userToken, refreshToken: login.string("refresh_token") ?? "", appToken: appLogin.string("access_token") ?? "",
            unsId: sub.string("userNotificationSubscriptionId") ?? "", clientId: credentials.clientId, clientSecret: credentials.clientSecret,
            host: host)
    }
}

extension ServiceHarness {
    /// alice (with an app) and bob (on her app), and the team ops: alice its owner, bob a member.
    func aliceAndBobInOps(_ client: any TestClientProtocol) async throws -> (alice: World, bob: World) {
        let alice = try await world(client)
        let bob = try await world(client, user: "bob", app: (alice.clientId, alice.clientSecret))
        try await service.teams.create(name: "ops", owner: "alice")
        let added = try await client.call(.post, "/v1/teams/ops/members", token: alice.userToken, json: #"{"user":"bob"}"#)
        guard added.status == .ok else { throw SupportError("adding bob to ops: \(added.status) \(added.text)") }
        return (alice, bob)
    }
}

extension World {
    func publish(_ client: any TestClientProtocol, _ json: String) async throws -> Reply {
        try await client.call(.post, "/beta/me/notifications", token: appToken, json: json, headers: ["X-UNS-ID": unsId])
    }

    func publish(_ client: any TestClientProtocol, id: String, title: String = "Build failed", extra: String = "") async throws -> Reply {
        try await publish(client, #"{"appNotificationId":"\#(id)","payload":{"visualContent":{"title":"\#(title)","body":"main is red"}}\#(extra)}"#)
    }
}

let graphToastSample =
    #"{"targetHostName":"graphnotifications.sample.windows.com","appNotificationId":"testDirectToastNotification","payload":{"visualContent":{"title":"Hello World!","body":"Notifications are Great!"}},"targetPolicy":{"platformTypes":["windows","ios","android"]},"priority":"High","groupName":"TestGroup","displayTimeToLive":"60"}"#
let graphRawSample =
    #"{"appNotificationId":"testRawNotification","payload":{"rawContent":"Hello World!"},"targetPolicy":{"platformTypes":["windows","ios","android"]},"priority":"High","displayTimeToLive":"60"}"#

extension Result where Failure == any Error {
    /// The outcome of an async throwing body.
    init(_ body: () async throws -> Success) async {
        do { self = .success(try await body()) } catch { self = .failure(error) }
    }
}

extension Logger {
    /// Only critical lines (tests that make failures on purpose).
    static var quiet: Logger {
        var logger = Logger(label: "notty.test")
        logger.logLevel = .critical
        return logger
    }
}

/// The key the tests' own publishes seal with (the services they start have keys of their own).
let testSecrets = SecretBox.ephemeral()

extension PublishInput {
    /// A publish made by a test straight into a storage, sealed with ``testSecrets``.
    init(userId: String, hostName: String, request: PublishRequest, expiration: Date, now: Date, resolved: Bool = false) {
        self.init(userId: userId, hostName: hostName, request: request, expiration: expiration, now: now, resolved: resolved, secrets: testSecrets)
    }
}
