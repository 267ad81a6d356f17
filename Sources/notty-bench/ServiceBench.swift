import AsyncHTTPClient
import Foundation
import HTTPTypes
import HummingbirdWSClient
import Logging
import NIOCore
import NIOFoundationCompat
import NIOHTTP1
import NottyCore
import NottyPOSIX
import NottyRecords
import NottySecrets
import NottyService
import NottyServicePostgres
import NottyServiceSQLite
import NottyTestSupport

// MARK: - The service under test

final class ServiceBench: @unchecked Sendable {  // @unchecked: its tokens are set once while it starts, before it is shared
    let serve: ServeProcess
    let directory: URL
    let base: String
    let port: Int
    let http: HTTPClient
    var userToken = "", appToken = "", unsId = ""

    /// The real `notty serve` (user alice, app ci.example.com, no rate limit) with a user
    /// token, an app token and a subscription id.
    static func start(environment: [String: String] = [:], extraArguments: [String] = []) async throws -> ServiceBench {
        let directory = Repository.temporaryDirectory("notty-bench")
        let serve = try await ServeProcess(directory: directory, environment: environment, extraArguments: unlimited + extraArguments)
        var config = HTTPClient.Configuration(timeout: .init(connect: .seconds(10), read: .seconds(60)))
        config.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = 128
        let bench = ServiceBench(serve: serve, directory: directory, http: HTTPClient(eventLoopGroupProvider: .singleton, configuration: config))
        bench.userToken = try await bench.token("grant_type=password&username=alice&password=s3cret-pw")
        bench.appToken = try await bench.token("grant_type=client_credentials&client_id=\(serve.clientId)&client_secret=\(serve.clientSecret)")
        let (_, sub) = try await bench.request(.POST, "/v1/me/subscriptions", token: bench.userToken, body: #"{"targetHostName":"ci.example.com"}"#)
        guard case .object(let subObject)? = JSONValue(jsonText: sub), case .string(let uns)? = subObject["userNotificationSubscriptionId"] else {
            throw SupportError("subscribe answered \(sub)")
        }
        bench.unsId = uns
        return bench
    }

    static let unlimited = ["--publish-rate", "1000000", "--publish-burst", "1000000"]

    /// This service's storage, opened beside it (as `notty admin` opens it).
    func openStorage() async throws -> any ServiceStorage {
        if let url = serve.environment["NOTTY_POSTGRES_URL"] {
            return try await PostgresStorage.connect(url: PostgresURL(url))
        }
        return try SQLiteStorage(path: directory.appendingPathComponent("server/server.sqlite").path)
    }

    /// `users` users, each with a subscription to this bench's app, written straight into the
    /// service's storage (through the storage API, as `notty admin` does): signing 1,000 users
    /// in would spend minutes in bcrypt and measure nothing of interest. Their subscription ids.
    func addUsers(count users: Int) async throws -> [String] {
        let storage = try await openStorage()
        let hash = Secrets.hashPassword("s3cret-pw", cost: 4)  // nobody signs in with it
        let now = Date()
        var subscriptions: [String] = []
        do {
            for n in 0..<users {
                let user = UserRecord(
                    id: UUID().uuidString.lowercased(), userName: "bench-user-\(n)", displayName: "Bench user \(n)", passwordHash: hash)
                try await storage.createUser(user)
                let subscription = SubscriptionRecord(
                    id: UUID().uuidString.lowercased(), userId: user.id, targetHostName: "ci.example.com", deviceId: UUID().uuidString.lowercased(),
                    deviceName: nil, platform: nil, createdAt: now, expiresAt: now.addingTimeInterval(86_400))
                try await storage.insertSubscription(subscription)
                subscriptions.append(subscription.id)
            }
        } catch {
            try? await storage.close()
            throw error
        }
        try await storage.close()
        return subscriptions
    }

    init(serve: ServeProcess, directory: URL, http: HTTPClient) {
        self.serve = serve
        self.directory = directory
        self.port = serve.port
        self.base = serve.url
        self.http = http
    }

    func stop() async {
        try? await http.shutdown()
        await serve.stop()
        try? FileManager.default.removeItem(at: directory)
    }

    func token(_ form: String) async throws -> String {
        var request = HTTPClientRequest(url: base + "/oauth2/v2.0/token")
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
        request.body = .bytes(ByteBuffer(string: form))
        let response = try await http.execute(request, timeout: .seconds(30))
        let text = String(buffer: try await response.body.collect(upTo: 1 << 20))
        guard case .object(let object)? = JSONValue(jsonText: text), case .string(let token)? = object["access_token"] else {
            throw SupportError("token: \(text)")
        }
        return token
    }

    func request(
        _ method: HTTPMethod, _ path: String, token: String, body: String? = nil, headers: [(String, String)] = [], via server: String? = nil
    ) async throws -> (Int, String) {
        var request = HTTPClientRequest(url: (server ?? base) + path)
        request.method = method
        if !token.isEmpty { request.headers.add(name: "Authorization", value: "Bearer \(token)") }  // "": none (a webhook)
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(string: body))
        }
        let response = try await http.execute(request, timeout: .seconds(60))
        let text = String(buffer: try await response.body.collect(upTo: 1 << 24))
        return (Int(response.status.code), text)
    }

    /// The body the benchmark publishes under `key`.
    static func publishBody(_ key: String) -> String {
        #"{"appNotificationId":"\#(key)","payload":{"visualContent":{"title":"Build \#(key) failed","body":"3 tests failed on main"}},"groupName":"CI"}"#
    }

    func publish(_ key: String, via server: String? = nil) async throws -> Int {
        try await request(.POST, "/beta/me/notifications", token: appToken, body: Self.publishBody(key), headers: [("X-UNS-ID", unsId)], via: server)
            .0
    }

    /// Publishes from `clients` concurrent clients (keep-alive connections of ``HTTPLoad``) for
    /// `seconds`, spread over `servers` (default: this one), each to this bench's user or, given
    /// `subscriptions`, to one of them picked at random.
    func throughput(seconds: Double, clients: Int = 64, servers: [String]? = nil, subscriptions: [String]? = nil, tag: String) async throws
        -> HTTPLoad.Result
    {
        let (appToken, unsIds) = (self.appToken, subscriptions ?? [self.unsId])
        return try await HTTPLoad.run(servers: servers ?? [base], clients: clients, seconds: seconds, expect: 201) { client, n, host in
            let body = Self.publishBody("\(tag)\(client)-\(n)")
            let unsId = unsIds.count == 1 ? unsIds[0] : unsIds.randomElement()!
            return "POST /beta/me/notifications HTTP/1.1\r\nHost: \(host)\r\nAuthorization: Bearer \(appToken)\r\nX-UNS-ID: \(unsId)\r\n"
                + "Content-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)"
        }
    }

    /// Milliseconds from a publish through `server` (default: this one) to the doorbell frame
    /// at a device connected to `devicePort` (default: this one), `count` times one after another
    /// (and not after `deadline`). `send(key)` publishes another way (a webhook) and answers its status.
    func doorbellLatencies(
        count: Int, deadline: ContinuousClock.Instant? = nil, publishVia server: String? = nil, devicePort: Int? = nil, tag: String,
        send: (@Sendable (String) async throws -> Int)? = nil
    ) async throws -> [Double] {
        let frames = AsyncStream<String>.makeStream()
        let device = Task {
            var headers = HTTPFields()
            headers[.authorization] = "Bearer \(userToken)"
            try await WebSocketClient.connect(
                url: "ws://127.0.0.1:\(devicePort ?? port)/v1/me/push", configuration: .init(additionalHeaders: headers),
                logger: Logger(label: "bench")
            ) { inbound, _, _ in
                for try await message in inbound.messages(maxSize: 1 << 20) {
                    if case .text(let text) = message { frames.continuation.yield(text) }
                }
            }
        }
        defer { device.cancel() }
        try await Task.sleep(for: .milliseconds(300))
        var iterator = frames.stream.makeAsyncIterator()
        var bell: [Double] = []
        for i in 0..<count {
            if let deadline, ContinuousClock.now >= deadline { break }
            let t0 = ContinuousClock.now
            let key = "\(tag)-\(i)"
            async let status = send == nil ? publish(key, via: server) : send!(key)
            guard await iterator.next() != nil else { break }
            bell.append((ContinuousClock.now - t0).seconds * 1000)
            _ = try await status
        }
        return bell
    }

    var serverRSS: Int { memory(pid: serve.process?.pid ?? 0).resident }

    /// The feed's newest cursor for `token`'s user.
    func latestCursor(token: String) async throws -> String {
        var cursor = "0"
        while true {
            let (status, text) = try await request(.GET, "/v1/me/notifications/changes?since=\(cursor)&limit=5000", token: token)
            guard status == 200, case .object(let page)? = JSONValue(jsonText: text), case .string(let next)? = page["cursor"],
                case .bool(let more)? = page["hasMore"]
            else { throw SupportError("changes answered \(status)") }
            cursor = next
            if !more { return cursor }
        }
    }

    // MARK: - Scenarios

    func run(quick: Bool) async throws {
        let scale = quick ? 0.2 : 1.0
        print(
            "notty-bench service — real `notty serve` (SQLite, WAL, synchronous=FULL) on 127.0.0.1:\(port), \(ProcessInfo.processInfo.activeProcessorCount) cores"
        )
        print("")

        // 1. Durable publish throughput from 64 concurrent clients, after a second of the same
        // load that is not counted (threads started, caches and the store's first pages warm).
        _ = try await throughput(seconds: 1, tag: "w")
        let burst = try await throughput(seconds: 5.0 * scale + 1, tag: "t")
        print(
            String(
                format: "publish throughput, 64 concurrent clients: %.0f publishes/s (%d acknowledged in %.1f s after 1 s of warm-up, %d non-201)",
                burst.rate, burst.ok, burst.elapsed, burst.other))

        // 1b. The same server's floor: a request it answers 404 at once (no auth, no body, no
        // storage) from the same 64 clients for as long; publishes are shown as a share of it.
        let floor = try await HTTPLoad.run(servers: [base], clients: 64, seconds: 5.0 * scale + 1, expect: 404) { _, _, host in
            "GET /no-such-route HTTP/1.1\r\nHost: \(host)\r\n\r\n"
        }
        print(
            String(
                format: "the same server's 404 floor, 64 concurrent clients: %.0f requests/s (%d non-404); publishes are %.1f%% of it",
                floor.rate, floor.other, floor.rate > 0 ? 100 * burst.rate / floor.rate : 0))

        // 2. Publish latency at a steady 1,000/s.
        let rate = 1000.0
        let total = Int(rate * (5 * scale + 1))
        let latencies = Locked<[Double]>([])
        let paceStart = ContinuousClock.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            for i in 0..<total {
                let due = paceStart + .seconds(Double(i) / rate)
                if due > ContinuousClock.now { try await Task.sleep(until: due) }
                group.addTask {
                    let t0 = ContinuousClock.now
                    let status = try await self.publish("paced-\(i)")
                    let ms = (ContinuousClock.now - t0).seconds * 1000
                    if status == 201 { latencies.update { $0.append(ms) } }
                }
            }
            try await group.waitForAll()
        }
        let paced = latencies.value
        print(
            String(
                format: "publish latency at 1,000/s (%d publishes): p50 %.2f ms, p99 %.2f ms, max %.2f ms", paced.count, percentile(paced, 50),
                percentile(paced, 99), paced.max() ?? 0))

        // 3. Publish → doorbell frame at a connected device.
        let bell = try await doorbellLatencies(count: Int(1000 * scale + 100), tag: "bell")
        print(String(format: "publish → doorbell frame (%d): p50 %.2f ms, p99 %.2f ms", bell.count, percentile(bell, 50), percentile(bell, 99)))

        // 4. Conditional polls answered 304.
        let cursor = try await feed().cursor
        let userToken = self.userToken
        let polls = try await HTTPLoad.run(servers: [base], clients: 64, seconds: 5 * scale + 1, expect: 304) { _, _, host in
            "GET /v1/me/notifications/changes?since=\(cursor) HTTP/1.1\r\nHost: \(host)\r\nAuthorization: Bearer \(userToken)\r\nIf-None-Match: \"\(cursor)\"\r\n\r\n"
        }
        print(
            String(
                format: "conditional polls, 64 concurrent clients: %.0f 304s/s (%d in %.1f s, %d other)", polls.rate, polls.ok, polls.elapsed,
                polls.other))

        // 5. Idle connected devices and the service's memory.
        let idleCount = quick ? 1000 : 10_000
        let before = serverRSS
        let connected = Locked<Int>(0)
        var idle: [Task<Void, any Error>] = []
        for i in 0..<idleCount {
            idle.append(
                Task {
                    var headers = HTTPFields()
                    headers[.authorization] = "Bearer \(userToken)"
                    try await WebSocketClient.connect(
                        url: "ws://127.0.0.1:\(port)/v1/me/push", configuration: .init(additionalHeaders: headers), logger: Logger(label: "idle")
                    ) { inbound, _, _ in
                        connected.update { $0 += 1 }
                        for try await _ in inbound.messages(maxSize: 1 << 20) {}
                    }
                })
            if i % 200 == 199 { try await Task.sleep(for: .milliseconds(20)) }
        }
        let deadline = ContinuousClock.now + .seconds(60)
        while connected.update({ $0 }) < idleCount && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(100)) }
        try await Task.sleep(for: .seconds(1))
        let during = serverRSS
        print(
            String(
                format: "idle doorbell devices: %d connected; service RSS %.0f MiB (%.0f MiB before connecting)", connected.value,
                Double(during) / 1_048_576, Double(before) / 1_048_576))
        for task in idle { task.cancel() }
    }

    /// One page of the change feed.
    func changes(since cursor: String?, limit: Int) async throws -> ChangesPage {
        let (_, text) = try await request(
            .GET, "/v1/me/notifications/changes?limit=\(limit)" + (cursor.map { "&since=\($0)" } ?? ""), token: userToken)
        return try NottyJSON.decoder.decode(ChangesPage.self, from: Data(text.utf8))
    }

    /// The whole change feed: every id (oldest first) and the newest cursor.
    func feed() async throws -> (ids: [String], cursor: String) {
        var ids: [String] = []
        var cursor: String?
        while true {
            let page = try await changes(since: cursor, limit: 5000)
            ids += page.changes.map(\.id)
            cursor = page.cursor
            if !page.hasMore { return (ids, page.cursor) }
        }
    }
}
