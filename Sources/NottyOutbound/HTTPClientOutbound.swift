import AsyncHTTPClient
import Foundation
import NIOCore
import NIOFoundationCompat
import NIOHTTP1
import NottyService

/// The service's outbound HTTP on AsyncHTTPClient: one client (connections pooled and reused)
/// for every escalation, action and upstream; redirects are not followed (an action's URL is
/// the one its publisher named, nothing it points on to); at most ``maxBodyBytes`` of an
/// answer is read. Shut it down when the service stops.
public final class HTTPClientOutbound: OutboundHTTP {
    private let client: HTTPClient

    public init() {
        var configuration = HTTPClient.Configuration(redirectConfiguration: .disallow, timeout: .init(connect: .seconds(10), read: .seconds(60)))
        configuration.connectionPool.retryConnectionEstablishment = false
        configuration.decompression = .disabled
        client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }

    public func send(_ request: OutboundRequest) async throws(OutboundError) -> OutboundResponse {
        guard let url = URL(string: request.url), let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
              let host = url.host, !host.isEmpty
        else { throw .invalidURL(request.url) }
        var outgoing = HTTPClientRequest(url: request.url)
        outgoing.method = HTTPMethod(rawValue: request.method.uppercased())
        for header in request.headers { outgoing.headers.add(name: header.name, value: header.value) }
        if let body = request.body { outgoing.body = .bytes(ByteBuffer(data: body)) }
        let deadline = NIODeadline.now() + TimeAmount.nanoseconds(Int64(request.timeout.components.seconds) * 1_000_000_000
            + request.timeout.components.attoseconds / 1_000_000_000)
        do {
            let response = try await client.execute(outgoing, deadline: deadline)
            var body = Data()
            for try await buffer in response.body {
                body.append(contentsOf: buffer.readableBytesView.prefix(Self.maxBodyBytes - body.count))
                if body.count >= Self.maxBodyBytes { break }  // the rest is dropped with the connection
            }
            return OutboundResponse(status: Int(response.status.code), headers: response.headers.map { OutboundHeader($0.name, $0.value) }, body: body)
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
