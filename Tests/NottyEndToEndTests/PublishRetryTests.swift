import Foundation
import Hummingbird
import HummingbirdTesting
import NottySync
import NottyTestSupport
import Testing

/// A real `notty serve` behind a front that answers the first publishes itself, as a busy
/// service does (`503` with `Retry-After`, then `429`), and passes everything else on.
final class BusyFront: Sendable {
    let target: String
    /// How many publishes are still answered as busy, and with what.
    let busy: Locked<[Int]>
    /// The publish bodies seen, busy or not.
    let publishes = Locked<[String]>([])

    init(target: String, busy: [Int]) {
        self.target = target
        self.busy = Locked(busy)
    }

    func application() -> some ApplicationProtocol {
        let router = Router()
        for method in [HTTPRequest.Method.get, .post] {
            router.on("**", method: method) { request, _ -> Response in
                let body = try await request.body.collect(upTo: 1 << 20)
                if request.uri.path == "/beta/me/notifications" {
                    self.publishes.update { $0.append(String(buffer: body)) }
                    let status = self.busy.update { $0.isEmpty ? nil : $0.removeFirst() }
                    if let status {
                        return Response(
                            status: .init(code: status), headers: [.retryAfter: "1", .contentType: "application/json"],
                            body: .init(byteBuffer: ByteBuffer(string: #"{"error":{"code":"serviceUnavailable","message":"busy"}}"#)))
                    }
                }
                var headers: [(String, String)] = []
                for field in request.headers where field.name != .contentLength { headers.append((field.name.canonicalName, field.value)) }
                let answer = try await ServiceClient.send(
                    .init(rawValue: request.method.rawValue), self.target + request.uri.description, headers: headers, body: Data(buffer: body))
                return Response(status: .init(code: answer.status), body: .init(byteBuffer: ByteBuffer(data: answer.body)))
            }
        }
        return Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
    }
}

@Suite("notty publish and a busy service", .timeLimit(.minutes(5)), .serialized)
struct PublishRetryTests {
    @Test(
        "a 503 and then a 429 are asked again after Retry-After with the same app notification id: one notification, printed once; busy three times is one line and exit 1"
    )
    func busyService() async throws {
        let directory = Repository.temporaryDirectory("notty-publish-retry")
        defer { try? FileManager.default.removeItem(at: directory) }
        let service = try await ServeProcess(directory: directory.appendingPathComponent("service"))
        let device = NottyCLI(home: directory.appendingPathComponent("device"))
        try await device.login(service.url)
        let uns = try await device.run(["subscribe", "--app", "ci.example.com"]).out.trimmingCharacters(in: .whitespacesAndNewlines)
        let front = BusyFront(target: service.url, busy: [503, 429])
        try await front.application().test(.live) { client in
            let port = try #require(client.port)
            func publish(_ title: String) async throws -> NottyCLI.Result {
                try await device.run([
                    "publish", "--server", "http://127.0.0.1:\(port)", "--client-id", service.clientId, "--client-secret=\(service.clientSecret)",
                    "--uns-id", uns, "--title", title,
                ])
            }
            let published = try await publish("Build failed")
            #expect(published.status == 0, "\(published.err)")
            let id = published.out.trimmingCharacters(in: .whitespacesAndNewlines)
            let seen = front.publishes.value.compactMap { body in
                (try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any])?["appNotificationId"] as? String
            }
            #expect(seen.count == 3 && Set(seen).count == 1, "\(seen)")
            #expect(try await device.run(["sync"]).status == 0)
            let listed = try await device.run(["list", "--json"])
            #expect(listed.out.components(separatedBy: "Build failed").count == 2, "one notification: \(listed.out)")
            #expect(listed.out.contains(id))

            front.busy.update { $0 = [503, 503, 503] }
            let refused = try await publish("Deploy failed")
            #expect(refused.status == 1)
            #expect(refused.err == "notty: the service refused the notification (503 serviceUnavailable): busy\n", "\(refused.err)")
            #expect(front.publishes.value.count == 6)
        }
        try await service.stop()
    }
}
