import HTTPTypes
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import NIOHTTPTypesHTTP1
import NIOWebSocket

/// One connection of the service: HTTP/1.1 for the routes (an ntfy stream among them answered
/// by ``NtfyStreamHandler``), or, when its first request asks to upgrade to a WebSocket the hub
/// rings (a doorbell, an ntfy `ws`), a ``BellSocketHandler``.
///
/// A connection's task ends once it is upgraded: the socket lives on its event loop alone.
/// (Hummingbird's WebSocket channel keeps a task, and a task group of three more, for each
/// socket as long as it is open, with the allocator slabs of every frame that ran on them.)
struct BellUpgradeChannel: ServerChildChannel, HTTPChannelHandler {
    enum Upgrade: Sendable {
        case http(NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>)
        /// An upgrade was asked for and refused (unknown path, bad credentials).
        case refused(NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>)
        case bell
    }

    struct Value: ServerChildChannelValue {
        let upgrade: EventLoopFuture<Upgrade>
        let channel: any Channel
    }

    let responder: HTTPChannelHandler.Responder
    let idleTimeout: TimeAmount?
    let maxFrameSize: Int
    /// Which bell an upgrade request rings; nil (or a throw) refuses it.
    let plan: @Sendable (Request) async throws -> BellPlan?
    /// The ntfy stream a request opens; nil (or a throw): the routes answer it.
    let stream: @Sendable (Request) async throws -> NtfyStreamPlan?

    init(
        responder: @escaping HTTPChannelHandler.Responder, idleTimeout: TimeAmount?, maxFrameSize: Int = 1 << 14,
        plan: @escaping @Sendable (Request) async throws -> BellPlan?,
        stream: @escaping @Sendable (Request) async throws -> NtfyStreamPlan?
    ) {
        // NIO looks for an upgrade only in a connection's first request: a later one asking for
        // it is sent to open a new connection (307 to the same place, and this one closes).
        self.responder = { request, writer, channel in
            if request.headers[.upgrade]?.lowercased() == "websocket" {
                let location = request.uri.query.map { "\(request.uri.path)?\($0)" } ?? request.uri.path
                try await writer.writeResponse(HTTPResponse(status: .temporaryRedirect, headerFields: [.connection: "close", .location: location]))
                throw UpgradeOnLaterRequest()
            }
            try await responder(request, writer, channel)
        }
        self.idleTimeout = idleTimeout
        self.maxFrameSize = maxFrameSize
        self.plan = plan
        self.stream = stream
    }

    private struct UpgradeOnLaterRequest: Error {}

    /// The read buffers of a connection that reads little (a bell's pings and close): 256 bytes
    /// to start with, grown as NIO sees fit.
    static let smallReads = AdaptiveRecvByteBufferAllocator(minimum: 64, initial: 256, maximum: 65536)

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        channel.eventLoop.makeCompletedFuture {
            let decided = NIOLoopBoundBox<BellPlan?>(nil, eventLoop: channel.eventLoop)
            let asked = NIOLoopBoundBox(false, eventLoop: channel.eventLoop)
            let plan = self.plan
            let upgrader = NIOTypedWebSocketServerUpgrader<Upgrade>(
                maxFrameSize: maxFrameSize,
                shouldUpgrade: { channel, head in
                    asked.value = true
                    let promise = channel.eventLoop.makePromise(of: BellPlan?.self)
                    promise.completeWithTask {
                        let request = Request(head: try HTTPRequest(head, secure: false, splitCookie: false), body: .init(buffer: ByteBuffer()))
                        return try? await plan(request)
                    }
                    return promise.futureResult.map { bell in
                        decided.value = bell
                        return bell == nil ? nil : HTTPHeaders()
                    }
                },
                upgradePipelineHandler: { channel, _ in
                    channel.eventLoop.makeCompletedFuture {
                        guard let bell = decided.value else { throw ChannelError.inappropriateOperationForState }
                        // A bell reads little (pings, a close): a small read buffer to start with.
                        try channel.syncOptions?.setOption(ChannelOptions.recvAllocator, value: Self.smallReads)
                        try channel.pipeline.syncOperations.addHandler(BellSocketHandler(plan: bell))
                        return Upgrade.bell
                    }
                })
            let idleTimeout = self.idleTimeout
            let stream = self.stream
            let http = NIOTypedHTTPServerUpgradeConfiguration<Upgrade>(upgraders: [upgrader]) { channel in
                channel.eventLoop.makeCompletedFuture {
                    let operations = channel.pipeline.syncOperations
                    try operations.addHandler(HTTP1ToHTTPServerCodec(secure: false))
                    let streams = NtfyStreamHandler { head in try? await stream(Request(head: head, body: .init(buffer: ByteBuffer()))) }
                    try operations.addHandler(NtfyStreamHandler.QuiesceTap(streams))
                    try operations.addHandler(HTTPConnectionStateHandler(idleTimeout: idleTimeout.map { .init($0) }, logger: logger))
                    try operations.addHandler(streams)
                    let async = try NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>(
                        wrappingChannelSynchronously: channel, configuration: .init(isOutboundHalfClosureEnabled: true))
                    return asked.value ? .refused(async) : .http(async)
                }
            }
            var configuration = NIOUpgradableHTTPServerPipelineConfiguration<Upgrade>(upgradeConfiguration: http)
            configuration.enablePipelining = false  // requests are read one after another by handleHTTP
            configuration.enableErrorHandling = false  // GuardedChannel answers what the decoder rejects
            configuration.enableResponseHeaderValidation = false  // HTTPTypes has validated them
            let upgrade = try channel.pipeline.syncOperations.configureUpgradableHTTPServerPipeline(configuration: configuration)
            return Value(upgrade: upgrade, channel: channel)
        }
    }

    func handle(value: Value, logger: Logger) async {
        do {
            switch try await value.upgrade.get() {
            case .http(let http):
                await handleHTTP(asyncChannel: http, logger: logger)
            case .refused(let http):
                try await http.executeThenClose { _, outbound in
                    try await outbound.write(.head(HTTPResponse(status: .badRequest, headerFields: [.connection: "close", .contentLength: "0"])))
                    try await outbound.write(.end(nil))
                }
            case .bell:
                break  // the socket's handler has it from here
            }
        } catch {
            logger.trace("connection ended before its first request was answered", metadata: ["error": "\(error)"])
        }
    }
}
