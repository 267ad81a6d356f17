import Foundation
import NIOCore
import NIOWebSocket
import NottyCore
import NottyDialects
import NottyService
import NottyWebhooks
import Synchronization

/// What one WebSocket of the hub sends (PROTOCOL.md §3 doorbell, §8.2 ntfy `ws`), decided when the
/// upgrade is asked for.
struct BellPlan: Sendable {
    enum Kind: Sendable {
        /// `{"cursor":"…","type":"changed"}` on each ring, written on the socket's event loop.
        case doorbell
        /// Frames read from the store when woken (full doorbell frames, ntfy events).
        case feed(any BellFeed)
    }

    let hub: DoorbellHub
    let userId: String
    let kind: Kind
    /// Woken by the hub's ticks too (ntfy's keepalives).
    let ticks: Bool
    /// Counts each frame sent (the doorbell's metric); nil for none.
    let counted: (@Sendable () -> Void)?
    /// The token it was opened with (a doorbell's): revoked or expired, the hub hangs up.
    var credential: DoorbellHub.StreamCredential? = nil
}

/// What a bell socket reads from the store. One socket's feed is used by one task at a time.
protocol BellFeed: AnyObject, Sendable {
    /// The frames sent right after the upgrade; fixes the position later wakes read from.
    func opening() async throws -> [String]
    /// The frames one wake sends (a cursor, or ``DoorbellHub/tickValue``); nil ends the socket.
    func frames(after value: Int64) async throws -> [String]?
    /// More is to be read at once, without a wake: the last `frames(after:)` stopped at a page.
    var behind: Bool { get }
}

extension BellFeed {
    var behind: Bool { false }
}

/// An upgraded WebSocket of the hub, driven by events on its channel's event loop: no task
/// waits on it while it is idle, so an idle doorbell costs its channel and this handler
/// (the Swift task a connection would otherwise keep, and the allocator slabs of every frame
/// on its stack, were most of what an idle doorbell cost).
///
/// It answers pings, echoes a close, pings every `pingInterval` and closes a socket that did not
/// answer the last ping; data from the device is ignored. A ring of a doorbell is written at
/// once, or, when the socket cannot take more, kept as the one newest cursor not yet sent. A
/// feed's wakes run one short task at a time, which reads the store and writes what it read
/// (waiting for the socket to take it), then takes the newest wake that came meanwhile.
final class BellSocketHandler: ChannelInboundHandler, RemovableChannelHandler, BellPumpOwner, HubLineEnd {
    typealias InboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    private let plan: BellPlan
    private let pingInterval: TimeAmount
    private let closeTimeout: TimeAmount
    private var context: ChannelHandlerContext?
    private var connection: UUID?
    private var pinger: RepeatedTask?
    private var awaitingPong = false
    private var closeSent = false
    /// A doorbell's newest cursor not yet written (the socket could not take it).
    private var unsentCursor: Int64?
    /// What reads a feed when woken.
    private var pump: BellPump?

    init(plan: BellPlan, pingInterval: TimeAmount = .seconds(30), closeTimeout: TimeAmount = .seconds(5)) {
        self.plan = plan
        self.pingInterval = pingInterval
        self.closeTimeout = closeTimeout
    }

    // MARK: - The channel

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
        connection = plan.hub.connect(userId: plan.userId, ticks: plan.ticks, credential: plan.credential, listener: HubLine(end: handler))
        pinger = context.eventLoop.scheduleRepeatedTask(initialDelay: pingInterval, delay: pingInterval) { _ in handler.value.ping() }
        if case .feed(let feed) = plan.kind {
            pump = BellPump(feed: feed, owner: self, eventLoop: context.eventLoop)
            pump?.start(opening: true)
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) { hangUpHub() }

    func channelInactive(context: ChannelHandlerContext) {
        hangUpHub()
        context.fireChannelInactive()
    }

    private func hangUpHub() {
        pinger?.cancel()
        pinger = nil
        if let connection { plan.hub.disconnect(userId: plan.userId, id: connection) }
        connection = nil
        context = nil
        pump = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.opcode {
        case .ping:
            guard frame.fin, !closeSent else { return }
            context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .pong, data: frame.unmaskedData)), promise: nil)
        case .pong:
            awaitingPong = false
        case .connectionClose:
            if closeSent {
                context.close(promise: nil)
            } else {
                // The device closes: the same code back, then the connection ends.
                closeSent = true
                var data = frame.unmaskedData
                let code = data.readWebSocketErrorCode() ?? .normalClosure
                var answer = context.channel.allocator.buffer(capacity: 2)
                answer.write(webSocketErrorCode: code)
                let channel = context.channel
                context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .connectionClose, data: answer))).whenComplete { _ in
                    channel.close(promise: nil)
                }
            }
        default:
            break  // data from the device is ignored
        }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable, let cursor = unsentCursor {
            unsentCursor = nil
            ring(cursor)
        }
        context.fireChannelWritabilityChanged()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }

    // MARK: - The hub and the clock (on the event loop)

    func ring(_ value: Int64) {
        guard let context, !closeSent else { return }
        switch plan.kind {
        case .doorbell:
            guard value != DoorbellHub.tickValue else { return }
            guard context.channel.isWritable else {
                unsentCursor = max(unsentCursor ?? value, value)
                return
            }
            context.writeAndFlush(wrapOutboundOut(text(Self.changedFrame(cursor: value), context.channel.allocator)), promise: nil)
            plan.counted?()
        case .feed:
            pump?.wake(value)
        }
    }

    /// The service stops: goodbye.
    func hangUp() { close(code: .normalClosure) }

    /// Every `pingInterval`: a ping, unless the last one went unanswered (the device is gone).
    private func ping() {
        guard let context, !closeSent else { return }
        if awaitingPong {
            close(code: .goingAway)
            context.close(promise: nil)
            return
        }
        awaitingPong = true
        context.writeAndFlush(
            wrapOutboundOut(WebSocketFrame(fin: true, opcode: .ping, data: context.channel.allocator.buffer(string: "notty"))), promise: nil)
    }

    /// Says goodbye (a close frame); the connection ends when the device answers, or after
    /// `closeTimeout`.
    fileprivate func close(code: WebSocketErrorCode) {
        guard let context, !closeSent else { return }
        closeSent = true
        var data = context.channel.allocator.buffer(capacity: 2)
        data.write(webSocketErrorCode: code)
        context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .connectionClose, data: data)), promise: nil)
        let channel = context.channel
        context.eventLoop.scheduleTask(in: closeTimeout) { channel.close(promise: nil) }
    }

    // MARK: - The pump's owner

    var isOpen: Bool { context != nil && !closeSent }

    func write(_ frames: [String]) -> EventLoopFuture<Void>? {
        guard let context, !closeSent else { return nil }
        var last: EventLoopFuture<Void>?
        for frame in frames {
            last = context.writeAndFlush(wrapOutboundOut(text(frame, context.channel.allocator)))
            plan.counted?()
        }
        return last
    }

    func feedEnded() { close(code: .normalClosure) }

    func feedFailed() { context?.close(promise: nil) }

    // MARK: - Frames

    /// The doorbell's frame, as ``NottyJSON/encoder`` writes ``DoorbellFrame/changed(cursor:)``.
    static func changedFrame(cursor: Int64) -> String { #"{"cursor":"\#(cursor)","type":"changed"}"# }

    private func text(_ string: String, _ allocator: ByteBufferAllocator) -> WebSocketFrame {
        WebSocketFrame(fin: true, opcode: .text, data: allocator.buffer(string: string))
    }
}

/// What a bell's handler lends its ``BellPump`` (all on the channel's event loop).
protocol BellPumpOwner: AnyObject {
    /// Still open: a wake is worth reading.
    var isOpen: Bool { get }
    /// Writes `frames`; the future completes when the connection has taken the last one (nil:
    /// it is closing, nothing was written).
    func write(_ frames: [String]) -> EventLoopFuture<Void>?
    /// The feed ended (its topic was revoked): goodbye.
    func feedEnded()
    /// The store failed or the connection went: the device reconnects and catches up.
    func feedFailed()
}

/// Reads a feed when the hub wakes it, one short task at a time: the task reads the store,
/// writes what it read (waiting for the connection to take it), then takes the newest wake that
/// came meanwhile (the newest ring, then a tick), and ends when there is none. No task waits
/// while the feed is idle. Used on its handler's event loop.
final class BellPump {
    private let feed: any BellFeed
    private weak var owner: (any BellPumpOwner)?
    private let eventLoop: any EventLoop
    private var pendingRing: Int64?
    private var pendingTick = false
    private var reading = false

    init(feed: any BellFeed, owner: any BellPumpOwner, eventLoop: any EventLoop) {
        self.feed = feed
        self.owner = owner
        self.eventLoop = eventLoop
    }

    /// A ring (a cursor) or a tick (``DoorbellHub/tickValue``).
    func wake(_ value: Int64) {
        if value == DoorbellHub.tickValue { pendingTick = true } else { pendingRing = max(pendingRing ?? value, value) }
        if !reading { start(opening: false) }
    }

    /// Starts the task: the feed's opening frames first when `opening`, then the wakes.
    func start(opening: Bool) {
        reading = true
        let pump = NIOLoopBound(self, eventLoop: eventLoop)
        let loop = eventLoop, feed = feed
        Task {
            do {
                var frames: [String]? = opening ? try await feed.opening() : nil
                while true {
                    if let frames {
                        let written = try await loop.submit { pump.value.owner?.write(frames) }.get()
                        try await written?.get()
                    }
                    // A feed that stopped at a page reads on (with any cursor) before a new wake.
                    let behind = feed.behind
                    guard let wake = try await loop.submit({ pump.value.takeWake(readingOn: behind) }).get() else { return }
                    frames = try await feed.frames(after: wake)
                    if frames == nil {
                        loop.execute { pump.value.owner?.feedEnded() }
                        return
                    }
                }
            } catch {
                loop.execute {
                    pump.value.reading = false
                    pump.value.owner?.feedFailed()
                }
            }
        }
    }

    /// The wake to read next, or nil: the task ends (the connection is closing, or nothing is
    /// left to read). `readingOn`: the feed has more to read at once, with any cursor.
    private func takeWake(readingOn: Bool = false) -> Int64? {
        guard owner?.isOpen == true else {
            reading = false
            return nil
        }
        if readingOn { return 0 }
        if let ring = pendingRing {
            pendingRing = nil
            return ring
        }
        if pendingTick {
            pendingTick = false
            return DoorbellHub.tickValue
        }
        reading = false
        return nil
    }
}

/// What the hub's line reaches, on its connection's event loop.
protocol HubLineEnd: AnyObject, SendableMetatype {
    func ring(_ value: Int64)
    func hangUp()
}

/// The hub's line to one connection: hands each call to the connection's event loop.
struct HubLine<End: HubLineEnd>: DoorbellListener {
    let end: NIOLoopBound<End>

    func ring(_ value: Int64) {
        let end = end
        end.eventLoop.execute { end.value.ring(value) }
    }

    func hangUp() {
        let end = end
        end.eventLoop.execute { end.value.hangUp() }
    }
}

/// `?payload=full`: the changes themselves, a page a frame (PROTOCOL.md §3).
final class FullDoorbellFeed: BellFeed {
    private let inbox: Inbox
    private let userId: String
    /// The cursor sent up to, and whether the last page stopped short of the feed's end.
    private let position = Mutex<(sent: Int64, behind: Bool)>((0, false))

    init(inbox: Inbox, userId: String) {
        self.inbox = inbox
        self.userId = userId
    }

    /// The newest cursor, as a `changed` frame: later frames follow on from it, and a device
    /// whose own cursor is older pulls. (Without it, a change made between the device's pull
    /// after connecting and this read was in neither: on a loaded machine that window was seconds.)
    func opening() async throws -> [String] {
        let latest = try await inbox.latestCursor(userId: userId)
        position.withLock { $0.sent = latest }
        return [String(decoding: try NottyJSON.encoder.encode(DoorbellFrame.changed(cursor: String(latest))), as: UTF8.self)]
    }

    /// One page (500 changes) a call, written before the next is read: a device far behind
    /// is caught up without holding its whole gap in memory.
    func frames(after value: Int64) async throws -> [String]? {
        let sent = position.withLock { $0.sent }
        let page = try await inbox.changes(userId: userId, since: sent, limit: 500)
        guard let next = Int64(page.cursor), next != sent else {
            position.withLock { $0.behind = false }
            return []
        }
        let frame = DoorbellFrame(
            type: "changes", cursor: page.cursor, previousCursor: String(sent), changes: page.changes, preferences: page.preferences)
        position.withLock { $0 = (next, page.hasMore) }
        return [String(decoding: try NottyJSON.encoder.encode(frame), as: UTF8.self)]
    }

    var behind: Bool { position.withLock { $0.behind } }
}

/// An ntfy subscriber (PROTOCOL.md §8.2): the inbox as ntfy events, each a frame as `encode` writes it
/// (a WebSocket's text, a line of NDJSON, an SSE event).
final class NtfyBellFeed: BellFeed {
    private let follower: NtfyFollower
    private let replay: NtfyFollower.Replay
    private let encode: @Sendable (NtfyAnswer) -> String

    init(follower: NtfyFollower, replay: NtfyFollower.Replay, encode: @escaping @Sendable (NtfyAnswer) -> String) {
        self.follower = follower
        self.replay = replay
        self.encode = encode
    }

    /// `open`, then what `replay` asks for; fixes the feed position later wakes read from.
    func opening() async throws -> [String] {
        let events = try await follower.start(replay: replay)
        return ([follower.control("open")] + events).map(encode)
    }

    func frames(after value: Int64) async throws -> [String]? {
        try await follower.events(after: value)?.map(encode)
    }
}
