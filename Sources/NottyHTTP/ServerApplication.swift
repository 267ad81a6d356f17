import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import HummingbirdTLS
import Logging
import NIOCore
import NIOSSL
import NottyCore
import NottyService
import ServiceLifecycle

/// Builds the whole service: storage, routes, doorbell, maintenance, TLS.
public enum ServerApplication {
    /// The Hummingbird application for `notty serve` (and for tests, with a port of 0).
    /// Sockets are read and written on `eventLoopGroup` (NIO's shared group when nil); route
    /// handlers run on Swift's own thread pool.
    public static func build(
        service: NotificationService, eventLoopGroup: (any EventLoopGroup)? = nil, tls: ReloadableTLS? = nil,
        onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
    ) throws -> some ApplicationProtocol {
        let config = service.config
        let routes = Routes(service: service)
        let tls =
            try tls ?? config.tlsCertPath.flatMap { cert in try config.tlsKeyPath.map { try ReloadableTLS(certificatePath: cert, keyPath: $0) } }
        // Every connection is counted and its heads timed (GuardedChannel); a kept-alive one
        // with no request in progress is closed after the idle timeout; a WebSocket upgrade is
        // a bell socket (the doorbell, ntfy's ws) that pings every 30 s, and an ntfy stream
        // (`/TOPIC/json|sse`) is served from the hub too (BellStream.swift).
        let limits = config.connections
        let count = ConnectionCount()
        @Sendable func channel(_ responder: @escaping HTTPChannelHandler.Responder) -> GuardedChannel<BellUpgradeChannel> {
            GuardedChannel(
                inner: BellUpgradeChannel(
                    responder: responder, idleTimeout: TimeAmount(limits.idleTimeout),
                    plan: { request in try await routes.bellPlan(for: request) },
                    stream: { request in try await routes.ntfyStreamPlan(for: request) }),
                limits: limits, count: count)
        }
        let server = tls.map { tls in HTTPServerBuilder { ReloadableTLSChannel(inner: channel($0), tls: tls) } } ?? HTTPServerBuilder { channel($0) }
        return Application(
            router: routes.router(),
            server: server,
            configuration: .init(address: .hostname(config.host, port: config.port), serverName: "notty"),
            services: [BackgroundJobsService(service: service)],
            onServerRunning: { channel in await onServerRunning(channel.localAddress?.port ?? config.port) },
            eventLoopGroupProvider: eventLoopGroup.map { .shared($0) } ?? .singleton,
            logger: service.logger)
    }
}

/// Runs the service's background jobs (``BackgroundJobs``) until shutdown; on graceful
/// shutdown it closes every doorbell so connections end cleanly.
struct BackgroundJobsService: Service {
    let service: NotificationService

    func run() async throws {
        await cancelWhenGracefulShutdown {
            await BackgroundJobs(service: service).run()
        }
        service.hub.closeAll()
    }
}
