import AsyncHTTPClient
import Foundation
import HTTPTypes
import HummingbirdTesting
import HummingbirdWSClient
import Logging
import NIOCore
import NottyCore
import NottyTestSupport
import Synchronization
import Testing

@testable import NottyHTTP
@testable import NottyService
@testable import NottyServicePostgres
@testable import NottyServiceSQLite

/// The ntfy events a subscriber received, with when each came.
final class NtfyLog: Sendable {
    private let events = Mutex<[(event: JSONValue, at: ContinuousClock.Instant)]>([])
    private let ended = Atomic<Bool>(false)

    func append(_ line: String) {
        guard let value = JSONValue(jsonText: line) else { return }
        events.withLock { $0.append((value, .now)) }
    }

    func end() { ended.store(true, ordering: .relaxed) }
    var hasEnded: Bool { ended.load(ordering: .relaxed) }

    /// `(event, sequence_id)` of each event, in order.
    var kinds: [(String, String?)] {
        events.withLock { $0.map { entry in (entry.event.text("event") ?? "?", entry.event.text("sequence_id")) } }
    }

    /// When the first event `kind` for `sequenceId` came.
    func arrival(_ kind: String, _ sequenceId: String) -> ContinuousClock.Instant? {
        events.withLock { $0.first { $0.event.text("event") == kind && $0.event.text("sequence_id") == sequenceId }?.at }
    }

    func first(_ kind: String, _ sequenceId: String) -> JSONValue? {
        events.withLock { $0.first { $0.event.text("event") == kind && $0.event.text("sequence_id") == sequenceId }?.event }
    }

    /// Waits, bounded, for `condition`.
    func wait(timeout: Duration = .seconds(10), until condition: (NtfyLog) -> Bool) async -> Bool {
        await eventually(timeout: timeout) { condition(self) }
    }
}

extension JSONValue {
    func text(_ key: String) -> String? {
        if case .object(let object) = self, case .string(let text)? = object[key] { return text }
        return nil
    }
}

/// An NDJSON (`GET …/json`) or server-sent events (`…/sse`: its `data:` lines) subscriber in
/// the background; cancel the task to hang up.
func ntfyStream(_ url: String, log: NtfyLog, sse: Bool = false) -> Task<Void, any Error> {
    Task {
        defer { log.end() }
        let response = try await HTTPClient.shared.execute(HTTPClientRequest(url: url), timeout: .seconds(300))
        var pending = ""
        for try await buffer in response.body {
            pending += String(buffer: buffer)
            while let newline = pending.firstIndex(of: "\n") {
                let line = String(pending[..<newline])
                if !sse { log.append(line) } else if line.hasPrefix("data: ") { log.append(String(line.dropFirst(6))) }
                pending = String(pending[pending.index(after: newline)...])
            }
        }
    }
}

/// A WebSocket subscriber (`…/ws`) in the background.
func ntfyWebSocket(_ url: String, log: NtfyLog) -> Task<Void, any Error> {
    Task {
        defer { log.end() }
        try await WebSocketClient.connect(url: url, configuration: .init(maxFrameSize: 1 << 20), logger: Logger(label: "test.ntfy.ws")) {
            inbound, _, _ in
            for try await message in inbound.messages(maxSize: 1 << 20) {
                if case .text(let text) = message { log.append(text) }
            }
        }
    }
}

extension World {
    /// Makes an ntfy topic (`notty subscribe --ntfy`); returns its token and subscription id.
    func ntfyTopic(_ client: any TestClientProtocol) async throws -> (topic: String, id: String) {
        let made = try await client.call(.post, "/v1/me/subscriptions", token: userToken, json: #"{"platform":"ntfy","deviceName":"phone"}"#)
        guard made.status == .created, let url = made.string("topicUrl") else { throw SupportError("ntfy topic: \(made.status) \(made.text)") }
        return (String(url.split(separator: "/").last!), made.string("userNotificationSubscriptionId")!)
    }
}

@Suite("Following the inbox as an ntfy topic (PROTOCOL.md §8.2)", .timeLimit(.minutes(5)), .serialized)
struct NtfyTopicTests {
    @Test(
        "an NDJSON and a WebSocket subscriber see message, then message_clear after a read elsewhere, then message_delete after a delete; poll and since replay Unread; revoked, the streams end and the topic is 404",
        arguments: Backend.available)
    func followers(backend: Backend) async throws {
        let harness = try await ServiceHarness(backend)
        try await harness.live { client in
            let port = try #require(client.port)
            let world = try await harness.world(client)
            let (topic, topicId) = try await world.ntfyTopic(client)
            let hookPath = try await world.webhook(client).path
            let hookToken = String(hookPath.split(separator: "/").last!)

            #expect(try await client.call(.get, "/\(topic)/auth").string("error") == nil)
            #expect(try await client.call(.get, "/\(topic)/auth").text.contains("\"success\":true"))
            #expect(try await client.call(.get, "/\(hookToken)/json").status == .forbidden, "a hook token subscribed")
            #expect(try await client.call(.post, "/\(topic)", body: Data("x".utf8), headers: [:]).status == .forbidden, "a topic published")
            #expect(try await client.call(.get, "/not-a-topic/json").status == .notFound)

            let before = try #require(try await world.publish(client, id: "before").string("id"))
            let ndjson = NtfyLog(), socket = NtfyLog(), events = NtfyLog()
            let tasks = [
                ntfyStream("http://127.0.0.1:\(port)/\(topic)/json", log: ndjson), ntfyWebSocket("ws://127.0.0.1:\(port)/\(topic)/ws", log: socket),
                ntfyStream("http://127.0.0.1:\(port)/\(topic)/sse", log: events, sse: true),
            ]
            defer { for task in tasks { task.cancel() } }
            for log in [ndjson, socket, events] {
                #expect(await log.wait { $0.kinds.first?.0 == "open" }, "no open event: \(log.kinds)")
            }

            // The hub's tick (every 45 s, from the maintenance loop) is each stream's keepalive.
            // Ticked until each has one: a stream writes its open event a moment before the hub
            // counts it, and at the peak of a full run a single tick fell in that moment.
            for log in [ndjson, socket, events] {
                let kept = await eventually(timeout: .seconds(30), every: .milliseconds(200)) {
                    harness.service.hub.tick()
                    return log.kinds.contains { $0.0 == "keepalive" }
                }
                #expect(kept, "no keepalive: \(log.kinds)")
            }

            let published = try await world.publish(client, id: "deploy", title: "Deploy failed")
            let id = try #require(published.string("id"))
            for log in [ndjson, socket, events] {
                #expect(await log.wait { $0.first("message", id) != nil }, "no message: \(log.kinds)")
                let message = try #require(log.first("message", id))
                #expect(message.text("title") == "Deploy failed")
                #expect(message.text("message") == "main is red")
                #expect(message.text("topic") == topic)
            }

            let read = ContinuousClock.now
            #expect(try await client.call(.patch, "/v1/me/notifications/\(id)", token: world.userToken, json: #"{"readState":"Read"}"#).status == .ok)
            for (name, log) in [("NDJSON", ndjson), ("WebSocket", socket), ("SSE", events)] {
                #expect(await log.wait { $0.arrival("message_clear", id) != nil }, "no message_clear: \(log.kinds)")
                if let at = log.arrival("message_clear", id) { print("message_clear at the \(name) subscriber \(at - read) after the read") }
            }
            #expect(try await client.call(.delete, "/v1/me/notifications/\(before)", token: world.userToken).status == .noContent)
            for log in [ndjson, socket, events] {
                #expect(await log.wait { $0.first("message_delete", before) != nil }, "no message_delete: \(log.kinds)")
                // Only "deploy" was announced on the stream; "before" was in Unread at the start.
                #expect(log.kinds.filter { $0.0 == "message" }.map(\.1) == [id])
            }

            // poll=1 and since=all replay what is in Unread now, oldest first.
            _ = try await world.publish(client, id: "later", title: "Later")
            let polled = try await client.call(.get, "/\(topic)/json?poll=1")
            let lines = polled.text.split(separator: "\n").compactMap { JSONValue(jsonText: String($0)) }
            #expect(lines.map { $0.text("title") } == ["Later"], "\(polled.text)")
            #expect(lines.allSatisfy { $0.text("event") == "message" }, "\(polled.text)")
            let sinceAll = try await client.call(.get, "/\(topic)/json?poll=1&since=all")
            #expect(sinceAll.text == polled.text, "a replay changed between two polls")
            let future = Int(Date().timeIntervalSince1970) + 3600
            #expect(try await client.call(.get, "/\(topic)/json?poll=1&since=\(future)").text.isEmpty, "since= a later time replayed something")
            #expect(try await client.call(.get, "/\(topic)/json?poll=1&since=0").text == polled.text)

            #expect(try await client.call(.delete, "/v1/me/subscriptions/\(topicId)", token: world.userToken).status == .noContent)
            for log in [ndjson, socket, events] {
                #expect(await log.wait { $0.hasEnded }, "the stream of a revoked topic did not end")
            }
            #expect(try await client.call(.get, "/\(topic)/auth").status == .notFound)
            #expect(try await client.call(.get, "/\(topic)/json?poll=1").status == .notFound)
        }
    }

    @Test(
        "a phone's message carries Dismiss and the publisher's actions as ntfy buttons pointing back at the service under the topic's URL; pressed as the ntfy app does, Dismiss dismisses everywhere and an http action runs on the service",
        arguments: Backend.available)
    func phonesAct(backend: Backend) async throws {
        let target = ActionTarget()
        let harness = try await ServiceHarness(backend, outbound: target) { $0.publicURL = "https://notty.example.com" }
        try await harness.router { client in
            let world = try await harness.world(client)
            let (topic, _) = try await world.ntfyTopic(client)
            let id = try #require(try await world.publish(client, id: "disk", title: "Disk full", extra: actionsExtra).string("id"))
            let plain = try #require(try await world.publish(client, id: "plain", title: "Backup done").string("id"))
            let polled = try await client.call(.get, "/\(topic)/json?poll=1")
            #expect(!polled.text.contains("s3cret") && !polled.text.contains("api/v2/silences"), "\(polled.text)")
            let messages = polled.text.split(separator: "\n").compactMap { JSONValue(jsonText: String($0)) }
            let disk = try #require(messages.first { $0.text("sequence_id") == id }, "\(polled.text)")
            func member(_ value: JSONValue?, _ key: String) -> JSONValue? { if case .object(let o)? = value { o[key] } else { nil } }
            guard case .array(let buttons)? = member(disk, "actions") else { Issue.record("no actions: \(polled.text)"); return }
            let base = "https://notty.example.com/\(topic)/notty/\(id)"
            #expect(buttons.map { $0.text("label") } == ["Dismiss", "Silence 1h", "Runbook"])
            #expect(buttons.map { $0.text("action") } == ["http", "http", "view"])
            #expect(buttons.map { $0.text("url") } == ["\(base)/dismiss", "\(base)/act/1", "https://wiki.example.com/runbook"])
            #expect(member(buttons[0], "clear") == .bool(true) && member(buttons[1], "clear") == .bool(true))
            guard case .array(let plainButtons)? = member(messages.first { $0.text("sequence_id") == plain }, "actions") else {
                Issue.record("no Dismiss on a notification without actions: \(polled.text)"); return
            }
            #expect(plainButtons.map { $0.text("label") } == ["Dismiss"])

            // Pressed as the ntfy app does: the method and URL of the button, no body.
            func press(_ button: JSONValue) async throws -> Reply {
                let url = try #require(button.text("url"))
                let path = String(url.dropFirst("https://notty.example.com".count))
                let name = try #require(button.text("method"))
                let method = try #require(HTTPRequest.Method(name))
                return try await client.call(method, path, body: Data(), headers: [:])
            }
            let silenced = try await press(buttons[1])
            #expect(silenced.status == .ok && silenced.string("status") == "done", "\(silenced.text)")
            #expect(target.requests.map(\.url) == ["http://127.0.0.1:9/api/v2/silences"])
            let after = try await world.notification(client, id)
            #expect(after.userActionState == .dismissed && after.actionResults?.first?.device == "phone")
            let dismissed = try await press(plainButtons[0])
            #expect(dismissed.status == .ok, "\(dismissed.text)")
            let handled = try await world.notification(client, plain)
            #expect(handled.userActionState == .dismissed && handled.readState == .read)
            // A wrong topic or id is ntfy's error, and changes nothing.
            #expect(try await client.call(.post, "/not-a-topic/notty/\(plain)/dismiss", body: Data(), headers: [:]).status == .notFound)
            #expect(try await client.call(.post, "/\(topic)/notty/no-such-id/dismiss", body: Data(), headers: [:]).status == .notFound)
            #expect(try await client.call(.post, "/\(topic)/notty/\(id)/act/9", body: Data(), headers: [:]).status == .badRequest)
        }
    }

    @Test(
        "--ntfy-upstream: each message to a topic sends the upstream ntfy's poll request (the SHA-256 of the topic's URL, X-Poll-ID, the token, no body), retried when it fails, never holding up a publish; poll=1&id= answers that one message"
    )
    func upstreamWakesIPhones() async throws {
        let upstream = ActionTarget(status: 500, delay: .milliseconds(500))
        let harness = try await ServiceHarness(.sqlite, outbound: upstream) { config in
            config.publicURL = "https://notty.example.com"
            config.ntfyUpstream = "https://ntfy.example.net/"
            config.ntfyUpstreamToken = "tk_upstream"
        }
        try await harness.router { client in
            let world = try await harness.world(client)
            let (topic, _) = try await world.ntfyTopic(client)
            let started = ContinuousClock.now
            let id = try #require(try await world.publish(client, id: "door", title: "Front door").string("id"))
            #expect(started.duration(to: .now) < .seconds(30))  // not the upstream's 500 ms, let alone its retries
            // The hash by another hand than the code's: sha256sum.
            let folder = Repository.temporaryDirectory("notty-upstream")
            defer { try? FileManager.default.removeItem(at: folder) }
            let file = folder.appendingPathComponent("url")
            try Data("https://notty.example.com/\(topic)".utf8).write(to: file)
            let hash = try #require(try await Repository.run(["sha256sum", file.path]).output.split(separator: " ").first.map(String.init))
            #expect(await eventually(timeout: .seconds(20)) { !upstream.requests.isEmpty }, "no poll request")
            let request = try #require(upstream.requests.first)
            #expect(request.method == "POST" && request.url == "https://ntfy.example.net/\(hash)", "\(request.url)")
            #expect(request.body?.isEmpty ?? true)
            #expect(!request.url.contains(topic))
            #expect(request.headers.contains(OutboundHeader("Authorization", "Bearer tk_upstream")))
            let pollId = try #require(request.headers.first { $0.name == "X-Poll-ID" }?.value)
            // Failing (500), it is tried again.
            #expect(await eventually(timeout: .seconds(60)) { upstream.requests.count >= 2 }, "not retried: \(upstream.requests.count)")
            upstream.status.withLock { $0 = 200 }
            // What the woken phone asks for: that one message.
            _ = try await world.publish(client, id: "other", title: "Other")
            let answer = try await client.call(.get, "/\(topic)/json?poll=1&id=\(pollId)")
            let lines = answer.text.split(separator: "\n").compactMap { JSONValue(jsonText: String($0)) }
            #expect(lines.count == 1, "\(answer.text)")
            #expect(
                lines.first?.text("id") == pollId && lines.first?.text("sequence_id") == id && lines.first?.text("title") == "Front door",
                "\(answer.text)")
        }
    }

    @Test(
        "a topic revoked through one instance ends its stream on another at once",
        .enabled(if: TestPostgres.testsRun, "PostgreSQL is not available here"))
    func revokedElsewhere() async throws {
        let one = try await ServiceHarness(.postgres)
        let two = try await ServiceHarness(sharingDatabaseOf: one)
        try await one.router { c1 in
            try await two.live { c2 in
                let world = try await one.world(c1)
                let (topic, topicId) = try await world.ntfyTopic(c1)
                let log = NtfyLog()
                let stream = ntfyStream("http://127.0.0.1:\(try #require(c2.port))/\(topic)/json", log: log)
                defer { stream.cancel() }
                #expect(await log.wait { $0.kinds.first?.0 == "open" }, "no open event")
                let revoked = ContinuousClock.now
                #expect(try await c1.call(.delete, "/v1/me/subscriptions/\(topicId)", token: world.userToken).status == .noContent)
                #expect(await log.wait(timeout: .seconds(20)) { $0.hasEnded }, "the stream on the other instance did not end")
                print("a topic revoked through instance one: its stream on instance two ended \(ContinuousClock.now - revoked) later")
                #expect(try await c2.call(.get, "/\(topic)/auth").status == .notFound)
            }
        }
    }

    @Test("when the service stops, each NDJSON and SSE stream ends its response (not a cut connection), and leaves the hub")
    func streamsEndOnStop() async throws {
        let harness = try await ServiceHarness()
        try await harness.live { client in
            let world = try await harness.world(client)
            let (topic, _) = try await world.ntfyTopic(client)
            let port = try #require(client.port)
            let ndjson = NtfyLog(), events = NtfyLog()
            let streams = [
                ntfyStream("http://127.0.0.1:\(port)/\(topic)/json", log: ndjson),
                ntfyStream("http://127.0.0.1:\(port)/\(topic)/sse", log: events, sse: true),
            ]
            for log in [ndjson, events] { #expect(await log.wait { $0.kinds.first?.0 == "open" }, "no open event: \(log.kinds)") }
            #expect(harness.service.hub.connectionCount == 2)
            // After 30 s the test hangs up instead (the task then throws).
            let deadline = Task {
                try await Task.sleep(for: .seconds(30))
                for stream in streams { stream.cancel() }
            }
            defer { deadline.cancel() }
            harness.service.hub.closeAll()  // what a graceful stop does
            for stream in streams {
                // A response that ends returns; one cut mid-body throws.
                await #expect(throws: Never.self) { try await stream.value }
            }
            #expect(harness.service.hub.connectionCount == 0)
        }
    }

    @Test("a stream outlives the idle timeout of kept-alive connections: its request is in progress")
    func outlivesIdleTimeout() async throws {
        let harness = try await ServiceHarness { $0.connections.idleTimeout = .seconds(1) }
        try await harness.live { client in
            let world = try await harness.world(client)
            let (topic, _) = try await world.ntfyTopic(client)
            let log = NtfyLog()
            let stream = ntfyStream("http://127.0.0.1:\(try #require(client.port))/\(topic)/json", log: log)
            defer { stream.cancel() }
            #expect(await log.wait { $0.kinds.first?.0 == "open" }, "no open event")
            try await Task.sleep(for: .seconds(3))  // three idle timeouts with nothing sent either way
            // Published on a new connection (the test client's own kept-alive one was closed).
            var request = HTTPClientRequest(url: "http://127.0.0.1:\(try #require(client.port))/beta/me/notifications")
            request.method = .POST
            request.headers.add(name: "Authorization", value: "Bearer \(world.appToken)")
            request.headers.add(name: "X-UNS-ID", value: world.unsId)
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(string: #"{"appNotificationId":"late","payload":{"visualContent":{"title":"Late"}}}"#))
            let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
            let answer = JSONValue(jsonText: String(buffer: try await response.body.collect(upTo: 1 << 20)))
            let id = try #require(answer?.text("id"), "publish answered \(response.status)")
            #expect(await log.wait { $0.first("message", id) != nil }, "the stream was cut: \(log.kinds), ended \(log.hasEnded)")
            #expect(!log.hasEnded)
        }
    }
}
