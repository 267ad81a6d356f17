import Foundation
import NottyCore

/// Every setting of `notty serve` (PROTOCOL.md §2.4, §5), with the documented defaults.
public struct ServiceConfig: Sendable {
    public var host = "127.0.0.1"
    public var port = 8787
    public var tlsCertPath: String?
    public var tlsKeyPath: String?
    /// Seconds clients wait between polls (`X-Poll-Interval`).
    public var pollInterval = 30
    /// Seconds a notification lives when the app gives no `expirationDateTime`.
    public var defaultTTL = 7 * 86_400
    /// The furthest ahead an `expirationDateTime` may be, in seconds.
    public var maxTTL = 30 * 86_400
    /// Publishes per second per app, and the burst above that rate.
    public var publishRate = 100.0
    public var publishBurst = 1000.0
    public var maxBodyBytes = 64 * 1024
    /// Largest webhook body (`POST /v1/hooks/{token}`, PROTOCOL.md §7.2).
    public var maxWebhookBodyBytes = 1 << 20
    /// The service's address as the world reaches it (behind a proxy), for webhook URLs;
    /// without it they are made from the request's `Host`.
    public var publicURL: String?
    public var accessTokenLifetime = 3600
    public var refreshTokenLifetime = 90 * 86_400
    /// Seconds tombstones (and so cursors) are kept; older cursors get `410 cursorExpired`.
    public var historyRetention = 30 * 86_400
    /// How long a device subscription stays valid.
    public var subscriptionLifetime = 365 * 86_400
    /// bcrypt cost for passwords (2^cost rounds).
    public var bcryptCost: UInt8 = 10
    /// Field length limits of PROTOCOL.md §5.
    public var limits = FieldLimits()
    /// Head and idle timeouts, and how many connections may be open.
    public var connections = ConnectionLimits()
    /// The commands escalation rules may name (`command:NAME`, PROTOCOL.md §11), by name: each a line
    /// for `/bin/sh -c`, set by the administrator (`[escalation.commands]` in `server.toml`).
    public var escalationCommands: [String: String] = [:]
    /// An ntfy server that wakes iPhones (`--ntfy-upstream`, PROTOCOL.md §12), and its access token.
    public var ntfyUpstream: String?
    public var ntfyUpstreamToken: String?
    /// Web Push endpoints allowed besides the browsers' push services (`--webpush-allow`, PROTOCOL.md §14): URL prefixes.
    public var webPushAllow: [String] = []
    /// Proxies whose `X-Forwarded-For` and `X-Forwarded-Proto` are believed (`--trusted-proxy`,
    /// PROTOCOL.md §15): addresses or CIDR networks.
    public var trustedProxies: [String] = []

    /// Whether every request reaches the service over https: it serves TLS itself, or its
    /// public URL is https (TLS ended by a proxy). The session cookie is `Secure` then.
    public var servesHTTPS: Bool {
        tlsCertPath != nil || publicURL.map { $0.lowercased().hasPrefix("https://") } == true
    }

    public init() {}
}

/// What a connection may cost the service before it is cut (`notty serve --header-timeout`,
/// `--idle-timeout`, `--max-connections`).
public struct ConnectionLimits: Sendable {
    /// A request head must be complete this long after the connection opens, or after its
    /// first byte on a kept-alive connection (slowloris).
    public var headerTimeout: Duration = .seconds(10)
    /// A kept-alive connection with no request in progress is closed after this long.
    public var idleTimeout: Duration = .seconds(60)
    /// Open connections at most, doorbells included; one more is answered `503` and closed.
    public var maxConnections = 10_000

    public init() {}
}
