import Foundation
import NottyStore
import NottyTestSupport

// notty-bench: benchmarks that print figures (build with -c release). Usage:
//   swift run -c release notty-bench service [--quick]
//   swift run -c release notty-bench client [--quick] [--count N]
//   swift run -c release notty-bench tui [--quick] [--count N]
//   swift run -c release notty-bench desktop [--quick] [--count N]   (needs dbus-daemon, Xvfb, dunst)
//   swift run -c release notty-bench interruptions [--quick] [--count N]   (quiet toggles and a storm of 1,000; needs dbus-daemon, Xvfb, dunst)
//   swift run -c release notty-bench doorbells [--quick]   (idle doorbells: memory at 5,000/10,000/15,000, fan-out to 100 users)
//   swift run -c release notty-bench sync [--count N] [--rounds R] [--baseline PATH]
//   swift run -c release notty-bench startup [--count N] [--rounds R] [--baseline PATH]
//   swift run -c release notty-bench webhooks [--quick]
//   swift run -c release notty-bench incidents [--quick]
//   swift run -c release notty-bench heartbeats [--quick]   (10,000 heartbeats: 1,000 due at once, then a tenth due each second alone and beside publishes)
//   swift run -c release notty-bench ntfy [--quick]
//   swift run -c release notty-bench instances [--quick] [--postgres URL] [--rounds R]
//   swift run -c release notty-bench escalation [--quick]   (10,000 pending across 1,000 users: due lag, retraction lag, CPU, publish rate)
//   swift run -c release notty-bench oncall [--quick]       (1,000 teams with rotations, 10,000 pending team escalations: the same figures)
//   swift run -c release notty-bench actions [--quick]   (press → outcome on another device, 1,000 presses at once, the publish rate with actions)
//   swift run -c release notty-bench teams [--quick]   (CPU a publish to teams of 1/10/100, a member's dismiss → another member's device, a feed half the team's)
//   swift run -c release notty-bench webpush [--quick]   (publish → its push at a stand-in push service; one publish to 1,000 browsers)
//   swift run -c release notty-bench webinbox [--count N] [--rounds R] [--width PX]   (headless Chromium at PX, default 390 (a phone): sign-in → first list, offline open, a dismiss → gone, with N notifications; the app's size)
//   swift run -c release notty-bench count [--count N] [--rounds R]   (notty count: the badge read, the store opened, the whole process)
//   swift run -c release notty-bench start [--count N] [--notty PATH] [--hello PATH] [--server PATH] [--deb PATH] [--image REF]
//       (what each start costs and what the builds weigh, beside a static hello: scripts/start-table runs it)
//   swift run -c release notty-bench search [--count N] [--no-postgres] [--store PATH]   (the service's search over N of one user, default 1,000,000, beside today's LIKE)
//   swift run -c release notty-bench counts [--count N] [--no-postgres]   (GET …/counts kept as data over N of one user, default 100,000, beside the walk of the rows; a publish's CPU with the counts and without)
//   swift run -c release notty-bench explain
//   swift run -c release notty-bench windows STORE   (client windows of an existing store)
//   swift run -c release notty-bench frames STORE [--quick] [--pause-ms N]   (a center frame's phases on an existing store, N ms idle before each key)
// (instances compares SQLite with one and two `notty serve` instances on one PostgreSQL, with
// many users and with one; explain prints the plans of the service's hot PostgreSQL queries on a
// 1,000,000-row table.)
// Each starts the real `notty serve` (the binary built next to this one) on a free loopback
// port with a fresh SQLite store in a temporary folder, drives it and real `notty` processes
// over real sockets and terminals, prints figures, and always stops what it started.

let arguments: [String] = Array(CommandLine.arguments.dropFirst())
let quick = arguments.contains("--quick")
/// The word after `name`, when there is one.
func option(_ name: String) -> String? {
    arguments.firstIndex(of: name).flatMap { arguments.indices.contains($0 + 1) ? arguments[$0 + 1] as String : nil }
}
let count = option("--count").flatMap { Int($0) } ?? (quick ? 20_000 : 100_000)
raiseFileLimit()
let rounds = option("--rounds").flatMap { Int($0) } ?? 3
/// This build's `notty`, and with `--baseline PATH` another one first, alternated round by round.
var builds = [(name: "this build", binary: Repository.nottyBinary)]
if let baseline = option("--baseline") {
    builds.insert((name: "baseline", binary: URL(fileURLWithPath: baseline)), at: 0)
}

switch arguments.first {
case "actions":
    let service = try await ServiceBench.start()
    do {
        try await ActionsBench(service: service, presses: quick ? 100 : 500).run()
    } catch {
        print("benchmark failed: \(error)")
    }
    await service.stop()
case "teams":
    let service = try await ServiceBench.start()
    do {
        try await TeamsBench(service: service, quick: quick).run()
    } catch {
        print("benchmark failed: \(error)")
    }
    await service.stop()
case "escalation":
    let service = try await ServiceBench.start()
    do {
        try await EscalationBench(service: service, users: quick ? 100 : 1000, pending: quick ? 1000 : 10_000).run()
    } catch {
        print("benchmark failed: \(error)")
    }
    await service.stop()
case "webinbox":
    let service = try await ServiceBench.start()
    do {
        var bench = WebInboxBench(service: service, count: count, rounds: option("--rounds").flatMap { Int($0) } ?? 5)
        bench.width = option("--width").flatMap { Int($0) } ?? 390
        try await bench.run()
    } catch {
        print("benchmark failed: \(error)")
    }
    await service.stop()
case "webpush":
    let service = try await ServiceBench.start(extraArguments: ["--webpush-allow", "http://127.0.0.1:"])
    do {
        try await WebPushBench(service: service, publishes: quick ? 50 : 300, fanOut: quick ? 100 : 1000).run()
    } catch {
        print("benchmark failed: \(error)")
    }
    await service.stop()
case "oncall":
    let service = try await ServiceBench.start()
    do {
        try await EscalationBench(service: service, users: quick ? 100 : 1000, pending: quick ? 1000 : 10_000, teams: true).run()
    } catch {
        print("benchmark failed: \(error)")
    }
    await service.stop()
case "service":
    let bench = try await ServiceBench.start()
    do {
        try await bench.run(quick: quick)
    } catch {
        print("benchmark failed: \(error)")
    }
    await bench.stop()
case "client", "tui", "desktop", "interruptions":
    let service = try await ServiceBench.start()
    do {
        let device = try await SyncedDevice.prepare(service: service, count: count)
        if arguments.first == "client" {
            try await ClientBench(service: service, device: device).run(quick: quick)
        } else if arguments.first == "interruptions" {
            try await InterruptionsBench(service: service, device: device).run(toggles: quick ? 20 : 100, storm: 1000)
        } else if arguments.first == "desktop" {
            try await DesktopBench(service: service, device: device).run(rounds: quick ? 50 : 200)
        } else {
            try await TUIBench(service: service, device: device).run(quick: quick)
        }
    } catch {
        print("benchmark failed: \(error)")
    }
    await service.stop()
case "count":
    try await CountBench(count: count, rounds: rounds).run()
case "counts":
    do {
        try await ServiceCountsBench(rows: option("--count").flatMap { Int($0) } ?? 100_000, postgres: !arguments.contains("--no-postgres")).run()
    } catch {
        print("benchmark failed: \(error)")
    }
case "search":
    do {
        try await SearchBench(
            rows: option("--count").flatMap { Int($0) } ?? (quick ? 100_000 : 1_000_000), postgres: !arguments.contains("--no-postgres"),
            store: option("--store")
        )
        .run()
    } catch {
        print("benchmark failed: \(error)")
    }
case "start":
    let service = try await ServiceBench.start()
    do {
        try await StartBench(
            service: service, count: count, notty: option("--notty").map { URL(fileURLWithPath: $0) } ?? Repository.nottyBinary,
            hello: option("--hello").map { URL(fileURLWithPath: $0) }, server: option("--server").map { URL(fileURLWithPath: $0) },
            deb: option("--deb").map { URL(fileURLWithPath: $0) }, image: option("--image")
        ).run()
    } catch {
        print("benchmark failed: \(error)")
    }
    await service.stop()
case "doorbells":
    try await DoorbellBench(steps: quick ? [1000, 2000] : [5000, 10_000, 15_000], breakdownCount: quick ? 1000 : 5000).run()
case "startup":
    let service = try await ServiceBench.start()
    do {
        let device = try await SyncedDevice.prepare(service: service, count: count)
        try await StartupBench(service: service, device: device, builds: builds, rounds: rounds).run()
    } catch {
        print("benchmark failed: \(error)")
    }
    await service.stop()
case "sync":
    let service = try await ServiceBench.start()
    do {
        try await SyncBench(service: service, count: count, rounds: rounds, builds: builds).run()
    } catch {
        print("benchmark failed: \(error)")
    }
    await service.stop()
case "webhooks":
    let bench = try await ServiceBench.start()
    do {
        try await WebhookBench(service: bench).run(quick: quick)
    } catch {
        print("benchmark failed: \(error)")
    }
    await bench.stop()
case "incidents":
    let bench = try await ServiceBench.start()
    do {
        try await IncidentBench(service: bench).run(quick: quick)
    } catch {
        print("benchmark failed: \(error)")
    }
    await bench.stop()
case "heartbeats":
    let bench = try await ServiceBench.start()
    do {
        try await HeartbeatBench(service: bench).run(quick: quick)
    } catch {
        print("benchmark failed: \(error)")
    }
    await bench.stop()
case "ntfy":
    let bench = try await ServiceBench.start(extraArguments: NtfyBench.connections)
    do {
        try await NtfyBench(service: bench).run(quick: quick)
    } catch {
        print("benchmark failed: \(error)")
    }
    await bench.stop()
case "instances":
    let postgres = option("--postgres")
    do {
        try await InstancesBench(quick: quick, postgresServer: postgres, roundCount: rounds).run()
    } catch {
        print("benchmark failed: \(error)")
    }
case "explain":
    do {
        try await ExplainBench().run()
    } catch {
        print("benchmark failed: \(error)")
    }
case "windows" where arguments.count > 1:
    try ClientBench.windows(try await LocalStore.open(path: arguments[1]), repeats: quick ? 5 : 20)
case "frames" where arguments.count > 1:
    try FrameBench.run(storePath: arguments[1], repeats: quick ? 100 : 1000, pause: .milliseconds(option("--pause-ms").flatMap { Int($0) } ?? 0))
default:
    print(
        "usage: notty-bench service|actions|escalation|teams|client|tui|desktop|interruptions|doorbells|sync|startup|webhooks|incidents|heartbeats|ntfy|instances|explain|windows STORE|frames STORE [--quick] [--count N] [--rounds R] [--baseline PATH] [--postgres URL]"
    )
    exit(2)
}
