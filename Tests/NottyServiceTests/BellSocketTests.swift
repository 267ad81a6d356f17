import Foundation
import NIOCore
import NIOEmbedded
import NIOPosix
import NIOWebSocket
import NottyCore
import Synchronization
import Testing

@testable import NottyHTTP
@testable import NottyService

/// The doorbell's socket handler on NIO's embedded channel, whose clock the test moves: what
/// it writes for rings, pings, closes and a socket that cannot take more.
@Suite("Bell sockets: the doorbell's WebSocket, driven by events")
struct BellSocketTests {
    /// A connected doorbell of user `u` (pinging every 30 s, closing 5 s after saying goodbye).
    private func doorbell() throws -> (EmbeddedChannel, DoorbellHub) {
        let hub = DoorbellHub()
        let channel = EmbeddedChannel()
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 9)).wait()
        let plan = BellPlan(hub: hub, userId: "u", kind: .doorbell, ticks: false, counted: nil)
        try channel.pipeline.syncOperations.addHandler(BellSocketHandler(plan: plan, pingInterval: .seconds(30), closeTimeout: .seconds(5)))
        return (channel, hub)
    }

    private func sent(_ channel: EmbeddedChannel) throws -> [WebSocketFrame] {
        var frames: [WebSocketFrame] = []
        while let frame = try channel.readOutbound(as: WebSocketFrame.self) { frames.append(frame) }
        return frames
    }

    private func text(_ frame: WebSocketFrame) -> String { String(buffer: frame.data) }

    private func closeCode(_ frame: WebSocketFrame) -> WebSocketErrorCode? {
        var data = frame.data
        return frame.opcode == .connectionClose ? data.readWebSocketErrorCode() : nil
    }

    private func frame(_ opcode: WebSocketOpcode, _ data: String = "") -> WebSocketFrame {
        WebSocketFrame(fin: true, opcode: opcode, data: ByteBuffer(string: data))
    }

    private func close(_ code: WebSocketErrorCode) -> WebSocketFrame {
        var data = ByteBuffer()
        data.write(webSocketErrorCode: code)
        return WebSocketFrame(fin: true, opcode: .connectionClose, data: data)
    }

    @Test("A ring is a changed frame with the cursor, byte for byte what the encoder writes; another user's ring is not heard")
    func ring() throws {
        let (channel, hub) = try doorbell()
        defer { _ = try? channel.finish() }
        #expect(hub.connectionCount == 1)
        hub.ring(["u": 7, "someone-else": 8])
        channel.embeddedEventLoop.run()
        let frames = try sent(channel)
        #expect(frames.map(\.opcode) == [.text])
        let encoded = String(decoding: try NottyJSON.encoder.encode(DoorbellFrame.changed(cursor: "7")), as: UTF8.self)
        #expect(frames.map(text) == [encoded])
    }

    @Test("A socket that cannot take more keeps only the newest cursor, and sends it once it can")
    func slowDevice() throws {
        let (channel, hub) = try doorbell()
        defer { _ = try? channel.finish() }
        channel.isWritable = false
        for cursor in [5, 9, 7] as [Int64] { hub.ring(["u": cursor]) }
        channel.embeddedEventLoop.run()
        #expect(try sent(channel).isEmpty)
        channel.isWritable = true
        channel.pipeline.fireChannelWritabilityChanged()
        #expect(try sent(channel).map(text) == [BellSocketHandler.changedFrame(cursor: 9)])
        #expect(BellSocketHandler.changedFrame(cursor: 9).contains(#""cursor":"9""#))
    }

    @Test("It pings every 30 s; an answered ping keeps it open, an unanswered one closes it (1001) and leaves the hub")
    func pings() throws {
        let (channel, hub) = try doorbell()
        defer { _ = try? channel.finish() }
        channel.embeddedEventLoop.advanceTime(by: .seconds(29))
        #expect(try sent(channel).isEmpty)
        channel.embeddedEventLoop.advanceTime(by: .seconds(1))
        #expect(try sent(channel).map(\.opcode) == [.ping])
        try channel.writeInbound(frame(.pong, "notty"))
        channel.embeddedEventLoop.advanceTime(by: .seconds(30))
        #expect(try sent(channel).map(\.opcode) == [.ping])
        #expect(channel.isActive)
        channel.embeddedEventLoop.advanceTime(by: .seconds(30))  // that ping went unanswered
        #expect(try sent(channel).compactMap(closeCode) == [.goingAway])
        #expect(!channel.isActive)
        #expect(hub.connectionCount == 0)
    }

    @Test("A device's ping gets a pong with its data; its text is ignored")
    func devicePing() throws {
        let (channel, _) = try doorbell()
        defer { _ = try? channel.finish() }
        try channel.writeInbound(frame(.text, "hello"))
        try channel.writeInbound(frame(.ping, "are you there"))
        let frames = try sent(channel)
        #expect(frames.map(\.opcode) == [.pong])
        #expect(frames.map(text) == ["are you there"])
    }

    @Test("A device's close is answered with its code and the connection ends")
    func deviceCloses() throws {
        let (channel, hub) = try doorbell()
        defer { _ = try? channel.finish() }
        try channel.writeInbound(close(.normalClosure))
        #expect(try sent(channel).compactMap(closeCode) == [.normalClosure])
        channel.embeddedEventLoop.run()
        #expect(!channel.isActive)
        #expect(hub.connectionCount == 0)
    }

    @Test("When the service stops, each socket says goodbye (1000): closed on the device's answer, or 5 s later")
    func serviceStops() throws {
        let (answering, hub) = try doorbell()
        defer { _ = try? answering.finish() }
        hub.closeAll()
        answering.embeddedEventLoop.run()
        #expect(try sent(answering).compactMap(closeCode) == [.normalClosure])
        #expect(answering.isActive)
        hub.ring(["u": 3])  // nothing after goodbye
        answering.embeddedEventLoop.run()
        try answering.writeInbound(close(.normalClosure))
        #expect(try sent(answering).isEmpty)
        #expect(!answering.isActive)

        let (silent, other) = try doorbell()
        defer { _ = try? silent.finish() }
        other.closeAll()
        silent.embeddedEventLoop.run()
        #expect(try sent(silent).compactMap(closeCode) == [.normalClosure])
        silent.embeddedEventLoop.advanceTime(by: .seconds(4))
        #expect(silent.isActive)
        silent.embeddedEventLoop.advanceTime(by: .seconds(1))
        #expect(!silent.isActive)
    }

    @Test("A feed behind by pages reads on without a wake, and stops once its socket has closed")
    func pagesStopAtClose() async throws {
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        let feed = PagedFeed(pages: 5)
        let owner = ClosingOwner(loop: loop)
        let pump = try await loop.submit { NIOLoopBound(BellPump(feed: feed, owner: owner, eventLoop: loop), eventLoop: loop) }.get()
        try await loop.submit { pump.value.wake(1) }.get()
        // The owner closes at its first write; the pump looks at it once more and ends.
        let asked = await withTaskGroup(of: Bool.self) { group in
            group.addTask { await owner.askedWhileClosed.first { _ in true } != nil }
            group.addTask {
                try? await Task.sleep(for: .seconds(30)); return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
        #expect(asked, "the pump never looked at the closed socket")
        #expect(feed.calls.withLock { $0 } == 1, "pages were read for a closed socket")
        withExtendedLifetime(pump) {}
    }
}

/// A feed `pages` pages behind: each read is one page.
private final class PagedFeed: BellFeed, Sendable {
    let pages: Int
    let calls = Mutex(0)
    init(pages: Int) { self.pages = pages }
    func opening() async throws -> [String] { [] }
    func frames(after value: Int64) async throws -> [String]? {
        let call = calls.withLock { calls in
            calls += 1; return calls
        }
        return ["page \(call)"]
    }
    var behind: Bool { calls.withLock { $0 } < pages }
}

/// A connection that closes at its first write, and tells when it is asked whether it is open
/// after that.
private final class ClosingOwner: BellPumpOwner, Sendable {
    let loop: any EventLoop
    let closed = Mutex(false)
    let askedWhileClosed: AsyncStream<Void>
    private let asked: AsyncStream<Void>.Continuation
    init(loop: any EventLoop) {
        self.loop = loop
        (askedWhileClosed, asked) = AsyncStream.makeStream()
    }
    var isOpen: Bool {
        if closed.withLock({ $0 }) {
            asked.yield()
            return false
        }
        return true
    }
    func write(_ frames: [String]) -> EventLoopFuture<Void>? {
        closed.withLock { $0 = true }
        return loop.makeSucceededVoidFuture()
    }
    func feedEnded() {}
    func feedFailed() {}
}
