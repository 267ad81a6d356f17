import Foundation
import HTTPTypes
import HummingbirdWSClient
import Logging
import NIOCore
import NIOPosix
import NottyCore
import NottyPOSIX
import NottyTestSupport
import Synchronization

/// `notty-bench ntfy`, on one real `notty serve` (SQLite):
///
/// - ntfy text publishes per second (`POST /TOKEN`, a text body and ntfy's headers) beside
///   the Graph publish route of the same server in the same run (measured before and after);
/// - a dismiss on a device (`PATCH` with the user's token) → `message_clear` at an ntfy
///   WebSocket subscriber of a `--ntfy` topic, one after another;
/// - the service's resident memory per idle ntfy subscriber (`GET /TOPIC/json` streams,
///   then `/TOPIC/ws` WebSockets), beside the same for idle doorbells (`/v1/me/push`).
struct NtfyBench {
    let service: ServiceBench
    var subscribers = 10_000

    /// The service's `--max-connections` for this benchmark (the idle subscribers and more).
    static let connections = ["--max-connections", "15000"]

    func run(quick: Bool) async throws {
        let seconds = quick ? 3.0 : 10.0
        let hook = try await make(#"{"targetHostName":"ci.example.com","platform":"webhook"}"#, field: "webhookUrl")
        let topic = try await make(#"{"platform":"ntfy","deviceName":"bench phone"}"#, field: "topicUrl")
        print(
            "notty-bench ntfy — real `notty serve` (SQLite, WAL, synchronous=FULL), 64 keep-alive clients, \(Int(seconds)) s each after 1 s of warm-up, \(ProcessInfo.processInfo.activeProcessorCount) cores"
        )

        func ntfy(tag: String, seconds: Double) async throws -> HTTPLoad.Result {
            try await HTTPLoad.run(servers: [service.base], clients: 64, seconds: seconds, expect: 200) { client, n, host in
                let body = "Backup \(tag)\(client)-\(n) finished on nas-1 in 4 min"
                return "POST /\(hook) HTTP/1.1\r\nHost: \(host)\r\nTitle: Backup \(tag)\(client)-\(n)\r\nPriority: high\r\nTags: floppy_disk\r\n"
                    + "Content-Length: \(body.utf8.count)\r\n\r\n\(body)"
            }
        }
        _ = try await service.throughput(seconds: 1, tag: "warm")
        let before = try await service.throughput(seconds: seconds, tag: "p1-")
        _ = try await ntfy(tag: "warm", seconds: 1)
        let text = try await ntfy(tag: "n", seconds: seconds)
        let after = try await service.throughput(seconds: seconds, tag: "p2-")
        print(
            String(
                format: "publish route (POST /beta/me/notifications): %.0f/s before, %.0f/s after (%d, %d non-201)", before.rate, after.rate,
                before.other, after.other))
        print(
            String(
                format: "ntfy text publish (POST /TOKEN with Title, Priority, Tags): %.0f/s (%d non-200); %.0f%% of the publish route",
                text.rate, text.other, 100 * text.rate / max(1, (before.rate + after.rate) / 2)))

        let clears = try await clearLatencies(topic: topic, count: quick ? 200 : 1000)
        print(
            String(
                format:
                    "dismiss (PATCH) → message_clear at an ntfy WebSocket subscriber (%d, one after another): p50 %.2f ms, p99 %.2f ms, max %.2f ms",
                clears.count, percentile(clears, 50), percentile(clears, 99), clears.max() ?? 0))

        // Each kind on a fresh service (of its own user, with nothing in Unread), so one kind's
        // freed memory is not another's.
        let count = quick ? 1000 : subscribers
        for kind in ["ntfy NDJSON subscribers (GET /TOPIC/json)", "ntfy WebSocket subscribers (/TOPIC/ws)", "doorbells (/v1/me/push)"] {
            let fresh = try await ServiceBench.start(extraArguments: Self.connections)
            do {
                let other = NtfyBench(service: fresh)
                let topic = try await other.make(#"{"platform":"ntfy","deviceName":"bench phone"}"#, field: "topicUrl")
                let request =
                    kind.hasPrefix("ntfy NDJSON")
                    ? "GET /\(topic)/json HTTP/1.1\r\nHost: bench\r\n\r\n"
                    : kind.hasPrefix("ntfy WebSocket")
                        ? Self.upgrade("/\(topic)/ws", authorization: nil) : Self.upgrade("/v1/me/push", authorization: fresh.userToken)
                let (perConnection, open, baseline) = try await other.idleMemory(count: count, request: request)
                print(
                    String(
                        format: "%@: %d idle, %.1f KiB of the service's resident memory each (from %.1f MiB)", kind, open, perConnection / 1024,
                        Double(baseline) / 1_048_576))
            } catch {
                print("\(kind): failed: \(error)")
            }
            await fresh.stop()
        }
    }

    /// A subscription of the bench's user made with `body`; the last part of the URL in `field`.
    private func make(_ body: String, field: String) async throws -> String {
        let (status, text) = try await service.request(.POST, "/v1/me/subscriptions", token: service.userToken, body: body)
        guard status == 201, case .object(let object)? = JSONValue(jsonText: text), case .string(let url)? = object[field],
            let last = url.split(separator: "/").last
        else { throw SupportError("subscription answered \(status): \(text)") }
        return String(last)
    }

    /// Milliseconds from sending a dismiss to its `message_clear` at a WebSocket subscriber.
    private func clearLatencies(topic: String, count: Int) async throws -> [Double] {
        let events = AsyncStream<JSONValue>.makeStream()
        let phone = Task {
            try await WebSocketClient.connect(
                url: "ws://127.0.0.1:\(service.port)/\(topic)/ws", configuration: .init(maxFrameSize: 1 << 20),
                logger: Logger(label: "bench")
            ) { inbound, _, _ in
                for try await message in inbound.messages(maxSize: 1 << 20) {
                    if case .text(let text) = message, let value = JSONValue(jsonText: text) { events.continuation.yield(value) }
                }
            }
        }
        defer { phone.cancel() }
        var iterator = events.stream.makeAsyncIterator()
        func next(_ event: String, _ id: String?) async -> Bool {
            while let value = await iterator.next() {
                if case .object(let object) = value, object["event"] == .string(event), id == nil || object["sequence_id"] == .string(id!) {
                    return true
                }
            }
            return false
        }
        guard await next("open", nil) else { throw SupportError("the ntfy WebSocket subscriber got no open event") }
        var latencies: [Double] = []
        for i in 0..<count {
            let (status, text) = try await service.request(
                .POST, "/beta/me/notifications", token: service.appToken,
                body: ServiceBench.publishBody("clear-\(i)"), headers: [("X-UNS-ID", service.unsId)])
            guard status == 201, case .object(let object)? = JSONValue(jsonText: text), case .string(let id)? = object["id"] else {
                throw SupportError("publish answered \(status): \(text)")
            }
            guard await next("message", id) else { break }
            let start = ContinuousClock.now
            async let patched = service.request(
                .PATCH, "/v1/me/notifications/\(id)", token: service.userToken, body: #"{"userActionState":"Dismissed"}"#)
            guard await next("message_clear", id) else { break }
            latencies.append((ContinuousClock.now - start).seconds * 1000)
            _ = try await patched
        }
        return latencies
    }

    /// A WebSocket upgrade request for `path`.
    static func upgrade(_ path: String, authorization: String?) -> String {
        "GET \(path) HTTP/1.1\r\nHost: bench\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
            + (authorization.map { "Authorization: Bearer \($0)\r\n" } ?? "") + "\r\n"
    }

    /// Opens `count` raw connections that each send `request` and then only read; returns the
    /// growth of the service's resident memory per connection once they are all answered, and
    /// how many were open then. The connections are closed afterwards.
    private func idleMemory(count: Int, request: String) async throws -> (Double, Int, Int) {
        guard let pid = service.serve.process?.pid else { throw SupportError("no service process") }
        try await Task.sleep(for: .seconds(1))
        let baseline = memory(pid: pid).resident
        let answered = Counter()
        var channels: [any Channel] = []
        for _ in 0..<count {
            let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(FirstBytes(answered: answered)) }
                }
                .connect(host: "127.0.0.1", port: service.port).get()
            channel.writeAndFlush(ByteBuffer(string: request), promise: nil)
            channels.append(channel)
        }
        let deadline = ContinuousClock.now + .seconds(120)
        while answered.value.load(ordering: .relaxed) < count && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(50)) }
        try await Task.sleep(for: .seconds(2))
        let open = channels.filter(\.isActive).count
        let grown = memory(pid: pid).resident - baseline
        for channel in channels { try? await channel.close() }
        try await Task.sleep(for: .seconds(2))
        return (Double(grown) / Double(max(1, open)), open, baseline)
    }

    /// Counts a connection once its first bytes (the answer's head) arrive; ignores the rest.
    final class FirstBytes: ChannelInboundHandler, @unchecked Sendable {
        typealias InboundIn = ByteBuffer
        let answered: Counter
        var seen = false
        init(answered: Counter) { self.answered = answered }
        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            if !seen {
                seen = true
                answered.value.add(1, ordering: .relaxed)
            }
        }
    }

    final class Counter: Sendable {
        let value = Atomic<Int>(0)
    }
}
