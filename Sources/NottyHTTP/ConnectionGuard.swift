import Foundation
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1
import NottyService
import Synchronization

/// The connections open now (one count for the whole server).
final class ConnectionCount: Sendable {
    private let open = Atomic<Int>(0)
    let refused = Atomic<Int>(0)
    var current: Int { open.load(ordering: .relaxed) }
    func opened() -> Int { open.add(1, ordering: .relaxed).newValue }
    func closed() { open.subtract(1, ordering: .relaxed) }
}

/// Wraps the HTTP/WebSocket child channel: counts the connection (refusing one over the
/// limit), times its request heads, answers a head the parser rejects with `400` and closes.
///
/// Hummingbird's upgradable pipeline leaves error handling to its own code, which never sees a
/// head that fails to parse before the upgrade is decided: such a connection got no answer and
/// stayed open. Two handlers go around NIO's request decoder:
/// - ``RawSide`` (before it and the response encoder, after TLS) sees bytes: the first byte after a response has ended
///   starts the head's clock;
/// - ``MessageSide`` (after it) sees the parsed head (stops the clock), the response's end
///   (between requests), a `101` (a doorbell: no head clock from then on), and the decoder's
///   errors (`400`, close).
struct GuardedChannel<Inner: ServerChildChannel>: ServerChildChannel {
    typealias Value = Inner.Value
    let inner: Inner
    let limits: ConnectionLimits
    let count: ConnectionCount

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        let open = count.opened()
        let count = count
        channel.closeFuture.whenComplete { _ in count.closed() }
        let refuse = open > limits.maxConnections
        if refuse { count.refused.add(1, ordering: .relaxed) }
        let limits = limits
        return inner.setup(channel: channel, logger: logger).flatMapThrowing { value in
            let operations = channel.pipeline.syncOperations
            // NIO's HTTP server pipeline is [encoder, decoder, …] (after TLS, when there is TLS).
            let encoder = try operations.handler(type: HTTPResponseEncoder.self)
            let decoder = try operations.handler(type: ByteToMessageHandler<HTTPRequestDecoder>.self)
            let clock = HeadClock(timeout: limits.headerTimeout)
            try operations.addHandler(RawSide(clock: clock, refuse: refuse, limit: limits.maxConnections), position: .before(encoder))
            try operations.addHandler(MessageSide(clock: clock), position: .after(decoder))
            return value
        }
    }

    func handle(value: Value, logger: Logger) async {
        await inner.handle(value: value, logger: logger)
    }
}

/// The state the two handlers share (both run on the channel's event loop).
final class HeadClock {
    enum State { case awaitingHead, inRequest, betweenRequests, upgraded }
    var state = State.awaitingHead
    let timeout: Duration
    private var timer: Scheduled<Void>?

    init(timeout: Duration) { self.timeout = timeout }

    /// Starts the head's clock: the connection is closed unless a head arrives in time.
    func start(_ context: ChannelHandlerContext) {
        state = .awaitingHead
        timer?.cancel()
        let channel = context.channel
        timer = context.eventLoop.scheduleTask(in: TimeAmount(timeout)) {
            channel.close(promise: nil)
        }
    }

    func stop(_ next: State) {
        timer?.cancel()
        timer = nil
        state = next
    }
}

/// Before the request decoder: raw bytes.
final class RawSide: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer
    let clock: HeadClock
    let refuse: Bool
    let limit: Int

    init(clock: HeadClock, refuse: Bool, limit: Int) {
        self.clock = clock
        self.refuse = refuse
        self.limit = limit
    }

    func handlerAdded(context: ChannelHandlerContext) {
        // A connection that never sends a whole head is cut.
        if !refuse { clock.start(context) }
        if context.channel.isActive { refuseIfOver(context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        refuseIfOver(context)
        context.fireChannelActive()
    }

    private var answered = false

    /// Over the limit: a clear answer before anything is read, then close.
    private func refuseIfOver(_ context: ChannelHandlerContext) {
        guard refuse, !answered else { return }
        answered = true
        do {
            let body =
                #"{"error":{"code":"serviceUnavailable","message":"the service has \#(limit) connections open, its limit (--max-connections): try again shortly"}}"#
            var buffer = context.channel.allocator.buffer(capacity: 256 + body.utf8.count)
            buffer.writeString(
                "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json; charset=utf-8\r\nRetry-After: 1\r\nConnection: close\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)"
            )
            let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
            context.writeAndFlush(wrapOutboundOut(buffer)).whenComplete { _ in bound.value.close(promise: nil) }
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if refuse { return }  // read nothing from a refused connection
        if clock.state == .betweenRequests { clock.start(context) }
        context.fireChannelRead(data)
    }
}

/// After the request decoder: parsed request parts in, response parts out.
final class MessageSide: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart
    let clock: HeadClock
    /// A response has begun on this connection and not ended (a 400 cannot be sent then).
    private var responding = false

    init(clock: HeadClock) { self.clock = clock }

    // Once upgraded, WebSocket frames pass through untouched (never unwrapped as HTTP parts).
    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if clock.state != .upgraded, case .head = unwrapInboundIn(data) { clock.stop(.inRequest) }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if clock.state == .upgraded {
            context.write(data, promise: promise)
            return
        }
        switch unwrapOutboundIn(data) {
        case .head(let head) where head.status == .switchingProtocols:
            // A doorbell: it lives as long as it likes; no head clock, no more HTTP here.
            clock.stop(.upgraded)
        case .head:
            responding = true
        case .end:
            responding = false
            if clock.state == .inRequest { clock.stop(.betweenRequests) }
        case .body:
            break
        }
        context.write(data, promise: promise)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard error is HTTPParserError, clock.state != .upgraded else {
            context.fireErrorCaught(error)
            return
        }
        // A head the parser rejects (a control character in a header, a bad request line):
        // 400 and close, unless a response is already on its way.
        clock.stop(.inRequest)
        guard !responding else {
            context.close(promise: nil)
            return
        }
        let body = #"{"error":{"code":"badRequest","message":"the request is not valid HTTP/1.1 (\#(error))"}}"#
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "application/json; charset=utf-8")
        headers.add(name: "Content-Length", value: String(body.utf8.count))
        headers.add(name: "Connection", value: "close")
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .badRequest, headers: headers))), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(string: body)))), promise: nil)
        let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in bound.value.close(promise: nil) }
    }
}
