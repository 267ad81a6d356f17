import Crypto
import Foundation
import Hummingbird
import NIOCore
import NottyCore
import NottySecrets
import NottyService
import NottyTestSupport
import NottyWebPush

/// Web Push's figures (PROTOCOL.md §14) on one real `notty serve` (SQLite): a stand-in push
/// service in this process, on loopback, opens every push with the subscription's key (as a
/// browser would) and notes when it arrived.
/// - publish → its push at the push service: one subscription, High notifications published
///   one after another;
/// - fan-out: 1,000 subscriptions of one user (a browser each), one publish → the last of its
///   1,000 pushes.
struct WebPushBench {
    let service: ServiceBench
    let publishes: Int
    let fanOut: Int

    /// The stand-in push service: each push opened, its notification's id and arrival noted.
    final class PushService: @unchecked Sendable {
        let browserKey = P256.KeyAgreement.PrivateKey()
        let auth = Data((0..<16).map { _ in UInt8.random(in: 0...255) })
        let arrivals = Locked<[(id: String, at: ContinuousClock.Instant)]>([])
        let failures = Locked<[String]>([])

        func application(port: Locked<Int?>) -> some ApplicationProtocol {
            let router = Router()
            router.post("/push/:n") { request, _ -> HTTPResponse.Status in
                let body = try await request.body.collect(upTo: 8192)
                let at = ContinuousClock.now
                do {
                    let plain = try WebPushCrypto.decrypt(Data(buffer: body), browserKey: self.browserKey, auth: self.auth)
                    let message = try NottyJSON.decoder.decode(WebPushMessage.self, from: plain)
                    if let id = message.notification?.id { self.arrivals.update { $0.append((id, at)) } }
                } catch {
                    self.failures.update { $0.append("\(error)") }
                }
                return .created
            }
            return Application(
                router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
                onServerRunning: { channel in port.update { $0 = channel.localAddress?.port } })
        }

        func count(_ id: String) -> Int { arrivals.update { $0.filter { $0.id == id }.count } }
    }

    func run() async throws {
        let pushService = PushService()
        let portBox = Locked<Int?>(nil)
        let server = pushService.application(port: portBox)
        let serverTask = Task { try await server.runService(gracefulShutdownSignals: []) }
        defer { serverTask.cancel() }
        let port = try await waitFor(.seconds(10)) { portBox.update { $0 } }
        print(
            "notty-bench webpush — real `notty serve` (SQLite, WAL, synchronous=FULL), a stand-in push service on loopback that opens every push (RFC 8291) with the browser's key, \(ProcessInfo.processInfo.activeProcessorCount) cores"
        )

        let storage = try await service.openStorage()
        guard let alice = try await storage.user(name: "alice") else { throw SupportError("no alice") }
        try await Self.subscribe(storage, 0, alice: alice.id, port: port, pushService: pushService)
        try await storage.close()
        // Restarted, the service knows the subscription from its first moment.
        await service.serve.stop()
        try await service.serve.start(port: service.port, extraArguments: ServiceBench.unlimited + ["--webpush-allow", "http://127.0.0.1:"])

        func publish(_ key: String) async throws -> (id: String, at: ContinuousClock.Instant) {
            let body = #"{"appNotificationId":"\#(key)","priority":"High","payload":{"visualContent":{"title":"Disk full \#(key)","body":"db-1"}}}"#
            let at = ContinuousClock.now
            let (status, text) = try await service.request(
                .POST, "/beta/me/notifications", token: service.appToken, body: body, headers: [("X-UNS-ID", service.unsId)])
            guard status == 201, case .object(let o)? = JSONValue(jsonText: text), case .string(let id)? = o["id"] else {
                throw SupportError("publish answered \(status): \(text)")
            }
            return (id, at)
        }

        // Warm: the key is made, the connection to the push service opened.
        for n in 0..<10 {
            let (id, _) = try await publish("warm-\(n)")
            _ = try await waitFor(.seconds(30)) { pushService.count(id) > 0 ? true : nil }
        }
        var latencies: [Double] = []
        for n in 0..<publishes {
            let (id, at) = try await publish("one-\(n)")
            let arrived = try await waitFor(.seconds(30)) { pushService.arrivals.update { $0.first { $0.id == id }?.at } }
            latencies.append((arrived - at).seconds * 1000)
        }
        print("publish → its push at the push service, 1 subscription: \(summary(latencies))")

        // 1,000 browsers of one user: one publish, every push.
        let more = try await service.openStorage()
        for n in 1..<fanOut { try await Self.subscribe(more, n, alice: alice.id, port: port, pushService: pushService) }
        try await more.close()
        await service.serve.stop()
        try await service.serve.start(port: service.port, extraArguments: ServiceBench.unlimited + ["--webpush-allow", "http://127.0.0.1:"])
        let (warmId, _) = try await publish("fan-warm")
        _ = try await waitFor(.seconds(60)) { pushService.count(warmId) == fanOut ? true : nil }
        var fans: [Double] = []
        for round in 0..<3 {
            let (id, at) = try await publish("fan-\(round)")
            _ = try await waitFor(.seconds(120)) { pushService.count(id) == fanOut ? true : nil }
            let last = pushService.arrivals.update { $0.filter { $0.id == id }.map(\.at).max() } ?? at
            fans.append((last - at).seconds * 1000)
        }
        print(
            "one publish → the last of its pushes to \(fanOut) subscriptions: "
                + fans.map { String(format: "%.0f ms", $0) }.joined(separator: ", ")
                + String(format: " (%.0f pushes a second)", Double(fanOut) / ((fans.min() ?? 1) / 1000)))
        let failed = pushService.failures.update { $0 }
        print("pushes that did not open: \(failed.count)" + (failed.first.map { " (\($0))" } ?? ""))
    }

    static func subscribe(_ storage: any ServiceStorage, _ n: Int, alice: String, port: Int, pushService: PushService) async throws {
        let position = try await storage.latestSeq(userId: alice)
        _ = try await storage.upsertWebPushSubscription(
            WebPushSubscription(
                id: "wp-bench-\(n)", userId: alice, endpoint: "http://127.0.0.1:\(port)/push/\(n)",
                p256dh: pushService.browserKey.publicKey.x963Representation.base64URL, auth: Sealed(stored: pushService.auth.base64URL),
                position: position,
                created: Date()), limit: 100_000)
    }
}
