import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NottyOutbound
import NottyService
import Testing

/// A real HTTP server on loopback that the outbound client talks to.
func peer() -> some ApplicationProtocol {
    let router = Router()
    router.post("/echo") { request, _ -> Response in
        let body = try await request.body.collect(upTo: 1 << 20)
        let token = request.headers[HTTPField.Name("X-Token")!] ?? "-"
        return Response(
            status: .created, headers: [.contentType: "text/plain"],
            body: .init(byteBuffer: ByteBuffer(string: "\(request.method.rawValue) \(token) \(String(buffer: body))")))
    }
    router.get("/slow") { _, _ -> String in
        try await Task.sleep(for: .seconds(5))
        return "late"
    }
    router.get("/big") { _, _ -> ByteBuffer in ByteBuffer(repeating: UInt8(ascii: "x"), count: 1 << 20) }
    router.get("/moved") { _, _ -> Response in Response(status: .found, headers: [.location: "/echo"]) }
    return Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
}

@Suite("The service's outbound HTTP (AsyncHTTPClient against a real server on loopback)", .timeLimit(.minutes(2)))
struct OutboundTests {
    @Test("a request goes out with its method, headers and body; the answer's status and body come back; a redirect is not followed")
    func roundTrip() async throws {
        let outbound = HTTPClientOutbound()
        try await peer().test(.live) { client in
            let base = "http://127.0.0.1:\(try #require(client.port))"
            let echoed = try await outbound.send(
                OutboundRequest(method: "post", url: base + "/echo", headers: [OutboundHeader("X-Token", "s3cret")], body: Data("silence 1h".utf8)))
            #expect(echoed.status == 201)
            #expect(echoed.succeeded)
            #expect(String(decoding: echoed.body, as: UTF8.self) == "POST s3cret silence 1h")
            #expect(echoed.header("content-type") == "text/plain")
            let moved = try await outbound.send(OutboundRequest(method: "GET", url: base + "/moved"))
            #expect(moved.status == 302, "a redirect is the answer, not followed")
            #expect(moved.header("Location") == "/echo")
        }
        await outbound.shutdown()
    }

    @Test("at most 64 KiB of an answer is read")
    func bodyBounded() async throws {
        let outbound = HTTPClientOutbound()
        try await peer().test(.live) { client in
            let big = try await outbound.send(OutboundRequest(method: "GET", url: "http://127.0.0.1:\(try #require(client.port))/big"))
            #expect(big.status == 200)
            #expect(big.body.count == 64 << 10)
        }
        await outbound.shutdown()
    }

    @Test("no answer within the timeout, a refused connection and a URL that is not http(s) are each their own error")
    func failures() async throws {
        let outbound = HTTPClientOutbound()
        try await peer().test(.live) { client in
            // The peer answers after 5 s: 16 times the timeout.
            let slow = OutboundRequest(method: "GET", url: "http://127.0.0.1:\(try #require(client.port))/slow", timeout: .milliseconds(300))
            await #expect(throws: OutboundError.timedOut(.milliseconds(300))) { try await outbound.send(slow) }
        }
        do {
            _ = try await outbound.send(OutboundRequest(method: "GET", url: "http://127.0.0.1:1/"))
            Issue.record("a request to a closed port was answered")
        } catch {
            guard case .unreachable(let reason) = error else { Issue.record("\(error)"); return }
            #expect(reason.contains("refused"), "\(reason)")
            #expect(error.isWorthRetrying)
        }
        for url in ["ftp://example.com/x", "not a url", "http://", "/relative"] {
            await #expect(throws: OutboundError.invalidURL(url)) { try await outbound.send(OutboundRequest(method: "GET", url: url)) }
        }
        #expect(!OutboundError.invalidURL("x").isWorthRetrying)
        await outbound.shutdown()
    }

    @Test("the recording implementation keeps every request and answers as told")
    func recording() async throws {
        let recording = RecordingOutbound { request in
            request.url.hasSuffix("/down") ? .failure(.unreachable("connection refused")) : .success(OutboundResponse(status: 503))
        }
        let answer = try await recording.send(OutboundRequest(method: "PUT", url: "https://ntfy.example/alerts/abc/clear"))
        #expect(answer.status == 503)
        #expect(answer.isWorthRetrying)
        await #expect(throws: OutboundError.unreachable("connection refused")) {
            try await recording.send(OutboundRequest(method: "POST", url: "https://hooks.example/down", body: Data("{}".utf8)))
        }
        #expect(recording.requests.map(\.method) == ["PUT", "POST"])
        #expect(recording.requests.last?.body == Data("{}".utf8))
    }
}
