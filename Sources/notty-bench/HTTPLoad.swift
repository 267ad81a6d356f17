import Foundation
import NIOCore
import NIOPosix
import NottyTestSupport

/// A lean HTTP/1.1 load generator, in the manner of `wrk`: each client is one keep-alive
/// connection that sends a request, reads the whole response, and sends the next, until
/// the time is up. It runs on NIO's event loops with no task per request, so that on a
/// 2-core machine the client's own work takes little from the service it measures
/// (AsyncHTTPClient spends about as much CPU per request as the service does).
enum HTTPLoad {
    struct Result {
        /// Responses with the expected status, and all others.
        var ok = 0, other = 0
        var elapsed = 0.0
        /// Milliseconds from sending each request to its whole response, expected status only.
        var latencies: [Double] = []
        var rate: Double { Double(ok) / elapsed }
    }

    /// One connection's tally.
    struct Counts {
        var ok = 0, other = 0
        var latencies: [Double] = []
    }

    /// Runs `clients` connections for `seconds`, client `i` to `servers[i % servers.count]`
    /// (`http://host:port`). `request(client, n, hostHeader)` is the n-th request of a client, whole.
    static func run(
        servers: [String], clients: Int, seconds: Double, expect: Int,
        request: @escaping @Sendable (_ client: Int, _ n: Int, _ host: String) -> String
    ) async throws -> Result {
        let group = MultiThreadedEventLoopGroup.singleton
        let start = NIODeadline.now()
        let end = start + .nanoseconds(Int64(seconds * 1e9))
        var futures: [EventLoopFuture<Counts>] = []
        for client in 0..<clients {
            guard let url = URLComponents(string: servers[client % servers.count]), let host = url.host, let port = url.port else {
                throw SupportError("not an http://host:port URL: \(servers[client % servers.count])")
            }
            let done = group.any().makePromise(of: Counts.self)
            let hostHeader = "\(host):\(port)"
            let connect = ClientBootstrap(group: group)
                .channelOption(.socketOption(.tcp_nodelay), value: 1)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(
                            Connection(client: client, host: hostHeader, end: end, expect: expect, request: request, done: done))
                    }
                }
                .connect(host: host, port: port)
            connect.whenFailure { done.fail($0) }
            futures.append(done.futureResult)
        }
        var result = Result()
        for future in futures {
            let counts = try await future.get()
            result.ok += counts.ok
            result.other += counts.other
            result.latencies += counts.latencies
        }
        result.elapsed = Double((NIODeadline.now() - start).nanoseconds) / 1e9
        return result
    }

    /// One client's connection: its state lives on its event loop.
    private final class Connection: ChannelInboundHandler, RemovableChannelHandler {
        typealias InboundIn = ByteBuffer
        typealias OutboundOut = ByteBuffer

        let client: Int, host: String, end: NIODeadline, expect: Int
        let request: @Sendable (Int, Int, String) -> String
        let done: EventLoopPromise<Counts>
        var sent = 0
        var counts = Counts()
        var sentAt = NIODeadline.now()
        var received: ByteBuffer?
        var finished = false

        init(
            client: Int, host: String, end: NIODeadline, expect: Int,
            request: @escaping @Sendable (Int, Int, String) -> String, done: EventLoopPromise<Counts>
        ) {
            self.client = client
            self.host = host
            self.end = end
            self.expect = expect
            self.request = request
            self.done = done
        }

        func channelActive(context: ChannelHandlerContext) {
            sendNext(context)
        }

        private func sendNext(_ context: ChannelHandlerContext) {
            let text = request(client, sent, host)
            sent += 1
            sentAt = .now()
            context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(string: text)), promise: nil)
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            var incoming = unwrapInboundIn(data)
            if received == nil { received = incoming } else { received!.writeBuffer(&incoming) }
            do {
                while let status = try takeResponse() {
                    let now = NIODeadline.now()
                    if status == expect {
                        counts.ok += 1
                        counts.latencies.append(Double((now - sentAt).nanoseconds) / 1e6)
                    } else {
                        counts.other += 1
                    }
                    guard now < end else {
                        finish(context, error: nil)
                        return
                    }
                    sendNext(context)
                }
            } catch {
                finish(context, error: error)
            }
        }

        /// The status of the next whole response in `received`, which it removes; nil until one is whole.
        /// Reads bytes, not strings: this runs once per response, on the machine under test.
        private func takeResponse() throws -> Int? {
            guard var buffer = received else { return nil }
            let response: (status: Int, length: Int)? = try buffer.withUnsafeReadableBytes { bytes in
                guard let headerEnd = Self.find(Self.blankLine, in: bytes, from: 0) else { return nil }
                let status = Self.hasPrefix(Self.version, bytes, 0) ? Self.number(bytes, from: 9, to: 12) : 0
                guard (100...599).contains(status) else {
                    throw SupportError("not an HTTP/1.1 response: \(String(decoding: bytes.prefix(80), as: UTF8.self))")
                }
                // 1xx, 204 and 304 have no body whatever Content-Length says (RFC 9110 §6.4.1).
                if status < 200 || status == 204 || status == 304 { return (status, headerEnd + 4) }
                var length = 0
                var lineStart = (Self.find(Self.newline, in: bytes, from: 0) ?? headerEnd) + 2
                while lineStart < headerEnd {
                    let lineEnd = Self.find(Self.newline, in: bytes, from: lineStart) ?? headerEnd
                    if Self.hasPrefix(Self.contentLength, bytes, lineStart) {
                        length = Self.number(bytes, from: lineStart + Self.contentLength.count, to: lineEnd)
                    } else if Self.hasPrefix(Self.transferEncoding, bytes, lineStart) {
                        throw SupportError("chunked responses are not read")
                    }
                    lineStart = lineEnd + 2
                }
                return (status, headerEnd + 4 + length)
            }
            guard let response, buffer.readableBytes >= response.length else { return nil }
            buffer.moveReaderIndex(forwardBy: response.length)
            received = buffer.readableBytes == 0 ? nil : buffer
            return response.status
        }

        private static let version = Array("http/1.1 ".utf8), blankLine = Array("\r\n\r\n".utf8), newline = Array("\r\n".utf8)
        private static let contentLength = Array("content-length:".utf8), transferEncoding = Array("transfer-encoding:".utf8)

        /// Where `needle` first begins in `bytes` at or after `from`.
        private static func find(_ needle: [UInt8], in bytes: UnsafeRawBufferPointer, from: Int) -> Int? {
            var i = from
            while i + needle.count <= bytes.count {
                if bytes[i] == needle[0], (1..<needle.count).allSatisfy({ bytes[i + $0] == needle[$0] }) { return i }
                i += 1
            }
            return nil
        }

        /// Whether the line at `at` begins with `prefix` (lowercase), in any case.
        private static func hasPrefix(_ prefix: [UInt8], _ bytes: UnsafeRawBufferPointer, _ at: Int) -> Bool {
            guard at + prefix.count <= bytes.count else { return false }
            return (0..<prefix.count).allSatisfy { bytes[at + $0] | 0x20 == prefix[$0] | 0x20 }
        }

        /// The decimal number between `from` and `to`, blanks ignored.
        private static func number(_ bytes: UnsafeRawBufferPointer, from: Int, to: Int) -> Int {
            var value = 0
            var i = from
            while i < to, bytes[i] == UInt8(ascii: " ") || bytes[i] == UInt8(ascii: "\t") { i += 1 }
            while i < to, bytes[i] >= UInt8(ascii: "0"), bytes[i] <= UInt8(ascii: "9"), value < Int.max / 10 - 9 {
                value = value * 10 + Int(bytes[i] - UInt8(ascii: "0"))
                i += 1
            }
            return value
        }

        private func finish(_ context: ChannelHandlerContext, error: Error?) {
            guard !finished else { return }
            finished = true
            if let error { done.fail(error) } else { done.succeed(counts) }
            context.close(promise: nil)
        }

        func channelInactive(context: ChannelHandlerContext) {
            finish(context, error: SupportError("the service closed a connection after \(counts.ok + counts.other) responses"))
        }

        func errorCaught(context: ChannelHandlerContext, error: Error) {
            finish(context, error: error)
        }
    }
}
