import Foundation
import NottyCore
import NottyPOSIX
import NottyStore
import NottySync
import NottyTestSupport
import Testing

/// Real processes under load: four devices acting at once while the app re-publishes, with the
/// CPU starved; afterwards every device's store equals the service. `NOTTY_STRESS_ROUNDS=N`
/// (scripts/stress N) runs N rounds in a row; not in CI.
@Suite("Real-process stress", .serialized)
struct StressTests {
    static let rounds = Int(ProcessInfo.processInfo.environment["NOTTY_STRESS_ROUNDS"] ?? "") ?? 0

    @Test(
        "4 devices (2 running poll --live) act at random at once, the app re-publishes meanwhile, the CPU is starved: every store ends equal to the service",
        .enabled(if: rounds > 0), .timeLimit(.minutes(120)))
    func stress() async throws {
        var failures = 0
        let start = ContinuousClock.now
        for round in 1...Self.rounds {
            let roundStart = ContinuousClock.now
            let failure = try await Self.round(seed: UInt64(round))
            if let failure { failures += 1 }
            report("stress round \(round): \(failure ?? "converged") in \(roundStart.duration(to: .now))")
            #expect(failure == nil, "round \(round): \(failure ?? "")")
        }
        report("stress: \(Self.rounds) rounds, \(failures) failed, in \(start.duration(to: .now))")
    }

    static let verbs: [[String]] = [["read"], ["unread"], ["dismiss"], ["activate"], ["snooze", "--for", "1h"]]

    /// One round; the first difference found, or nil.
    static func round(seed: UInt64) async throws -> String? {
        var random = SeededRandom(seed: seed)
        let directory = Repository.temporaryDirectory("notty-stress")
        defer { try? FileManager.default.removeItem(at: directory) }
        let serve = try await ServeProcess(
            directory: directory.appendingPathComponent("service"),
            extraArguments: ["--publish-rate", "100000", "--publish-burst", "100000"])
        defer { serve.stop() }
        let devices = (0..<4).map { NottyCLI(home: directory.appendingPathComponent("device\($0)")) }
        for (index, device) in devices.enumerated() {
            try await device.login(serve.url, device: "D\(index)")
        }
        let uns = try await devices[0].run(["subscribe", "--app", "ci.example.com"]).out.trimmingCharacters(in: .whitespacesAndNewlines)
        let appToken = try await token(
            serve.url, ["grant_type": "client_credentials", "client_id": serve.clientId, "client_secret": serve.clientSecret])
        let url = serve.url
        @Sendable func publish(_ appId: String, _ title: String) async throws -> String {
            let answer = try await ServiceClient.send(
                .POST, url + "/beta/me/notifications",
                headers: [("Authorization", "Bearer \(appToken)"), ("X-UNS-ID", uns), ("Content-Type", "application/json")],
                body: Data(#"{"appNotificationId":"\#(appId)","payload":{"visualContent":{"title":"\#(title)"}}}"#.utf8))
            guard answer.status == 201, case .object(let object)? = JSONValue(jsonText: String(decoding: answer.body, as: UTF8.self)),
                case .string(let id)? = object["id"]
            else { throw SupportError("publish \(appId): \(answer.status)") }
            return id
        }
        var ids: [String] = []
        for n in 0..<24 { ids.append(try await publish("n\(n)", "first \(n)")) }
        for device in devices { _ = try await device.run(["sync"]) }

        // Two devices follow live; the CPU is starved by one busy loop per core.
        let polls = try devices.prefix(2).enumerated().map { index, device in
            try device.start(["poll", "--live"], log: directory.appendingPathComponent("poll\(index).log"))
        }
        // (Logged to a file of the round's: startLogged makes its log anew, never /dev/null.)
        let busy = try (0..<max(2, ProcessInfo.processInfo.activeProcessorCount)).map { index in
            try startLogged("/bin/sh", ["-c", "while :; do :; done"], log: directory.appendingPathComponent("busy\(index).log"), environment: [:])
        }
        // (SIGKILL for the busy loops: sh running a builtin loop does not die of SIGTERM.)
        func stopBusy() { for process in busy where process.isRunning { kill(process.pid, SIGKILL); process.wait() } }
        defer {
            stopBusy()
            for process in polls where process.isRunning { process.signal(SIGTERM) }
        }

        // Every device acts at once: 25 random state changes each (and the two without poll
        // sync now and then), while the app re-publishes and publishes anew.
        let plans: [[[String]]] = devices.indices.map { index in
            (0..<25).map { _ in
                if index >= 2 && Int.random(in: 0..<6, using: &random) == 0 { return ["sync"] }
                return verbs.randomElement(using: &random)! + [ids.randomElement(using: &random)!]
            }
        }
        let republish: [(String, String)] = (0..<30).map { n in
            let appId = Int.random(in: 0..<3, using: &random) == 0 ? "new\(n)" : "n\(Int.random(in: 0..<24, using: &random))"
            return (appId, "again \(n)")
        }
        let done = Locked(0)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (device, plan) in zip(devices, plans) {
                group.addTask {
                    for arguments in plan {
                        // A refusal (an id deleted meanwhile) is part of the game.
                        if try await device.run(arguments).status == 0 { done.update { $0 += 1 } }
                    }
                }
            }
            group.addTask {
                for (appId, title) in republish {
                    _ = try await publish(appId, title)
                    try await Task.sleep(for: .milliseconds(100))
                }
            }
            try await group.waitForAll()
        }
        stopBusy()

        // Quiet: every device syncs until its store equals the service (the polls go on).
        let userToken = try await token(serve.url, ["grant_type": "password", "username": "alice", "password": "s3cret-pw"])
        var difference: String? = "not compared"
        _ = try await eventually(timeout: .seconds(120), every: .milliseconds(500)) {
            for device in devices { _ = try await device.run(["sync"]) }
            let answer = try await ServiceClient.send(
                .GET, serve.url + "/v1/me/notifications?view=all&top=1000",
                headers: [("Authorization", "Bearer \(userToken)")], body: nil)
            let truth = try NottyJSON.decoder.decode(NotificationList.self, from: answer.body).value
            difference = nil
            for (index, device) in devices.enumerated() {
                let store = try await LocalStore.open(path: device.home.appendingPathComponent("store.sqlite").path)
                if try (await store.perform { try $0.outboxCount() }) != 0 { difference = "D\(index): outbox not empty"; break }
                let local = try (await store.perform { try $0.window(view: .all, limit: 1000) })
                if local.count != truth.count { difference = "D\(index): \(local.count) notifications, service \(truth.count)"; break }
                if let (mine, theirs) = zip(local, truth).first(where: { $0 != $1 }) {
                    difference = "D\(index) differs on \(theirs.appNotificationId):\n  device  \(mine)\n  service \(theirs)"
                    break
                }
            }
            return difference == nil
        }
        if difference == nil {
            let counts = try await LocalStore.open(path: devices[0].home.appendingPathComponent("store.sqlite").path).perform { try $0.counts() }
            report("  \(done.value) of 100 commands done; the end: \(counts)")
        }
        return difference
    }
}
