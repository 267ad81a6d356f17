import AsyncHTTPClient
import Foundation
import NIOCore
import NIOFoundationCompat
import NIOHTTP1
import NottyCore
import NottyService
import Synchronization

/// The service's outbound HTTP on AsyncHTTPClient. Every request a user aimed goes through the
/// ``OutboundPolicy``: its name is resolved once, every address checked, and the connection made
/// to the checked address (the name still sent as `Host` and TLS's server name); the
/// administrator's own (`--ntfy-upstream`) share one pooled client. Redirects are never
/// followed (a URL is the one its user named, nothing it points on to); at most
/// ``maxBodyBytes`` of an answer is read. Shut it down when the service stops.
public final class HTTPClientOutbound: OutboundHTTP {
    private let client: HTTPClient
    private let configuration: HTTPClient.Configuration
    private let policy: Mutex<OutboundPolicy>

    public init(policy: OutboundPolicy = try! OutboundPolicy()) {
        var configuration = HTTPClient.Configuration(redirectConfiguration: .disallow, timeout: .init(connect: .seconds(10), read: .seconds(60)))
        configuration.connectionPool.retryConnectionEstablishment = false
        configuration.decompression = .disabled
        self.configuration = configuration
        self.policy = Mutex(policy)
        client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }

    /// The service is bound to `port` now (its flag said 0): requests there are its own.
    public func listening(on port: Int) {
        policy.withLock { $0 = $0.listening(on: port) }
    }

    public func refusalBeforeLookup(_ url: String) -> String? {
        policy.withLock { $0 }.refusalBeforeLookup(url)
    }

    public func send(_ request: OutboundRequest) async throws(OutboundError) -> OutboundResponse {
        guard let url = HTTPURL(request.url) else { throw .invalidURL(request.url) }
        guard request.aim == .user else { return try await execute(request, on: client) }
        let destination: OutboundPolicy.Destination
        switch await policy.withLock({ $0 }).check(request.url) {
        case .failure(let refusal): throw refusal.error
        case .success(let checked): destination = checked
        }
        // A client of its own that knows the name only as the checked address: it connects
        // there and nowhere else, whatever the name would resolve to now.
        var pinned = configuration
        for name in [url.writtenHost, url.host, destination.host] { pinned.dnsOverride[name] = destination.address }
        let once = HTTPClient(eventLoopGroupProvider: .singleton, configuration: pinned)
        let result: Result<OutboundResponse, OutboundError>
        do throws(OutboundError) {
            result = .success(try await execute(request, on: once))
        } catch {
            result = .failure(error)
        }
        try? await once.shutdown()
        return try result.get()
    }

    private func execute(_ request: OutboundRequest, on client: HTTPClient) async throws(OutboundError) -> OutboundResponse {
        var outgoing = HTTPClientRequest(url: request.url)
        outgoing.method = HTTPMethod(rawValue: request.method.uppercased())
        for header in request.headers { outgoing.headers.add(name: header.name, value: header.value) }
        if let body = request.body { outgoing.body = .bytes(ByteBuffer(data: body)) }
        let deadline = NIODeadline.now() + TimeAmount.nanoseconds(request.timeout.nanoseconds)
        do {
            let response = try await client.execute(outgoing, deadline: deadline)
            var body = Data()
            for try await buffer in response.body {
                body.append(contentsOf: buffer.readableBytesView.prefix(Self.maxBodyBytes - body.count))
                if body.count >= Self.maxBodyBytes { break }  // the rest is dropped with the connection
            }
            return OutboundResponse(
                status: Int(response.status.code), headers: response.headers.map { OutboundHeader($0.name, $0.value) }, body: body)
        } catch let error as HTTPClientError {
            switch error {
            case .deadlineExceeded, .readTimeout, .connectTimeout, .writeTimeout: throw .timedOut(request.timeout)
            case .invalidURL, .emptyHost, .emptyScheme: throw .invalidURL(request.url)
            default: throw .unreachable(String(describing: error))
            }
        } catch {
            throw .unreachable(Self.words(error))
        }
    }

    /// Closes every connection; later sends fail.
    public func shutdown() async {
        try? await client.shutdown()
    }

    /// NIO's connection errors in words ("connection refused").
    static func words(_ error: any Error) -> String {
        let text = String(describing: error)
        if text.contains("refused") || text.contains("ECONNREFUSED") { return "connection refused" }
        return text
    }
}
