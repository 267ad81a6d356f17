import Foundation
import HTTPTypes
import NIOCore
import NIOHTTPTypes
import NottyDialects
import NottyService

/// An ntfy NDJSON or SSE subscription (`GET /TOPIC/json|sse`, PROTOCOL.md §8.2) as the service serves
/// it: decided when its request head arrives, then written by a ``NtfyStreamHandler``.
struct NtfyStreamPlan: Sendable {
    let hub: DoorbellHub
    let userId: String
    let feed: any BellFeed
    /// `open` and the replay, read when the plan was made.
    let opening: [String]
    let contentType: String
}

/// Serves ntfy's streaming subscriptions below Hummingbird's HTTP loop, as the doorbell's
/// WebSocket is: an open stream is a response that never ends, and served by a route it kept
/// the connection's task (and the frames of the request that started it) for its whole life,
/// 32 KiB an idle subscriber. Here it is this handler, on the channel's event loop, and a short
/// task when the hub wakes it (``BellPump``).
///
/// Sits between Hummingbird's connection-state handler and its async channel. A request head
/// that asks for a stream (and arrives with no other request in progress) is held while the
/// topic is looked up; if that fails it is handed on, and Hummingbird's route answers (ntfy's
/// `404` and the rest). Otherwise the handler answers `200`, writes `open` and the replay,
/// catches up with what changed meanwhile, and from then on writes what the hub wakes it for;
/// a revoked topic or a stopping service ends the response and closes the connection. Anything
/// the subscriber sends after its request is ignored.
final class NtfyStreamHandler: ChannelDuplexHandler, RemovableChannelHandler, BellPumpOwner, HubLineEnd {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private enum State {
        case passing
        /// A stream's request, held while its topic is looked up.
        case deciding([HTTPRequestPart])
        case streaming
        case ended
    }

    private let decide: @Sendable (HTTPRequest) async -> NtfyStreamPlan?
    private var state = State.passing
    /// A request handed on whose response has not ended (no stream starts meanwhile).
    private var inFlight = false
    private var context: ChannelHandlerContext?
    private var plan: NtfyStreamPlan?
    private var connection: UUID?
    private var pump: BellPump?

    init(decide: @escaping @Sendable (HTTPRequest) async -> NtfyStreamPlan?) {
        self.decide = decide
    }

    /// `GET /TOPIC/json` or `/TOPIC/sse`, not `poll=1` (a plain answer): worth a look.
    static func asksForStream(_ head: HTTPRequest) -> Bool {
        guard head.method == .get, let path = head.path else { return false }
        let parts = path.split(separator: "?", maxSplits: 1)
        let segments = parts[0].split(separator: "/", omittingEmptySubsequences: false).dropFirst()
        guard segments.count == 2, !segments.first!.isEmpty, segments.last == "json" || segments.last == "sse" else { return false }
        guard parts.count == 2 else { return true }
        return !NtfyFollower.Replay.isPoll(parts[1].split(separator: "&").first { $0.hasPrefix("poll=") }?.dropFirst(5))
    }

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }

    func handlerRemoved(context: ChannelHandlerContext) { leaveHub() }

    func channelInactive(context: ChannelHandlerContext) {
        leaveHub()
        state = .ended
        context.fireChannelInactive()
    }

    private func leaveHub() {
        if let connection, let plan { plan.hub.disconnect(userId: plan.userId, id: connection) }
        connection = nil
        pump = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let part = unwrapInboundIn(data)
        switch state {
        case .passing:
            if case .head(let head) = part, !inFlight, Self.asksForStream(head) {
                state = .deciding([part])
                let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
                let decide = decide
                Task {
                    let plan = await decide(head)
                    handler.eventLoop.execute { handler.value.decided(plan) }
                }
                return
            }
            if case .head = part { inFlight = true }
            context.fireChannelRead(data)
        case .deciding(var held):
            held.append(part)
            state = .deciding(held)
        case .streaming, .ended:
            break
        }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) { inFlight = false }
        context.write(data, promise: promise)
    }

    private func decided(_ plan: NtfyStreamPlan?) {
        guard case .deciding(let held) = state, let context else { return }
        guard let plan else {
            // Not a stream after all (an unknown topic…): the route answers it.
            state = .passing
            inFlight = true
            for part in held { context.fireChannelRead(wrapInboundOut(part)) }
            context.fireChannelReadComplete()
            return
        }
        state = .streaming
        self.plan = plan
        var fields = HTTPFields()
        fields[.contentType] = plan.contentType
        fields[.cacheControl] = "no-cache"
        context.write(wrapOutboundOut(.head(HTTPResponse(status: .ok, headerFields: fields))), promise: nil)
        _ = write(plan.opening)
        connection = plan.hub.connect(userId: plan.userId, ticks: true, listener: HubLine(end: NIOLoopBound(self, eventLoop: context.eventLoop)))
        pump = BellPump(feed: plan.feed, owner: self, eventLoop: context.eventLoop)
        // What changed between reading the replay and joining the hub (a ring reads the feed
        // from the position the opening fixed).
        pump?.wake(0)
    }

    // MARK: - The hub and the pump (on the event loop)

    func ring(_ value: Int64) {
        guard case .streaming = state else { return }
        pump?.wake(value)
    }

    /// The service stops: the response ends.
    func hangUp() { feedEnded() }

    var isOpen: Bool {
        if case .streaming = state { return context != nil }
        return false
    }

    func write(_ frames: [String]) -> EventLoopFuture<Void>? {
        guard case .streaming = state, let context else { return nil }
        guard !frames.isEmpty else { return context.eventLoop.makeSucceededVoidFuture() }
        return context.writeAndFlush(wrapOutboundOut(.body(context.channel.allocator.buffer(string: frames.joined()))))
    }

    /// The topic was revoked, or the service stops: the response ends, then the connection.
    func feedEnded() {
        guard case .streaming = state, let context else { return }
        state = .ended
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in channel.close(promise: nil) }
    }

    func feedFailed() {
        state = .ended
        context?.close(promise: nil)
    }

    /// Tells a stream that the server is stopping gracefully. Hummingbird's connection-state
    /// handler, before this one, keeps that event (`ChannelShouldQuiesceEvent`) to itself and
    /// waits for the response in progress, which a stream's never ends by itself: this sits
    /// before it and ends the stream first.
    final class QuiesceTap: ChannelInboundHandler, RemovableChannelHandler {
        typealias InboundIn = HTTPRequestPart
        private weak var stream: NtfyStreamHandler?

        init(_ stream: NtfyStreamHandler) { self.stream = stream }

        func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
            if event is ChannelShouldQuiesceEvent { stream?.feedEnded() }
            context.fireUserInboundEventTriggered(event)
        }
    }
}
