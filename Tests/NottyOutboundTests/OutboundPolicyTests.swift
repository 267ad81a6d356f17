import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NottyOutbound
import NottyService
import Synchronization
import Testing

/// A resolver that knows only the names it is given (nothing is asked of the system's).
func names(_ table: [String: [[UInt8]]]) -> OutboundPolicy.Resolver {
    { table[$0] ?? [] }
}

/// What a ``recorder(_:)`` was asked, in order.
final class Seen: Sendable {
    let lines = Mutex<[String]>([])
    func withLock<T>(_ body: (inout [String]) -> T) -> T { lines.withLock { body(&$0) } }
}

/// A loopback server that answers every request with what it was asked, and counts them.
func recorder(_ seen: Seen) -> some ApplicationProtocol {
    let router = Router()
    router.get("/**") { request, _ -> Response in
        let line = "\(request.uri.path) Host=\(request.head.authority ?? "-")"
        seen.withLock { $0.append(line) }
        if request.uri.path == "/moved" { return Response(status: .found, headers: [.location: "http://169.254.169.254/latest/meta-data/"]) }
        return Response(status: .ok, body: .init(byteBuffer: ByteBuffer(string: line)))
    }
    router.post("/**") { request, _ -> String in
        seen.withLock { $0.append(request.uri.path) }
        return "ok"
    }
    return Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
}

@Suite("The outbound policy: every address a user aims, checked once, connected to as checked", .timeLimit(.minutes(2)))
struct OutboundPolicyTests {
    static let own = OutboundPolicy.Listener(host: "0.0.0.0", port: 8787)

    @Test(
        "refused before any lookup, with the reason in words: link-local, unspecified, multicast, their IPv6 forms, the service's own",
        arguments: [
            ("http://169.254.169.254/latest/meta-data/", "link-local"), ("https://169.254.1.1:8443/x", "link-local"),
            ("http://[fe80::1]/", "link-local"), ("http://[fe80::1%25eth0]:80/", "link-local"),
            ("http://[::ffff:169.254.169.254]/", "link-local"), ("http://[::ffff:a9fe:a9fe]/", "link-local"),
            ("http://[::169.254.169.254]/", "link-local"), ("http://[64:ff9b::169.254.169.254]/", "link-local"),
            ("http://2852039166/", "link-local"), ("http://0xa9.0xfe.0xa9.0xfe/", "link-local"), ("http://169.254.43518/", "link-local"),
            ("http://0.0.0.0:9000/", "unspecified"), ("http://0/", "unspecified"), ("http://[::]:9000/", "unspecified"),
            ("http://224.0.0.1/", "multicast"), ("http://255.255.255.255/", "multicast"), ("http://[ff02::1]/", "multicast"),
            ("http://127.0.0.1:8787/v1/me", "own listening address"), ("http://[::1]:8787/", "own listening address"),
            ("http://notty.example.com/v1/me", "own address (--public-url)"), ("ftp://example.com/x", "not an http(s) URL"),
            // PROTOCOL.md §15: the metadata services that are not link-local, IPv4 hidden in IPv6's
            // transition forms, and the service's own name however it is spelled.
            ("http://[fd00:ec2::254]/latest/", "cloud metadata"), ("http://100.100.100.200/latest/", "cloud metadata"),
            ("http://168.63.129.16/machine", "cloud metadata"), ("http://192.0.0.192/opc/", "cloud metadata"),
            ("http://[2002:a9fe:a9fe::1]/", "link-local"), ("http://[64:ff9b:1::a9fe:a9fe]/", "link-local"),
            ("http://[64:ff9b:1:a9fe:a9:fe00::]/", "link-local"), ("http://[::ffff:0:a9fe:a9fe]/", "link-local"),
            ("http://[2002:6464:64c8::]/", "cloud metadata"), ("http://[::ffff:0:7f00:1]:8787/", "own listening address"),
            ("http://NOTTY.Example.com./v1/me", "own address (--public-url)"), ("http://notty%2eexample.com/", "own address (--public-url)"),
        ])
    func literals(url: String, says: String) async throws {
        let policy = try OutboundPolicy(listeners: [Self.own], publicURL: "http://notty.example.com", resolver: names([:]))
        let before = try #require(policy.refusalBeforeLookup(url), "\(url) passed")
        #expect(before.contains(says), "\(url): \(before)")
        guard case .failure(let refusal) = await policy.check(url) else { Issue.record("\(url) passed the check"); return }
        #expect(refusal.reason == before)
        #expect(!refusal.isLookup)
    }

    @Test("a name is checked by what it resolves to, every address of it; loopback receivers that are not the service pass")
    func resolvedNames() async throws {
        let policy = try OutboundPolicy(listeners: [Self.own], resolver: OutboundPolicyTests.resolver)
        for (url, says) in [
            ("http://metadata.test/latest/", "metadata.test is a link-local address (169.254.169.254)"),
            ("http://mapped.test/", "link-local"), ("http://mixed.test/", "link-local"),
            ("http://localhost:8787/", "localhost:8787 is this service's own listening address"),
            ("http://nowhere.test/", "cannot resolve nowhere.test"),
        ] {
            #expect(policy.refusalBeforeLookup(url) == nil, "\(url): a name is looked up when a request is sent")
            guard case .failure(let refusal) = await policy.check(url) else { Issue.record("\(url) passed"); continue }
            #expect(refusal.reason.contains(says), "\(url): \(refusal.reason)")
            #expect(refusal.isLookup == url.contains("nowhere"))
        }
        for url in ["http://127.0.0.1:9000/hook", "http://localhost:9000/hook", "http://[::1]:9000/", "https://hooks.test/x", "http://10.1.2.3/"] {
            guard case .success(let destination) = await policy.check(url) else { Issue.record("\(url) was refused"); continue }
            #expect(!destination.address.isEmpty)
        }
        guard case .success(let hooks) = await policy.check("https://Hooks.Test/x") else { Issue.record("refused"); return }
        #expect(hooks == OutboundPolicy.Destination(host: "hooks.test", address: "127.0.0.2", port: 443))
    }

    @Test("--outbound-allow: only the hosts and networks named, by every address; a bad entry is one line naming the flag")
    func allowList() async throws {
        let policy = try OutboundPolicy(allow: ["10.0.0.0/8", "hooks.test", "fd00::/8"], resolver: OutboundPolicyTests.resolver)
        for url in ["http://10.9.9.9/x", "https://hooks.test/x", "http://[fd00::5]/", "http://[::ffff:10.0.0.1]/"] {
            guard case .success = await policy.check(url) else { Issue.record("\(url) was refused"); continue }
        }
        for url in ["http://192.168.1.10/x", "http://127.0.0.1:9000/", "http://mixed.test/"] {
            guard case .failure(let refusal) = await policy.check(url) else { Issue.record("\(url) passed"); continue }
            #expect(
                refusal.reason.contains("link-local")
                    || refusal.reason.contains("not among the hosts this service allows (notty serve --outbound-allow)"),
                "\(url): \(refusal.reason)")
        }
        // Link-local stays refused even inside an allowed network.
        let wide = try OutboundPolicy(allow: ["0.0.0.0/0"], resolver: names([:]))
        #expect(wide.refusalBeforeLookup("http://169.254.169.254/")?.contains("link-local") == true)
        #expect(throws: (any Error).self) { try OutboundPolicy(allow: ["10.0.0.0/99"]) }
        do {
            _ = try OutboundPolicy(allow: ["not a host!"])
        } catch {
            #expect(
                error.message == "--outbound-allow not a host!: give a host name (hooks.example.com) or an address or network (10.0.0.0/8, fd00::/8)")
        }
    }

    static let resolver: OutboundPolicy.Resolver = names([
        "metadata.test": [[169, 254, 169, 254]],
        "mapped.test": [[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 169, 254, 169, 254]],
        "mixed.test": [[10, 0, 0, 1], [169, 254, 169, 254]],
        "localhost": [[127, 0, 0, 1], Array(repeating: 0, count: 15) + [1]],
        "hooks.test": [[127, 0, 0, 2]],
    ])

    @Test(
        "HTTPClientOutbound connects to the address that was checked: a name the system cannot resolve reaches the loopback receiver it was checked as, with its own Host"
    )
    func pinned() async throws {
        let seen = Seen()
        try await recorder(seen).test(.live) { client in
            let port = try #require(client.port)
            // Only the policy's resolver knows this name: had the client looked it up again,
            // it would not have found it.
            let outbound = HTTPClientOutbound(policy: try OutboundPolicy(resolver: names(["receiver.test": [[127, 0, 0, 1]]])))
            let answer = try await outbound.send(OutboundRequest(method: "GET", url: "http://receiver.test:\(port)/hook"))
            #expect(answer.status == 200)
            #expect(String(decoding: answer.body, as: UTF8.self) == "/hook Host=receiver.test:\(port)")
            await outbound.shutdown()
        }
    }

    @Test(
        "HTTPClientOutbound refuses before connecting ('not allowed: …'), follows no redirect, and sends the administrator's own requests as they are"
    )
    func refusals() async throws {
        let seen = Seen()
        try await recorder(seen).test(.live) { client in
            let port = try #require(client.port)
            let outbound = HTTPClientOutbound(
                policy: try OutboundPolicy(
                    listeners: [.init(host: "127.0.0.1", port: 0)],
                    resolver: names(["metadata.test": [[169, 254, 169, 254]]])))
            for url in ["http://metadata.test/latest/meta-data/", "http://[::ffff:169.254.169.254]/", "http://0.0.0.0:\(port)/"] {
                do throws(OutboundError) {
                    _ = try await outbound.send(OutboundRequest(method: "POST", url: url))
                    Issue.record("\(url) was sent")
                } catch {
                    guard case .notAllowed = error else { Issue.record("\(url): \(error)"); continue }
                    #expect(error.description.hasPrefix("not allowed: "), "\(error)")
                    #expect(!error.isWorthRetrying)
                }
            }
            // The receiver is the service now: its own port is refused, another's is not.
            outbound.listening(on: port)
            await #expect(throws: OutboundError.self) {
                try await outbound.send(OutboundRequest(method: "GET", url: "http://localhost:\(port)/self"))
            }
            #expect(outbound.refusalBeforeLookup("http://127.0.0.1:\(port)/self")?.contains("own listening address") == true)
            let administrators = try await outbound.send(
                OutboundRequest(method: "GET", url: "http://127.0.0.1:\(port)/upstream", aim: .administrator))
            #expect(administrators.status == 200)
            await outbound.shutdown()

            let other = HTTPClientOutbound(policy: try OutboundPolicy())
            let moved = try await other.send(OutboundRequest(method: "GET", url: "http://127.0.0.1:\(port)/moved"))
            #expect(moved.status == 302, "a redirect is the answer, not followed")
            await other.shutdown()
        }
        #expect(seen.withLock { $0 }.map { $0.prefix(while: { $0 != " " }) } == ["/upstream", "/moved"])
    }
}
