import ArgumentParser
import Foundation
import Hummingbird
import Logging
import NIOCore
import NIOPosix
import NottyCommandLine
import NottyComposition
import NottyCore
import NottyHTTP
import NottyOutbound
import NottyPOSIX
import NottySecrets
import NottyService
import NottyServicePostgres
import NottyServiceSQLite

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: ServerCommand.serveAbstract,
        discussion: """
            App servers publish with POST /beta/me/notifications (an app token from \
            POST /oauth2/v2.0/token and the user's X-UNS-ID); devices sign in with the password \
            grant, read /v1/me/notifications/changes and listen on the /v1/me/push doorbell. \
            GET /healthz answers 200 while storage answers; GET /metrics is Prometheus text. \
            SIGINT or SIGTERM stops it gracefully. Durations: 90s, 15m, 4h, 7d. Every limit \
            below has the default shown; the ones not given keep it.

            Storage is one SQLite file (--db) unless --postgres URL (or NOTTY_POSTGRES_URL) \
            names a PostgreSQL database; several instances may share that one, behind any load \
            balancer: every device is told of every change, whichever instance it talks to.
            """)

    @Option(
        help: ArgumentHelp(
            "Read settings from a TOML file: one key per flag below, without its dashes (port = 8787, public-url = \"https://notty.example.com\"). A flag given here wins over the file.",
            valueName: "file")) var config: String?
    @OptionGroup var storage: StorageOptions
    @Option(help: "Address to listen on. Use 0.0.0.0 to accept other machines.") var host = "127.0.0.1"
    @Option(help: "Port to listen on (0 picks a free one).") var port = 8787
    @Option(name: .customLong("tls-cert"), help: ArgumentHelp("PEM certificate chain: serve HTTPS/WSS (with --tls-key).", valueName: "file"))
    var tlsCert: String?
    @Option(name: .customLong("tls-key"), help: ArgumentHelp("PEM private key for --tls-cert.", valueName: "file")) var tlsKey: String?
    @Option(
        name: .customLong("poll-interval"), help: ArgumentHelp("Seconds between client polls (X-Poll-Interval; default 30).", valueName: "duration"))
    var pollInterval: DurationArgument?
    @Option(
        name: .customLong("default-ttl"),
        help: ArgumentHelp("Lifetime of a notification with no expirationDateTime (default 7d).", valueName: "duration")) var defaultTTL:
        DurationArgument?
    @Option(name: .customLong("max-ttl"), help: ArgumentHelp("Furthest expirationDateTime allowed (default 30d).", valueName: "duration")) var maxTTL:
        DurationArgument?
    @Option(name: .customLong("publish-rate"), help: "Publishes per second per app (default 100).") var publishRate: Double?
    @Option(name: .customLong("publish-burst"), help: "Publishes per app allowed in a burst (default 1000).") var publishBurst: Double?
    @Option(
        name: .customLong("max-body"),
        help: ArgumentHelp("Largest request body: bytes, or with k/KiB or m/MiB (default 64KiB); larger ones get 413.", valueName: "size"))
    var maxBody: ByteSizeArgument?
    @Option(
        name: .customLong("max-webhook-body"),
        help: ArgumentHelp("Largest webhook body (POST /v1/hooks/…), as --max-body (default 1MiB).", valueName: "size")) var maxWebhookBody:
        ByteSizeArgument?
    @Option(
        name: .customLong("public-url"),
        help: ArgumentHelp(
            "The service's address as others reach it (e.g. behind a proxy), for the webhook URLs it hands out (default: the request's Host).",
            valueName: "url")) var publicURL: String?
    @Option(
        name: .customLong("max-app-notification-id"), help: ArgumentHelp("Longest appNotificationId, in characters (default 256).", valueName: "n"))
    var maxAppNotificationId: Int?
    @Option(name: .customLong("max-group-name"), help: ArgumentHelp("Longest groupName, in characters (default 256).", valueName: "n"))
    var maxGroupName: Int?
    @Option(name: .customLong("max-title"), help: ArgumentHelp("Longest title, in characters (default 1024).", valueName: "n")) var maxTitle: Int?
    @Option(
        name: .customLong("history"),
        help: ArgumentHelp(
            "How long deleted notifications are remembered for devices that were away; older cursors get 410 and resync (default 30d).",
            valueName: "duration")) var history: DurationArgument?
    @Option(name: .customLong("access-token-lifetime"), help: ArgumentHelp("Lifetime of access tokens (default 1h).", valueName: "duration"))
    var accessTokenLifetime: DurationArgument?
    @Option(
        name: .customLong("refresh-token-lifetime"),
        help: ArgumentHelp("Lifetime of a device's refresh token; past it the device signs in again (default 90d).", valueName: "duration"))
    var refreshTokenLifetime: DurationArgument?
    @Option(
        name: .customLong("header-timeout"),
        help: ArgumentHelp(
            "A request head not complete this long after its connection opens (or its first byte) is cut: slow or stalled clients (default 10s).",
            valueName: "duration")) var headerTimeout: DurationArgument?
    @Option(
        name: .customLong("idle-timeout"),
        help: ArgumentHelp(
            "A kept-alive connection with no request in progress is closed after this long; doorbells are not (default 60s).", valueName: "duration"))
    var idleTimeout: DurationArgument?
    @Option(
        name: .customLong("max-connections"),
        help: ArgumentHelp(
            "Connections open at once, doorbells included; one more is answered 503 and closed (default 10000). Raise the descriptor limit (LimitNOFILE) with it.",
            valueName: "n")) var maxConnections: Int?
    @Option(name: .customLong("log-level"), help: "trace, debug, info, notice, warning, error or critical.") var logLevel = "info"
    @Option(
        name: .customLong("escalation-command"),
        help: ArgumentHelp(
            "A command escalation rules may name as command:NAME, run with /bin/sh -c on this machine with the notification in NOTTY_* variables (repeatable; in server.toml: [escalation.commands] NAME = \"LINE\").",
            valueName: "NAME=LINE")) var escalationCommands: [String] = []
    @Option(
        name: [.customLong("outbound-allow"), .customLong("action-allow")],
        help: ArgumentHelp(
            "Limit every request a user aims (escalation targets, actions) to this host name or address/network (10.0.0.0/8, fd00::/8; repeatable; in server.toml: outbound-allow = [\"…\"]; --action-allow is the same). Link-local, unspecified and multicast addresses and the service's own address are refused always.",
            valueName: "host|cidr")) var outboundAllow: [String] = []
    @Flag(
        name: .customLong("forget-sealed-secrets"),
        help: ArgumentHelp(
            "Start although the secret key this store's secrets were sealed with is lost: the key given seals from now on, and each secret sealed with the lost one says so when used (give it again)."
        )) var forgetSealedSecrets = false
    @Option(
        name: .customLong("ntfy-upstream"),
        help: ArgumentHelp(
            "An ntfy server that wakes iPhones (https://ntfy.sh): each message to a topic sends it ntfy's poll request (the topic's hash, never the topic). Needs --public-url.",
            valueName: "url")) var ntfyUpstream: String?
    @Option(
        name: .customLong("ntfy-upstream-token"),
        help: ArgumentHelp("An access token for --ntfy-upstream (sent as Authorization: Bearer).", valueName: "token")) var ntfyUpstreamToken: String?
    @Option(
        name: .customLong("webpush-allow"),
        help: ArgumentHelp(
            "Also take browsers' Web Push endpoints that begin with this URL (repeatable; in server.toml: webpush-allow = [\"…\"]); otherwise only the browsers' own push services (Google's, Mozilla's, Apple's, Microsoft's). The outbound policy still applies.",
            valueName: "url")) var webPushAllow: [String] = []
    @Option(
        name: .customLong("trusted-proxy"),
        help: ArgumentHelp(
            "A proxy in front of the service, by address or network (127.0.0.1, 10.0.0.0/8; repeatable; in server.toml: trusted-proxy = [\"…\"]): its X-Forwarded-For is the client's address (failed sign-ins are counted by it) and its X-Forwarded-Proto: https makes the session cookie Secure.",
            valueName: "cidr")) var trustedProxy: [String] = []
    @Option(
        name: .customLong("io-threads"),
        help: ArgumentHelp(
            "Threads that read, write and (with --tls-cert) encrypt sockets (default: half the cores, at least 1). Handlers run on Swift's own pool, one thread per core, beside them. With TLS on few cores, try the core count.",
            valueName: "n")) var ioThreads: Int?

    func validate() throws {
        if (tlsCert == nil) != (tlsKey == nil) { throw ArgumentParser.ValidationError("--tls-cert and --tls-key go together") }
        guard (0...65535).contains(port) else { throw ArgumentParser.ValidationError("--port must be 0…65535") }
        guard Logger.Level(rawValue: logLevel) != nil else {
            throw ArgumentParser.ValidationError("--log-level must be one of trace, debug, info, notice, warning, error, critical")
        }
        if let publishRate, publishRate <= 0 { throw ArgumentParser.ValidationError("--publish-rate must be positive") }
        if let publishBurst, publishBurst < 1 { throw ArgumentParser.ValidationError("--publish-burst must be at least 1") }
        if let maxConnections, !(1...10_000_000).contains(maxConnections) {
            throw ArgumentParser.ValidationError("--max-connections must be 1…10000000")
        }
        if let headerTimeout, headerTimeout.seconds < 1 { throw ArgumentParser.ValidationError("--header-timeout must be at least 1s") }
        if let idleTimeout, idleTimeout.seconds < 1 { throw ArgumentParser.ValidationError("--idle-timeout must be at least 1s") }
        if let ioThreads, !(1...256).contains(ioThreads) { throw ArgumentParser.ValidationError("--io-threads must be 1…256") }
        if let maxBody, !(1024...(64 << 20)).contains(maxBody.bytes) { throw ArgumentParser.ValidationError("--max-body must be 1KiB…64MiB") }
        if let maxWebhookBody, !(1024...(64 << 20)).contains(maxWebhookBody.bytes) {
            throw ArgumentParser.ValidationError("--max-webhook-body must be 1KiB…64MiB")
        }
        if let publicURL, !LaunchURL.isValid(publicURL) || publicURL.hasSuffix("/") || publicURL.contains("?") {
            throw ArgumentParser.ValidationError(
                "--public-url must be an http or https URL without a trailing / or a query, e.g. https://notty.example.com")
        }
        for (flag, value) in [("--max-app-notification-id", maxAppNotificationId), ("--max-group-name", maxGroupName), ("--max-title", maxTitle)] {
            if let value, !(1...65_536).contains(value) { throw ArgumentParser.ValidationError("\(flag) must be 1…65536") }
        }
        for (flag, value) in [
            ("--history", history), ("--access-token-lifetime", accessTokenLifetime), ("--refresh-token-lifetime", refreshTokenLifetime),
        ] {
            if let value, value.seconds < 60 { throw ArgumentParser.ValidationError("\(flag) must be at least 1m") }
        }
        _ = try Self.commands(escalationCommands)
        _ = try outboundPolicy()
        if let ntfyUpstream {
            guard LaunchURL.isValid(ntfyUpstream), !ntfyUpstream.contains("?") else {
                throw ArgumentParser.ValidationError("--ntfy-upstream must be an ntfy server's http(s) URL, e.g. https://ntfy.sh")
            }
            guard publicURL != nil else {
                throw ArgumentParser.ValidationError(
                    "--ntfy-upstream and --public-url go together: the upstream knows a topic by the hash of its URL as the phone has it")
            }
        }
        if ntfyUpstreamToken != nil && ntfyUpstream == nil { throw ArgumentParser.ValidationError("--ntfy-upstream-token goes with --ntfy-upstream") }
    }

    /// Where the requests users aim may go: `--outbound-allow`, and never here.
    func outboundPolicy() throws -> OutboundPolicy {
        do {
            return try OutboundPolicy(allow: outboundAllow, listeners: [.init(host: host, port: port)], publicURL: publicURL)
        } catch {
            throw ArgumentParser.ValidationError(error.message)
        }
    }

    /// `NAME=LINE` flags as a table; a name is a word (letters, digits, - _ .) and each is given once.
    static func commands(_ flags: [String]) throws -> [String: String] {
        var commands: [String: String] = [:]
        for flag in flags {
            guard let equals = flag.firstIndex(of: "=") else {
                throw ArgumentParser.ValidationError("--escalation-command takes NAME=LINE, e.g. ops='apprise -t \"$NOTTY_TITLE\" tgram://…'")
            }
            let name = String(flag[..<equals]), line = String(flag[flag.index(after: equals)...])
            guard (try? EscalationTarget(parsing: "command:" + name)) != nil else {
                throw ArgumentParser.ValidationError(
                    "--escalation-command: \(name.isEmpty ? "a name is missing" : "\(name) is not a name (letters, digits, - _ .)")")
            }
            guard !line.trimmingCharacters(in: .whitespaces).isEmpty else {
                throw ArgumentParser.ValidationError("--escalation-command \(name) has no command line")
            }
            guard commands[name] == nil else { throw ArgumentParser.ValidationError("--escalation-command \(name) is given twice") }
            commands[name] = line
        }
        return commands
    }

    func run() async throws {
        try await reportingErrors {
            var config = ServiceConfig()
            config.host = host
            config.port = port
            config.tlsCertPath = tlsCert
            config.tlsKeyPath = tlsKey
            if let pollInterval { config.pollInterval = pollInterval.seconds }
            if let defaultTTL { config.defaultTTL = defaultTTL.seconds }
            if let maxTTL { config.maxTTL = maxTTL.seconds }
            if let publishRate { config.publishRate = publishRate }
            if let publishBurst { config.publishBurst = publishBurst }
            if let maxBody { config.maxBodyBytes = maxBody.bytes }
            if let maxWebhookBody { config.maxWebhookBodyBytes = maxWebhookBody.bytes }
            config.publicURL = publicURL
            if let maxAppNotificationId { config.limits.appNotificationId = maxAppNotificationId }
            if let maxGroupName { config.limits.groupName = maxGroupName }
            if let maxTitle { config.limits.title = maxTitle }
            if let history { config.historyRetention = history.seconds }
            if let accessTokenLifetime { config.accessTokenLifetime = accessTokenLifetime.seconds }
            if let refreshTokenLifetime { config.refreshTokenLifetime = refreshTokenLifetime.seconds }
            if let headerTimeout { config.connections.headerTimeout = .seconds(headerTimeout.seconds) }
            if let idleTimeout { config.connections.idleTimeout = .seconds(idleTimeout.seconds) }
            if let maxConnections { config.connections.maxConnections = maxConnections }
            config.escalationCommands = try Self.commands(escalationCommands)
            config.ntfyUpstream = ntfyUpstream
            config.ntfyUpstreamToken = ntfyUpstreamToken
            config.webPushAllow = webPushAllow
            for proxy in trustedProxy where !TrustedProxies.isNetwork(proxy) {
                throw CLIError("--trusted-proxy \(proxy): give an address or a network, such as 127.0.0.1 or 10.0.0.0/8")
            }
            config.trustedProxies = trustedProxy
            if config.defaultTTL > config.maxTTL { throw CLIError("--default-ttl is longer than --max-ttl") }
            if config.accessTokenLifetime > config.refreshTokenLifetime {
                throw CLIError("--access-token-lifetime is longer than --refresh-token-lifetime")
            }
            LogLines.bootstrap()
            var logger = Logger(label: "notty.serve")
            logger.logLevel = Logger.Level(rawValue: logLevel) ?? .info
            // Held while it serves: `notty admin restore` refuses to replace the file meanwhile.
            let lock = try storage.sqlitePath.map { path in
                do { return try StoreLock.serving(path) } catch { throw CLIError("\(error)") }
            }
            defer { withExtendedLifetime(lock) {} }
            let store = try await storage.open(logger: logger)
            let secrets = try await storage.secrets(store, forget: forgetSealedSecrets)
            // What is clear (from before secrets were sealed) or under an older key is sealed now.
            let sealed = try await SecretKeeping.sweepIfNeeded(secrets, storage: store)
            if sealed > 0 { logger.notice("secrets sealed in the store", metadata: ["count": "\(sealed)", "key": "\(secrets.primary.id)"]) }
            let outbound = HTTPClientOutbound(policy: try outboundPolicy())
            let service = NotificationService(storage: store, config: config, logger: logger, outbound: outbound, secrets: secrets)
            let scheme = tlsCert == nil ? "http" : "https"
            let dbPath = storage.place
            // Fewer socket threads than cores: on 2 cores, one I/O thread beside Swift's two
            // handler threads publishes about 10% more per second than two would.
            let eventLoops = MultiThreadedEventLoopGroup(numberOfThreads: ioThreads ?? max(1, System.coreCount / 2))
            defer { eventLoops.shutdownGracefully { _ in } }
            let tls = try wrapStartError { try tlsCert.flatMap { cert in try tlsKey.map { try ReloadableTLS(certificatePath: cert, keyPath: $0) } } }
            // SIGHUP reads --tls-cert and --tls-key again (certbot renews every 60 days): new
            // connections take the new certificate, open ones keep theirs.
            let reloads = Task { [logger] in
                for await _ in Signals.terminationSignals([SIGHUP]) {
                    guard let tls else { logger.notice("SIGHUP: no --tls-cert to read again"); continue }
                    do {
                        try tls.reload()
                        logger.notice("SIGHUP: the certificate was read again", metadata: ["tls-cert": "\(tls.certificatePath)"])
                    } catch {
                        logger.error("SIGHUP: the certificate could not be read again; the one in use stays", metadata: ["error": "\(error)"])
                    }
                }
            }
            defer { reloads.cancel() }
            let app = try wrapStartError {
                try ServerApplication.build(service: service, eventLoopGroup: eventLoops, tls: tls) { [logger] port in
                    outbound.listening(on: port)
                    logger.notice("notty serve listening", metadata: ["url": "\(scheme)://\(host):\(port)", "db": "\(dbPath)"])
                }
            }
            do {
                try await app.runService()
            } catch {
                throw CLIError("the service stopped: \(error). Is port \(port) already in use? Try --port.")
            }
            await outbound.shutdown()
            try? await store.close()
        }
    }
}

private func wrapStartError<T>(_ body: () throws -> T) throws -> T {
    do {
        return try body()
    } catch {
        throw CLIError("cannot start: \(error). Check --tls-cert and --tls-key.")
    }
}
