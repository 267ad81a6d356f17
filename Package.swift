// swift-tools-version:6.2
// Linux only: the terminal links ncursesw and Glibc, the desktop libdbus-1, the center calls
// glibc's malloc_trim. (No macOS platform is declared because none is supported.)
import PackageDescription

let package = Package(
    name: "notty",
    products: [
        .executable(name: "notty", targets: ["notty"]),
        .executable(name: "notty-server", targets: ["notty-server"]),
        .executable(name: "notty-bench", targets: ["notty-bench"]),
    ],
    dependencies: [
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket.git", from: "2.8.1"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-auth.git", from: "2.5.0"),
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-crypto.git", "3.12.3"..<"5.0.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        .package(url: "https://github.com/LebJe/TOMLKit.git", .upToNextMinor(from: "0.6.0")),  // 0.x: minor releases may break
    ],
    targets: [
        // Pure model: the notification, states, views, merge rules, wire types. Foundation only.
        .target(name: "NottyCore"),
        // Secrets at rest: the box that seals and opens what users hand the service, the store's
        // key (its check, sweep and rotation), tokens and password hashes.
        .target(
            name: "NottySecrets",
            dependencies: [
                "NottyCore",
                .product(name: "HummingbirdBcrypt", package: "hummingbird-auth"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        // What the service keeps, as its storages read and write it: users, apps, tokens,
        // subscriptions, stored notifications and the change feed's pages, held publishes,
        // escalation's tracks, deliveries and what each target was sent.
        .target(name: "NottyRecords", dependencies: ["NottyCore", "NottySecrets"]),
        // The service's domain: auth and accounts, publishing, feeds, admin, maintenance, teams,
        // actions, the storage protocols and the merge rules they apply, a user's inbox as an ntfy
        // topic, the doorbell hub; what it asks of paging, Web Push, on call, heartbeats and the
        // ntfy upstream (their engines are modules of their own). It knows nothing of HTTP
        // (ServiceError is mapped to a status by NottyHTTP); its storage is the backends'.
        .target(
            name: "NottyService",
            dependencies: [
                "NottyRecords",
                "NottyCore",
                "NottySecrets",
                "NottyWebhooks",
                "NottyPOSIX",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ]
        ),
        // Paging: escalation (§11) and on-call pages (§13.2) at work, over the service's
        // storage protocols (its `Paging`), the way the storage backends are.
        .target(
            name: "NottyPaging",
            dependencies: [
                "NottyRecords", "NottyCore", "NottyService", "NottySecrets", "NottyPOSIX", .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // Web Push (§14) at work: the browsers' subscriptions pushed what changes, encrypted
        // (RFC 8291) and signed (VAPID), over the service's storage protocols (its `WebPush`).
        .target(
            name: "NottyWebPush",
            dependencies: [
                "NottyRecords",
                "NottyCore", "NottyService", "NottySecrets", .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // ntfy's and Gotify's publishing APIs on a hook's token, and the ntfy upstream that wakes
        // iPhones (the service's `NtfyUpstreaming`).
        .target(
            name: "NottyDialects",
            dependencies: ["NottyCore", "NottyRecords", "NottyService", "NottySecrets", "NottyWebhooks"]
        ),
        // On call (§13.2) at work: rotations, overrides, calendar feeds and contacts, over the
        // service's storage protocols (its `OnCallService`).
        .target(
            name: "NottyOnCall",
            dependencies: ["NottyRecords", "NottyCore", "NottyService", "NottySecrets"]
        ),
        // The incident doors and heartbeats (§16) at work: PagerDuty's Events API and Opsgenie's
        // Alert API on a hook's key; a user's or a team's heartbeats, their pings, Opsgenie's
        // Heartbeat API, and the job that announces what is overdue (the service's `HeartbeatService`).
        .target(
            name: "NottyIncidents",
            dependencies: ["NottyRecords", "NottyCore", "NottyService", "NottySecrets", "NottyWebhooks"]
        ),
        // The service as `notty serve` runs it: `NotificationService` composed with paging's,
        // Web Push's, on call's and heartbeats' engines.
        .target(
            name: "NottyComposition",
            dependencies: [
                "NottyService", "NottySecrets", "NottyPaging", "NottyWebPush", "NottyOnCall", "NottyIncidents", "NottyDialects",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // What both of the service's storages share: a notification as its row's columns, the
        // mutation rule over rows, the group-commit queue.
        .target(name: "NottyStorageSupport", dependencies: ["NottyRecords", "NottyCore", "NottyService", "NottySecrets"]),
        // The service's storage on SQLite (GRDB): one writer thread, group commit, migrations.
        .target(
            name: "NottyServiceSQLite",
            dependencies: [
                "NottyRecords",
                "NottyCore", "NottyService", "NottySecrets", "NottyStorageSupport", "NottySQLite", .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The service's storage on PostgreSQL (PostgresNIO), for several instances together.
        .target(
            name: "NottyServicePostgres",
            dependencies: [
                "NottyRecords",
                "NottyCore", "NottyService", "NottySecrets", "NottyStorageSupport",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The service's HTTP layer: Hummingbird routes (Graph, the user API, hooks, the ntfy
        // and Gotify doors, metrics), middleware, errors as statuses, connection guard, TLS.
        .target(
            name: "NottyHTTP",
            dependencies: [
                "NottyRecords",
                "NottyCore",
                "NottyPOSIX",
                "NottyWebhooks",
                "NottyService",
                "NottyIncidents",
                "NottyDialects",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "NIOHTTPTypesHTTP1", package: "swift-nio-extras"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ]
        ),
        // The service's outbound HTTP (escalation targets and contacts, actions, Web Push, the ntfy upstream) on
        // AsyncHTTPClient, behind NottyService's `OutboundHTTP`; and a recording one for tests.
        .target(
            name: "NottyOutbound",
            dependencies: [
                "NottyCore",
                "NottyPOSIX",
                "NottyService",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
            ]
        ),
        // Webhook senders (GitHub, GitLab, Alertmanager/Grafana, JSON, text) and the ntfy
        // dialect's wire types, as pure parsers and writers.
        .target(name: "NottyWebhooks", dependencies: ["NottyCore"]),
        // What both SQLite stores (the service's and a device's) do alike: WAL checkpoints,
        // plans kept whatever values are bound (CSQLiteConfig: the variadic sqlite3_db_config).
        .systemLibrary(name: "CSQLiteConfig", providers: [.apt(["libsqlite3-dev"])]),
        .target(
            name: "NottySQLite",
            dependencies: [
                "CSQLiteConfig", "NottyCore", .product(name: "GRDB", package: "GRDB.swift"), .product(name: "GRDBSQLite", package: "GRDB.swift"),
            ]
        ),
        // The client's durable store: notifications, outbox, cursor (GRDB/SQLite, WAL).
        .target(
            name: "NottyStore",
            dependencies: [
                "NottyCore", "NottyPOSIX", "NottySQLite", .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
            ]
        ),
        // The sync engine: HTTP client and tokens, pull/flush, doorbell and polling.
        .target(
            name: "NottySync",
            dependencies: [
                "NottyCore",
                "NottyStore",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
                .product(name: "TOMLKit", package: "TOMLKit"),
            ]
        ),
        // Desktop popups as a pure state machine (events in, D-Bus calls and state changes out).
        .target(name: "NottyDesktop", dependencies: ["NottyCore"]),
        // The only code that calls libdbus: freedesktop notifications on the session bus.
        // libdbus-1 declared on our side and loaded with dlopen when --desktop needs it: no
        // -dev package to build, no libdbus-1.so.3 needed to run.
        .target(name: "CDBus", linkerSettings: [.linkedLibrary("dl")]),
        .target(name: "NottyDBus", dependencies: ["CDBus", "NottyDesktop", "NottyPOSIX"]),
        // Process plumbing: the one self-pipe wake-up (`WakeUp`), signals (crash and termination
        // handlers that run one clean-up first, or a stream for a clean quit). CPOSIX declares
        // the glibc calls Swift's Glibc module leaves out (malloc_trim, getauxval, the pty calls).
        .systemLibrary(name: "CPOSIX"),
        .target(name: "NottyPOSIX", dependencies: ["CPOSIX", "NottyCore"]),
        // The terminal UI as a pure core: state, events, update, render to a grid of cells.
        .target(name: "NottyTUI", dependencies: ["NottyCore"]),
        // The only code that calls ncurses: paints a Screen, reads keys, restores the terminal.
        // Linked by name, not through pkg-config: its -D flags are ones SwiftPM drops with a
        // warning, and shim.h defines what they would.
        .systemLibrary(name: "CNcursesw", providers: [.apt(["libncurses-dev"])]),
        .target(name: "NottyTerminal", dependencies: ["CNcursesw", "NottyCore", "NottyTUI", "NottyPOSIX"]),
        // The notification center: its loop and its store access (windows, counts, the search
        // index), reading ahead while idle, opening links, giving memory back.
        .target(name: "NottyCenter", dependencies: ["CPOSIX", "NottyCore", "NottyPOSIX", "NottyStore", "NottySync", "NottyTUI", "NottyTerminal"]),
        // `notty poll`'s work beside syncing: announcing what arrives, `--exec`/`--on-change`
        // commands, desktop popups. No ncurses.
        .target(name: "NottyPoll", dependencies: ["NottyCommandLine", "NottyCore", "NottyPOSIX", "NottyStore", "NottyDesktop", "NottyDBus"]),
        // What both programs share: one-line errors and the lines written for a person
        // (say/warn), the root command's run, durations, passwords.
        .target(name: "NottyCommandLine", dependencies: ["NottyCore", .product(name: "ArgumentParser", package: "swift-argument-parser")]),
        // `notty`, the device's program (argument parsing and wiring only): the center, sync,
        // poll and every scriptable command, without the service's libraries. `notty serve`,
        // `notty admin` and the demo's service run `notty-server`, which is built with it
        // (an executable target as a dependency is built beside, not linked in).
        .executableTarget(
            name: "notty",
            dependencies: [
                "NottyCore",
                "NottyCommandLine",
                "NottyStore",
                "NottySync",
                "NottyCenter",
                "NottyPOSIX",
                "NottyPoll",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // `notty-server`: `notty serve`, `notty admin` and `notty demo`'s embedded service.
        .executableTarget(
            name: "notty-server",
            dependencies: [
                "NottyRecords",
                "NottyCore",
                "NottySecrets",
                "NottyCommandLine",
                "NottyService",
                "NottyComposition",
                "NottyServiceSQLite",
                "NottyServicePostgres",
                "NottyHTTP",
                "NottyOutbound",
                "NottyPOSIX",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "TOMLKit", package: "TOMLKit"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // Benchmarks that print figures (never timed tests).
        .executableTarget(
            name: "notty-bench",
            dependencies: [
                "NottyRecords",
                "CPOSIX",  // `tui` drives the center through a pseudo-terminal
                "NottyCenter",  // `frames` runs the center's own parts
                "NottyCore",
                "NottySecrets",
                "NottyService",  // `instances` adds its many users straight into the storage
                "NottyWebPush",  // `webpush`: opens what the service pushed, as a browser does
                "NottyServiceSQLite",
                "NottyServicePostgres",
                "NottyStore",
                "NottyTUI",
                "NottyTerminal",
                "NottyTestSupport",
                "NottyPOSIX",
                .product(name: "Hummingbird", package: "hummingbird"),  // `escalation`'s stand-in webhook receiver
                .product(name: "Crypto", package: "swift-crypto"),  // `webpush`: the browsers' keys
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "GRDB", package: "GRDB.swift"),  // `search`: today's LIKE beside the index
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ]
        ),
        // Helpers for tests and benchmarks that run the real notty (not shipped).
        .target(name: "NottyTestSupport", dependencies: ["NottyCore", "NottyPOSIX", .product(name: "GRDB", package: "GRDB.swift")]),
        // Linked into the test bundle: bounds how many test cases run at once (see width.c).
        .target(name: "CTestRunWidth"),
        .testTarget(name: "NottyCoreTests", dependencies: ["NottyCore", "NottyTestSupport"]),
        .testTarget(
            name: "NottyCommandLineTests", dependencies: ["NottyCommandLine", .product(name: "ArgumentParser", package: "swift-argument-parser")]),
        .testTarget(name: "NottySQLiteTests", dependencies: ["NottySQLite", "NottyTestSupport", .product(name: "GRDB", package: "GRDB.swift")]),
        .testTarget(name: "NottyDesktopTests", dependencies: ["NottyDesktop", "NottyCore", "NottyTestSupport"]),
        .testTarget(name: "NottyTerminalTests", dependencies: ["NottyTerminal", "NottyTUI", "NottyPOSIX", "CNcursesw", "NottyTestSupport"]),
        .testTarget(name: "NottyPOSIXTests", dependencies: ["NottyPOSIX"]),
        .testTarget(
            name: "NottyOutboundTests",
            dependencies: [
                "NottyOutbound", "NottyService",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ]
        ),
        .testTarget(name: "NottyDBusTests", dependencies: ["NottyDBus", "NottyDesktop", "NottyCore", "NottyTestSupport"]),
        .testTarget(name: "NottyPollTests", dependencies: ["NottyPoll", "NottyCore", "NottyStore", "NottyDesktop", "NottyDBus", "NottyTestSupport"]),
        .testTarget(name: "NottyTUITests", dependencies: ["NottyTUI", "NottyCore", "NottyTestSupport"], exclude: ["Golden"]),
        .testTarget(name: "NottyWebhooksTests", dependencies: ["NottyWebhooks", "NottyCore"], exclude: ["Fixtures"]),
        .testTarget(name: "NottyCenterTests", dependencies: ["NottyCenter", "NottyStore", "NottyTUI", "NottyCore", "NottyTestSupport"]),
        .testTarget(
            name: "NottyStoreTests", dependencies: ["NottyCore", "NottyStore", "NottyTestSupport", .product(name: "GRDB", package: "GRDB.swift")]),
        // Tests of the real executables: notty serve, notty on devices, in tmux, on a session
        // bus, behind Alertmanager, against schemathesis (they need `notty` built).
        .testTarget(
            name: "NottyEndToEndTests",
            dependencies: [
                "NottyCore", "NottySecrets", "NottyStore", "NottySync", "NottyTestSupport", "NottyPOSIX", "CTestRunWidth",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
            ]
        ),
        .testTarget(
            name: "NottySyncTests",
            dependencies: [
                "NottyRecords",
                "NottyCore", "NottyStore", "NottySync", "NottyService", "NottyComposition", "NottyServiceSQLite", "NottyTestSupport",
                .product(name: "GRDB", package: "GRDB.swift"),
            ]
        ),
        .testTarget(
            name: "NottyServiceTests",
            dependencies: [
                "NottyDialects",
                "NottyRecords",
                "NottyCore",
                "NottySecrets",
                "NottyService",
                "NottyPaging",
                "NottyWebPush",
                "NottyComposition",
                "NottyStorageSupport",
                "NottyOutbound",
                "NottyServiceSQLite",
                "NottyServicePostgres",
                "NottyHTTP",
                "NottyTestSupport",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
            ]
        ),
    ]
)
