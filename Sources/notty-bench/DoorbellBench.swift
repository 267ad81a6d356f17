import Foundation
import NIOCore
import NIOPosix
import NottyCore
import NottyPOSIX
import NottyTestSupport
import Synchronization

/// `notty-bench doorbells`: idle doorbells (`/v1/me/push` WebSockets) on one real `notty
/// serve` (SQLite), spread over 100 users: the service's resident memory per connection at
/// 5,000, 10,000 and 15,000 open (this machine allows 20,000 descriptors per process), then the
/// fan-out: one publish to each of the 100 users, timed until every one of the 15,000 sockets
/// has had its frame. The connections are raw NIO channels of this process (one descriptor
/// each), which only read.
struct DoorbellBench {
    var steps = [5000, 10_000, 15_000]
    var users = 100

    /// Connections for the breakdown (each kind on a fresh service).
    var breakdownCount = 5000

    func run() async throws {
        // Where an idle doorbell's memory goes: the same number of connections that stop at
        // each layer, each kind on a fresh service.
        for kind in Kind.allCases {
            let service = try await ServiceBench.start(extraArguments: ["--max-connections", "16000"])
            do {
                try await breakdown(service, kind: kind)
            } catch {
                print("\(kind.rawValue): failed: \(error)")
            }
            await service.stop()
        }
        let service = try await ServiceBench.start(extraArguments: ["--max-connections", "16000"])
        do {
            try await measure(service)
        } catch {
            print("benchmark failed: \(error)")
        }
        await service.stop()
    }

    enum Kind: String, CaseIterable {
        case tcp = "TCP connections that send nothing"
        case keepAlive = "kept-alive HTTP connections after one GET /healthz"
        case doorbell = "doorbells (/v1/me/push)"
    }

    private func breakdown(_ service: ServiceBench, kind: Kind) async throws {
        guard let pid = service.serve.process?.pid else { throw SupportError("no service process") }
        let request: String? =
            switch kind {
            case .tcp: nil
            case .keepAlive: "GET /healthz HTTP/1.1\r\nHost: bench\r\n\r\n"
            case .doorbell: NtfyBench.upgrade("/v1/me/push", authorization: service.userToken)
            }
        try await Task.sleep(for: .seconds(1))
        let baseline = memory(pid: pid).resident
        let counters = Counters()
        var channels: [any Channel] = []
        for _ in 0..<breakdownCount {
            channels.append(try await connect(service, counters: counters, request: request))
        }
        let deadline = ContinuousClock.now + .seconds(60)
        while request != nil && counters.answered.load(ordering: .relaxed) < breakdownCount && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(50))
        }
        try await Task.sleep(for: .seconds(3))
        let open = channels.filter(\.isActive).count
        let grown = memory(pid: pid).resident - baseline
        print(
            String(
                format: "%d %@: %d open, %.1f KiB of the service's resident memory each", breakdownCount, kind.rawValue, open,
                Double(grown) / 1024 / Double(max(1, open))))
        for channel in channels { try? await channel.close() }
    }

    /// A raw connection to the service that sends `request` (if any) and then only reads.
    private func connect(_ service: ServiceBench, counters: Counters, request: String?) async throws -> any Channel {
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(Bytes(counters: counters)) }
            }
            .connect(host: "127.0.0.1", port: service.port).get()
        if let request { channel.writeAndFlush(ByteBuffer(string: request), promise: nil) }
        return channel
    }

    private func measure(_ service: ServiceBench) async throws {
        guard let pid = service.serve.process?.pid else { throw SupportError("no service process") }
        print(
            "notty-bench doorbells — real `notty serve` (SQLite) on 127.0.0.1:\(service.port), \(ProcessInfo.processInfo.activeProcessorCount) cores; idle doorbells of \(users) users"
        )
        let subscriptions = try await InstancesBench(quick: true, postgresServer: nil, users: users).addUsers(to: service)
        var tokens: [String] = []
        for n in 0..<users { tokens.append(try await service.token("grant_type=password&username=bench-user-\(n)&password=s3cret-pw")) }
        try await Task.sleep(for: .seconds(1))
        let baseline = memory(pid: pid).resident
        print(String(format: "service before any doorbell: resident %.1f MiB", Double(baseline) / 1_048_576))
        let counters = Counters()
        var channels: [any Channel] = []
        for step in steps {
            while channels.count < step {
                let token = tokens[channels.count % users]
                channels.append(try await connect(service, counters: counters, request: NtfyBench.upgrade("/v1/me/push", authorization: token)))
            }
            let deadline = ContinuousClock.now + .seconds(120)
            while counters.answered.load(ordering: .relaxed) < step && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(50)) }
            try await Task.sleep(for: .seconds(3))  // settled: the first frames sent, nothing in flight
            let open = channels.filter(\.isActive).count
            let resident = memory(pid: pid).resident
            print(
                String(
                    format: "%d idle doorbells (%d answered, %d open): service resident %.1f MiB, %.1f KiB per doorbell",
                    step, counters.answered.load(ordering: .relaxed), open, Double(resident) / 1_048_576,
                    Double(resident - baseline) / 1024 / Double(max(1, open))))
        }

        // Fan-out: every socket's next bytes after this point are its user's frame.
        let open = channels.filter(\.isActive).count
        counters.armed.store(true, ordering: .sequentiallyConsistent)
        let start = ContinuousClock.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            for client in 0..<16 {
                group.addTask {
                    for n in stride(from: client, to: subscriptions.count, by: 16) {
                        let (status, text) = try await service.request(
                            .POST, "/beta/me/notifications", token: service.appToken,
                            body: ServiceBench.publishBody("fanout-\(n)"), headers: [("X-UNS-ID", subscriptions[n])])
                        guard status == 201 else { throw SupportError("publish answered \(status): \(text.prefix(200))") }
                    }
                }
            }
            try await group.waitForAll()
        }
        let published = ContinuousClock.now
        let deadline = ContinuousClock.now + .seconds(60)
        while counters.rung.load(ordering: .relaxed) < open && ContinuousClock.now < deadline { try await Task.sleep(for: .microseconds(500)) }
        let last = counters.lastRing.withLock { $0 } ?? ContinuousClock.now
        print(
            String(
                format:
                    "fan-out: one publish to each of %d users (16 clients, all answered in %.0f ms) → %d of %d sockets had their frame after %.0f ms",
                subscriptions.count, (published - start).seconds * 1000, counters.rung.load(ordering: .relaxed), open, (last - start).seconds * 1000))
        let (resident, peak) = memory(pid: pid)
        print(String(format: "service after the fan-out: resident %.1f MiB, peak %.1f MiB", Double(resident) / 1_048_576, Double(peak) / 1_048_576))
        for channel in channels { try? await channel.close() }
    }

    final class Counters: Sendable {
        /// Connections whose upgrade was answered.
        let answered = Atomic<Int>(0)
        let armed = Atomic<Bool>(false)
        /// Connections that received bytes since `armed`.
        let rung = Atomic<Int>(0)
        let lastRing = Mutex<ContinuousClock.Instant?>(nil)
    }

    /// Counts a connection's first bytes (the upgrade's answer), then its first bytes after
    /// the counters are armed (its frame of the fan-out).
    final class Bytes: ChannelInboundHandler, @unchecked Sendable {
        typealias InboundIn = ByteBuffer
        let counters: Counters
        var answered = false, rung = false
        init(counters: Counters) { self.counters = counters }
        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            if !answered {
                answered = true
                counters.answered.add(1, ordering: .relaxed)
            } else if !rung, counters.armed.load(ordering: .relaxed) {
                rung = true
                counters.rung.add(1, ordering: .relaxed)
                let now = ContinuousClock.now
                counters.lastRing.withLock { $0 = max($0 ?? now, now) }
            }
        }
    }
}
