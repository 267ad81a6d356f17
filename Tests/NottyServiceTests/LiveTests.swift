import AsyncHTTPClient
import Foundation
import HTTPTypes
import HummingbirdTesting
import HummingbirdWSClient
import Logging
import NIOCore
import NIOFoundationCompat
import NIOHTTP1
import NottyCore
import NottyTestSupport
import Synchronization
import Testing

@testable import NottyHTTP
@testable import NottyService
@testable import NottyServicePostgres
@testable import NottyServiceSQLite

/// Collects the text frames a doorbell client receives.
final class FrameLog: Sendable {
    private let frames = Mutex<[DoorbellFrame]>([])
    func append(_ frame: DoorbellFrame) { frames.withLock { $0.append(frame) } }
    var all: [DoorbellFrame] { frames.withLock { $0 } }

    /// Waits (bounded) until `condition` holds for the frames received.
    func wait(timeout: Duration = .seconds(5), until condition: ([DoorbellFrame]) -> Bool) async -> Bool {
        await eventually(timeout: timeout) { condition(all) }
    }
}

/// Connects a doorbell client in the background; cancel the task to hang up. The task's value
/// is the service's close frame (nil when the connection ended without one).
func connectDoorbell(port: Int, token: String?, query: String = "", log: FrameLog) -> Task<WebSocketCloseFrame?, any Error> {
    Task {
        var headers = HTTPFields()
        if let token { headers[.authorization] = "Bearer \(token)" }
        return try await WebSocketClient.connect(
            url: "ws://127.0.0.1:\(port)/v1/me/push\(query)", configuration: .init(maxFrameSize: 1 << 20, additionalHeaders: headers),
            logger: Logger(label: "test.ws")
        ) { inbound, _, _ in
            for try await message in inbound.messages(maxSize: 1 << 20) {
                if case .text(let text) = message, let frame = try? NottyJSON.decoder.decode(DoorbellFrame.self, from: Data(text.utf8)) {
                    log.append(frame)
                }
            }
        }
    }
}

/// Waits until the hub has `count` connections (the upgrade finished); throws after 10 s
/// (an upgrade takes milliseconds; the margin is for a loaded 2-core machine).
func waitForConnections(_ service: NotificationService, _ count: Int) async throws {
    let connected = await eventually(timeout: .seconds(10)) { service.hub.connectionCount >= count }
    guard connected else { throw CancellationError() }
}

@Suite("Live service over real sockets", .timeLimit(.minutes(5)), .serialized)
struct LiveTests {
    @Test("The doorbell rings every connected device of the user on every change, and nobody else", arguments: Backend.available)
    func doorbell(backend: Backend) async throws {
        let harness = try await ServiceHarness(backend)
        try await harness.live { client in
            let port = try #require(client.port)
            let alice = try await harness.world(client)
            let bob = try await harness.world(client, user: "bob", app: (alice.clientId, alice.clientSecret))
            let laptop = FrameLog(), phone = FrameLog(), bobs = FrameLog(), full = FrameLog()
            let tasks = [
                connectDoorbell(port: port, token: alice.userToken, log: laptop),
                // The second device authenticates with ?access_token= instead of the header.
                connectDoorbell(port: port, token: nil, query: "?access_token=\(alice.userToken)", log: phone),
                connectDoorbell(port: port, token: bob.userToken, log: bobs),
                connectDoorbell(port: port, token: alice.userToken, query: "?payload=full", log: full),
            ]
            defer { for task in tasks { task.cancel() } }
            try await waitForConnections(harness.service, 4)

            let published = try await alice.publish(client, id: "ci-1")
            let id = try #require(published.string("id"))
            let feed = try await client.call(.get, "/v1/me/notifications/changes", token: alice.userToken).decode(ChangesPage.self)
            #expect(await laptop.wait { $0.last?.cursor == feed.cursor })
            #expect(await phone.wait { $0.last?.cursor == feed.cursor })
            #expect(laptop.all.allSatisfy { $0.type == "changed" })
            // The full-payload device gets the change itself, contiguous with its cursor.
            #expect(await full.wait { $0.last?.cursor == feed.cursor })
            #expect(full.all.last?.type == "changes")
            #expect(full.all.last?.changes?.map(\.id) == [id])

            // A dismiss from another device rings again, with the newer cursor.
            _ = try await client.call(.patch, "/v1/me/notifications/\(id)", token: alice.userToken, json: #"{"userActionState":"Dismissed"}"#)
            let after = try await client.call(.get, "/v1/me/notifications/changes?since=\(feed.cursor)", token: alice.userToken).decode(
                ChangesPage.self)
            #expect(await laptop.wait { $0.last?.cursor == after.cursor })
            #expect(await full.wait { $0.last?.cursor == after.cursor })
            #expect(full.all.last?.previousCursor == feed.cursor)
            #expect(full.all.last?.changes?.first?.userActionState == .dismissed)
            // Bob heard nothing of Alice's changes. A barrier, not a pause: Bob's own publish rings
            // his doorbell after every ring of Alice's changes was handed out (her devices had
            // them), and his connection's frames arrive in order; so once his frame with his
            // newest cursor is here, a ring of hers handed to him would have come before it.
            _ = try await bob.publish(client, id: "bob-1")
            let bobsFeed = try await client.call(.get, "/v1/me/notifications/changes", token: bob.userToken).decode(ChangesPage.self)
            #expect(await bobs.wait { $0.last?.cursor == bobsFeed.cursor })
            #expect(bobs.all.count == 1, "Bob's doorbell rang for changes not his: \(bobs.all.map(\.cursor))")
        }
    }

    @Test(
        "A full-payload doorbell 1,200 changes behind after one ring gets them page by page, each page continuing the last",
        arguments: Backend.available)
    func fullDoorbellPages(backend: Backend) async throws {
        let harness = try await ServiceHarness(backend)
        try await harness.live { client in
            let port = try #require(client.port)
            let alice = try await harness.world(client)
            let full = FrameLog()
            let task = connectDoorbell(port: port, token: alice.userToken, query: "?payload=full", log: full)
            defer { task.cancel() }
            try await waitForConnections(harness.service, 1)
            let before = try await client.call(.get, "/v1/me/notifications/changes", token: alice.userToken).decode(ChangesPage.self).cursor
            let user = try #require(try await harness.storage.user(name: "alice")).id
            let inputs = (0..<1200).map { n in
                PublishInput(
                    userId: user, hostName: alice.host,
                    request: PublishRequest(
                        appNotificationId: "bulk-\(n)",
                        payload: NotificationPayload(rawContent: nil, visualContent: VisualContent(title: "n\(n)", body: nil))),
                    expiration: Date().addingTimeInterval(3600), now: Date())
            }
            _ = try await harness.storage.publish(batch: inputs)  // one write, one ring
            #expect(await full.wait(timeout: .seconds(30)) { frames in frames.reduce(0) { $0 + ($1.changes?.count ?? 0) } >= 1200 })
            // First the opening frame (the newest cursor on connecting), then the pages.
            #expect(full.all.first?.type == "changed" && full.all.first?.cursor == before, "\(full.all.first.map { "\($0)" } ?? "no frame")")
            let frames = Array(full.all.dropFirst())
            #expect(frames.count == 3, "\(frames.map { $0.changes?.count ?? 0 })")
            #expect(frames.map { $0.changes?.count ?? 0 } == [500, 500, 200])
            #expect(frames.first?.previousCursor == before)
            for (earlier, later) in zip(frames, frames.dropFirst()) { #expect(later.previousCursor == earlier.cursor) }
            #expect(Set(frames.flatMap { $0.changes ?? [] }.map(\.appNotificationId)).count == 1200)
        }
    }

    @Test("When the service stops, each doorbell (plain and full) is closed with a close handshake, and leaves the hub", arguments: Backend.available)
    func doorbellGoodbye(backend: Backend) async throws {
        let harness = try await ServiceHarness(backend)
        try await harness.live { client in
            let port = try #require(client.port)
            let alice = try await harness.world(client)
            let plain = connectDoorbell(port: port, token: alice.userToken, log: FrameLog())
            let full = connectDoorbell(port: port, token: alice.userToken, query: "?payload=full", log: FrameLog())
            try await waitForConnections(harness.service, 2)
            // Each client's connect returns the service's close frame (after 30 s, the test
            // hangs up instead).
            let deadline = Task {
                try await Task.sleep(for: .seconds(30))
                plain.cancel()
                full.cancel()
            }
            defer { deadline.cancel() }
            harness.service.hub.closeAll()  // what a graceful stop does
            for task in [plain, full] {
                let goodbye = try? await task.value
                #expect(goodbye?.closeCode == .normalClosure)
            }
            #expect(harness.service.hub.connectionCount == 0)
        }
    }

    @Test("A WebSocket upgrade with a bad token is refused with 401", arguments: Backend.available)
    func doorbellAuth(backend: Backend) async throws {
        let harness = try await ServiceHarness(backend)
        try await harness.live { client in
            let port = try #require(client.port)
            let log = FrameLog()
            let task = connectDoorbell(port: port, token: "wrong", log: log)
            let result = await task.result
            #expect(throws: (any Error).self) { try result.get() }
            #expect(harness.service.hub.connectionCount == 0)
        }
    }

    @Test("50 publishers and 20 devices at once: no 5xx, no lost update, feeds replay to the service's state", arguments: Backend.available)
    func concurrency(backend: Backend) async throws {
        let harness = try await ServiceHarness(backend) {
            $0.publishRate = 1_000_000; $0.publishBurst = 1_000_000
        }
        try await harness.live { client in
            let port = try #require(client.port)
            let world = try await harness.world(client)
            let base = "http://127.0.0.1:\(port)"
            var httpConfig = HTTPClient.Configuration(timeout: .init(connect: .seconds(5), read: .seconds(30)))
            httpConfig.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = 80
            let http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: httpConfig)
            let loop = LoopbackHTTP(http: http, base: base, unsId: world.unsId)
            // The newest acknowledged change per notification; `tied` when two changes with the
            // same clock but different values were both acknowledged: the service keeps the one it
            // committed last, which the order of the answers here does not tell.
            let acknowledged = Locked<[String: (read: ReadState, at: Int64, tied: Bool, sent: ContinuousClock.Instant)]>([:])
            let published = Locked<Set<String>>([])
            // When the last publish of each notification was answered: a re-publish answered
            // after a change was sent may have been committed after it (and made it new again).
            let publishAnswered = Locked<[String: ContinuousClock.Instant]>([:])

            // A fixed amount of work, however fast the machine: 8 publishes from each of 50
            // publishers (over 5 keys each, so some are re-publishes) and 25 PATCHes from each of
            // 20 devices, all at once.
            let (publishes, patches) = (8, 25)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for publisher in 0..<50 {
                    group.addTask {
                        for n in 0..<publishes {
                            let key = "p\(publisher)-\(n % 5)"
                            let (status, data) = try await loop.send(
                                .POST, "/beta/me/notifications", token: world.appToken,
                                body: #"{"appNotificationId":"\#(key)","payload":{"visualContent":{"title":"t\#(n)"}}}"#, uns: true)
                            if status == 201, let note = try? NottyJSON.decoder.decode(UserNotification.self, from: data) {
                                published.update { _ = $0.insert(note.id) }
                                publishAnswered.update { $0[note.id] = .now }
                            }
                        }
                    }
                }
                for device in 0..<20 {
                    group.addTask {
                        var n = 0
                        while n < patches {
                            let ids = Array(published.value.prefix(200))
                            guard let id = ids.randomElement() else { try await Task.sleep(for: .milliseconds(5)); continue }
                            let read: ReadState = Bool.random() ? .read : .unread
                            // Never ahead of the service's clock (it would be clamped to it, and
                            // the newest acknowledged change would no longer be the winner).
                            let at = Int64(Date().timeIntervalSince1970 * 1000) - 20 + Int64(device)
                            let mutation = "d\(device)-\(n)"
                            let sent = ContinuousClock.now
                            let (status, _) = try await loop.send(
                                .PATCH, "/v1/me/notifications/\(id)", token: world.userToken,
                                body: #"{"readState":"\#(read.rawValue)","changedAt":\#(at),"mutationId":"\#(mutation)"}"#)
                            if status == 200 {
                                acknowledged.update { all in
                                    guard let known = all[id], known.at >= at else { all[id] = (read, at, false, sent); return }
                                    if known.at == at && known.read != read { all[id]?.tied = true }
                                }
                            }
                            n += 1
                        }
                    }
                }
                try await group.waitForAll()
            }
            defer { Task { try? await http.shutdown() } }
            let counted = loop.statuses.value
            #expect(counted.keys.allSatisfy { $0 < 500 }, "statuses: \(counted)")
            #expect(counted[201] == 50 * publishes && counted[200] == 20 * patches, "statuses: \(counted)")

            // Replay the whole feed page by page and compare it with the service's own state.
            var replayed: [String: UserNotification] = [:]
            var cursor = ""
            var hasMore = true
            while hasMore {
                let (status, data) = try await loop.send(
                    .GET, "/v1/me/notifications/changes?limit=700" + (cursor.isEmpty ? "" : "&since=\(cursor)"), token: world.userToken, body: nil)
                #expect(status == 200)
                let page = try NottyJSON.decoder.decode(ChangesPage.self, from: data)
                for change in page.changes { replayed[change.id] = change }
                cursor = page.cursor
                hasMore = page.hasMore
            }
            let (_, listData) = try await loop.send(.GET, "/v1/me/notifications?view=all&top=1000", token: world.userToken, body: nil)
            let state = try NottyJSON.decoder.decode(NotificationList.self, from: listData).value
            // The list is exactly the feed's notifications that are not deleted.
            #expect(Set(state.map(\.id)) == Set(replayed.values.filter { $0.status == .active }.map(\.id)))
            for note in state { #expect(replayed[note.id] == note) }
            // No lost update: every notification holds the newest acknowledged readState, unless a
            // re-publish may have reset it after (one answered after that change was sent: under
            // load a publish waits in the write queue longer than any margin of its clock).
            var checked = 0
            let answered = publishAnswered.value
            for (id, ack) in acknowledged.value where !ack.tied {
                guard let note = replayed[id], note.status == .active else { continue }
                if let last = answered[id], last < ack.sent {
                    checked += 1
                    #expect(note.readState == ack.read, "\(id): expected \(ack.read) from the change at \(ack.at)")
                }
            }
            #expect(checked > 0, "no acknowledged change could be checked")
            report(
                "\(backend): \(checked) notifications checked for lost updates, \(acknowledged.value.values.filter(\.tied).count) left out (two acknowledged changes with the same clock)"
            )
        }
    }
}

/// Requests to a live service over real sockets, counting every status seen.
struct LoopbackHTTP: Sendable {
    let http: HTTPClient
    let base: String
    let unsId: String
    let statuses = Locked<[Int: Int]>([:])

    @Sendable func send(_ method: HTTPMethod, _ path: String, token: String, body: String?, uns: Bool = false) async throws -> (Int, Data) {
        var request = HTTPClientRequest(url: base + path)
        request.method = method
        request.headers.add(name: "Authorization", value: "Bearer \(token)")
        if uns { request.headers.add(name: "X-UNS-ID", value: unsId) }
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(string: body))
        }
        let response = try await http.execute(request, timeout: .seconds(30))
        let data = Data(buffer: try await response.body.collect(upTo: 1 << 22))
        statuses.update { $0[Int(response.status.code), default: 0] += 1 }
        return (Int(response.status.code), data)
    }
}
