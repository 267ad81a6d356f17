import Foundation
import Hummingbird
import HummingbirdTesting
import NottyCore
import NottyStore
import NottySync
import NottyTestSupport
import Testing

/// A stand-in for an ntfy server and a webhook receiver on loopback: it records every request
/// and answers `503` to the next `failNext` of them (a target that fails on purpose).
final class TargetRecorder: @unchecked Sendable {
    struct Hit: Sendable {
        var method: String
        var path: String
        var headers: [String: String]
        var body: String
        var at: Date
        var json: [String: Any]? { (try? JSONSerialization.jsonObject(with: Data(body.utf8))) as? [String: Any] }
    }

    let hits = Locked<[Hit]>([])
    let failNext = Locked<Int>(0)

    func application() -> some ApplicationProtocol {
        let router = Router()
        for method in [HTTPRequest.Method.get, .post, .put, .delete] {
            router.on("**", method: method) { request, _ -> Response in
                let body = try await request.body.collect(upTo: 1 << 20)
                var headers: [String: String] = [:]
                for field in request.headers { headers[field.name.canonicalName] = field.value }
                self.hits.update {
                    $0.append(Hit(method: request.method.rawValue, path: request.uri.path, headers: headers, body: String(buffer: body), at: Date()))
                }
                // A target that does not answer (the service gives up at 15 s).
                if request.uri.path.hasPrefix("/slow") { try await Task.sleep(for: .seconds(20)) }
                let fail = self.failNext.update { count -> Bool in
                    guard count > 0 else { return false }
                    count -= 1
                    return true
                }
                return Response(status: fail ? .serviceUnavailable : .ok, body: .init(byteBuffer: ByteBuffer(string: "{}")))
            }
        }
        return Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
    }

    func matching(_ method: String, _ path: String) -> [Hit] { hits.value.filter { $0.method == method && $0.path == path } }
    func paths() -> [String] { hits.value.map { "\($0.method) \($0.path)" } }
}

extension Locked {
    var value: Value { update { $0 } }
}

/// Escalation (PROTOCOL.md §11) with real processes: `notty serve`, devices through the real `notty`,
/// a stand-in ntfy server and webhook receiver, Apprise as the administrator's command.
@Suite("Escalation end to end", .timeLimit(.minutes(5)), .serialized)
struct EscalationEndToEndTests {
    @Test(
        "a High notification unhandled for --after reaches ntfy (JSON, sequence_id, priority 5) and a webhook; dismissed on B it is cleared and told handled (device, state); deleted, it is deleted; Low, handled in time, snoozed and muted are never sent"
    )
    func escalatedAndTakenBack() async throws {
        let recorder = TargetRecorder()
        try await recorder.application().test(.live) { client in
            let port = try #require(client.port)
            let world = try await TwoDevices()
            let (a, b) = (world.a, world.b)
            let ntfy = "http://127.0.0.1:\(port)/ntfy/alerts", hook = "http://127.0.0.1:\(port)/hook"
            // 30 s: handling the ones that must never be sent takes a few seconds; 10 times that on a loaded machine.
            let added = try await a.run(["escalate", "add", "--after", "30s", "--to", "ntfy:\(ntfy)", "--to", "webhook:\(hook)", "--name", "night"])
            #expect(added.status == 0, "\(added.err)")
            let mute = try await a.run(["mute", "--group", "noisy"])
            #expect(mute.status == 0, "\(mute.err)")
            #expect(try await a.run(["sync"]).status == 0)

            let low = try await world.publish("FYI", extra: ["--priority", "low"])
            let handledInTime = try await world.publish("Flapping", extra: ["--priority", "high"])
            let snoozed = try await world.publish("Later", extra: ["--priority", "high"])
            let muted = try await world.publish("Noise", extra: ["--priority", "high", "--group", "noisy"])
            #expect(try await b.run(["sync"]).status == 0)
            #expect(try await b.run(["read", handledInTime]).status == 0)
            #expect(try await b.run(["snooze", snoozed, "--for", "1h"]).status == 0)
            // Published last, it comes due last: when it has been sent, the others' time has passed.
            let urgent = try await world.publish(
                "Disk full", body: "/var at 99%", extra: ["--priority", "high", "--url", "https://mon.example/disk"])

            // Escalated: ntfy's JSON publish at the server's root, and the webhook's event.
            #expect(
                await eventually(timeout: .seconds(120)) {
                    recorder.matching("POST", "/hook").count >= 1 && recorder.matching("POST", "/ntfy/").count >= 1
                },
                "nothing escalated: \(recorder.paths()) \(world.service.logText())")
            let published = try #require(recorder.matching("POST", "/ntfy/").first?.json)
            #expect(published["topic"] as? String == "alerts")
            #expect(published["sequence_id"] as? String == urgent)
            #expect(published["priority"] as? Int == 5)
            #expect(published["title"] as? String == "Disk full")
            #expect(published["message"] as? String == "/var at 99%")
            #expect(published["click"] as? String == "https://mon.example/disk")
            let escalated = try #require(recorder.matching("POST", "/hook").first?.json)
            #expect(escalated["event"] as? String == "escalated" && escalated["rule"] as? String == "night")
            #expect((escalated["notification"] as? [String: Any])?["id"] as? String == urgent)

            // Every device shows it: notty show and list --json on B (after its next sync).
            let shownOnB = await eventually(timeout: .seconds(30)) {
                _ = try? await b.run(["sync"])
                let shown = (try? await b.run(["show", urgent]))?.out ?? ""
                return shown.contains("escalated:   ntfy:\(ntfy) ") && shown.contains("escalated:   webhook:\(hook) ")
            }
            let shown = try await b.run(["show", urgent]).out
            #expect(shownOnB, "\(shown)")
            let line = try #require(try await b.run(["list", "--json"]).out.split(separator: "\n").first { $0.contains(urgent) })
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            let records = try #require(object["escalations"] as? [[String: Any]])
            #expect(Set(records.compactMap { $0["target"] as? String }) == ["ntfy:\(ntfy)", "webhook:\(hook)"])
            #expect(records.allSatisfy { $0["outcome"] as? String == "sent" && $0["rule"] as? String == "night" && $0["at"] is String })

            // Handled on B: cleared at ntfy, and the webhook told who handled it.
            let dismissedAt = Date()
            #expect(try await b.run(["dismiss", urgent]).status == 0)
            #expect(
                await eventually(timeout: .seconds(30)) {
                    recorder.matching("PUT", "/ntfy/alerts/\(urgent)/clear").count == 1
                        && recorder.matching("POST", "/hook").count == 2
                }, "\(recorder.paths())")
            let handled = try #require(recorder.matching("POST", "/hook").last?.json)
            #expect(handled["event"] as? String == "handled")
            let by = try #require(handled["handledBy"] as? [String: Any])
            #expect(by["device"] as? String == "B" && by["state"] as? String == "dismissed", "\(by)")
            let retracted = try #require(recorder.matching("PUT", "/ntfy/alerts/\(urgent)/clear").first)
            report("dismiss → ntfy clear: \(Int(retracted.at.timeIntervalSince(dismissedAt) * 1000)) ms (the dismiss command's own run included)")

            // Deleted: deleted at ntfy, and the webhook told.
            #expect(try await b.run(["delete", urgent]).status == 0)
            #expect(
                await eventually(timeout: .seconds(30)) {
                    recorder.matching("DELETE", "/ntfy/alerts/\(urgent)").count == 1
                        && recorder.matching("POST", "/hook").count == 3
                }, "\(recorder.paths())")
            #expect(recorder.matching("POST", "/hook").last?.json?["event"] as? String == "deleted")

            // Nothing else was ever sent: not the Low one, the one handled in time, the snoozed or the muted one.
            let all = recorder.hits.value
            for other in [low, handledInTime, snoozed, muted] {
                #expect(!all.contains { $0.body.contains(other) || $0.path.contains(other) }, "\(other) was sent: \(recorder.paths())")
            }
            #expect(all.count == 6, "\(recorder.paths())")

            // --list: each target's last delivery.
            let listed = try await a.run(["escalate", "--list"])
            #expect(listed.out.contains("ntfy:\(ntfy): delivered") && listed.out.contains("webhook:\(hook): delivered"), "\(listed.out)")
            let json = try await a.run(["escalate", "--list", "--json"])
            let rule = try #require(try JSONSerialization.jsonObject(with: Data(json.out.utf8)) as? [String: Any])
            #expect((rule["deliveries"] as? [[String: Any]])?.count == 2, "\(json.out)")
        }
    }

    @Test(
        "a target that fails is retried with backoff, its error in --list and /metrics; a SIGKILL between publish and due time loses nothing; escalate test reports each target"
    )
    func durable() async throws {
        let recorder = TargetRecorder()
        try await recorder.application().test(.live) { client in
            let port = try #require(client.port)
            let world = try await TwoDevices()
            let a = world.a
            let hook = "http://127.0.0.1:\(port)/hook"
            #expect(try await a.run(["escalate", "add", "--after", "5s", "--to", "webhook:\(hook)", "--name", "pager"]).status == 0)

            // escalate test: one test message, its outcome printed.
            let tested = try await a.run(["escalate", "test", "pager"])
            #expect(tested.status == 0 && tested.out == "ok webhook:\(hook)\n", "\(tested.out)\(tested.err)")
            #expect(recorder.matching("POST", "/hook").first?.json?["event"] as? String == "test")
            let dead = try await a.run(["escalate", "add", "--after", "1h", "--to", "webhook:http://127.0.0.1:9/nothing", "--name", "dead"])
            #expect(dead.status == 0)
            let failed = try await a.run(["escalate", "test", "dead"])
            #expect(failed.status == 1 && failed.out.hasPrefix("failed webhook:http://127.0.0.1:9/nothing: "), "\(failed.out)")

            // Published, then the service is killed before the due time; restarted, it sends.
            let id = try await world.publish("Backup failed", extra: ["--priority", "high"])
            world.service.sigkill()
            recorder.failNext.update { $0 = 2 }
            try await world.service.start(port: world.service.port)
            // Two failures (503), then delivered: 5 s after the due time, then 10 s more.
            #expect(
                await eventually(timeout: .seconds(120)) { recorder.matching("POST", "/hook").filter { $0.body.contains(id) }.count == 3 },
                "\(recorder.paths())")
            let attempts = recorder.matching("POST", "/hook").filter { $0.body.contains(id) }
            #expect(attempts.allSatisfy { $0.json?["event"] as? String == "escalated" })
            if attempts.count == 3 {
                let gaps = zip(attempts.dropFirst(), attempts).map { $0.at.timeIntervalSince($1.at) }
                #expect(gaps[0] >= 4.5 && gaps[1] >= gaps[0], "backoff gaps \(gaps)")
            }
            let listed = try await a.run(["escalate", "--list"])
            #expect(
                listed.out.contains("webhook:\(hook): delivered") && listed.out.contains("last error") && listed.out.contains("answered 503"),
                "\(listed.out)")
            let metrics = String(decoding: try await ServiceClient.send(.GET, world.service.url + "/metrics").body, as: UTF8.self)
            #expect(metrics.contains(#"notty_escalation_deliveries_total{outcome="retry"} 2"#), "\(metrics)")
        }
    }

    @Test("a target that does not answer delays no other target of the rule")
    func slowTarget() async throws {
        let recorder = TargetRecorder()
        try await recorder.application().test(.live) { client in
            let port = try #require(client.port)
            let world = try await TwoDevices()
            #expect(
                try await world.a.run([
                    "escalate", "add", "--after", "5s", "--to", "webhook:http://127.0.0.1:\(port)/slow",
                    "--to", "webhook:http://127.0.0.1:\(port)/fast",
                ]).status == 0)
            let id = try await world.publish("Disk full", extra: ["--priority", "high"])
            #expect(
                await eventually(timeout: .seconds(30)) {
                    recorder.matching("POST", "/slow").count == 1 && recorder.matching("POST", "/fast").count == 1
                },
                "\(recorder.paths())")
            let slow = try #require(recorder.matching("POST", "/slow").first), fast = try #require(recorder.matching("POST", "/fast").first)
            #expect(fast.body.contains(id))
            // The slow one is still waiting for its answer (20 s): the fast one did not wait for it.
            #expect(fast.at.timeIntervalSince(slow.at) < 10, "fast arrived \(fast.at.timeIntervalSince(slow.at)) s after slow")
        }
    }

    @Test(
        "Apprise as the administrator's command: the notification reaches it in NOTTY_* variables only (a title of $(touch FILE) arrives as text), with NOTTY_EVENT"
    )
    func appriseCommand() async throws {
        guard let apprise = which("apprise") else {
            Issue.record("apprise is not installed (pip install apprise): .ci/run installs it")
            return
        }
        let recorder = TargetRecorder()
        try await recorder.application().test(.live) { client in
            let port = try #require(client.port)
            let directory = Repository.temporaryDirectory("notty-apprise")
            let settings = directory.appendingPathComponent("server.toml")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            try """
            [escalation.commands]
            apprise = "\(apprise) -t \\"$NOTTY_EVENT: $NOTTY_TITLE\\" -b \\"$NOTTY_BODY\\" json://127.0.0.1:\(port)/apprise"
            """.write(to: settings, atomically: true, encoding: .utf8)
            let service = try await ServeProcess(directory: directory.appendingPathComponent("service"), extraArguments: ["--config", settings.path])
            let world = try await TwoDevices(directory: directory, a: service, b: service)
            #expect(try await world.a.run(["escalate", "add", "--after", "5s", "--to", "command:apprise"]).status == 0)
            let marker = directory.appendingPathComponent("touched")
            let title = "$(touch \(marker.path))"
            let id = try await world.publish(title, body: "`id` and \"quotes\"", extra: ["--priority", "high"])
            #expect(await eventually(timeout: .seconds(60)) { recorder.matching("POST", "/apprise").count >= 1 }, "\(recorder.paths())")
            let sent = try #require(recorder.matching("POST", "/apprise").first?.json)
            #expect(sent["title"] as? String == "escalated: " + title, "\(sent)")
            #expect(sent["message"] as? String == "`id` and \"quotes\"", "\(sent)")
            #expect(!FileManager.default.fileExists(atPath: marker.path), "the title ran as a command")
            let pulled = try await world.b.run(["sync"])
            #expect(pulled.status == 0, "\(pulled.err)")
            let read = try await world.b.run(["read", id])
            #expect(
                read.status == 0 && read.out == "read 1 notification(s)\n", "B did not read it: \(read.out) \(read.err) (after sync: \(pulled.out))")
            // On a loaded machine the read may have been queued (exit 0, "queued" on stderr): sent now.
            let flushed = try await world.b.run(["sync"])
            let waiting = try await world.store(world.b).perform { try $0.outboxCount() }
            #expect(flushed.status == 0 && waiting == 0, "B's read was not sent (\(waiting) waiting): \(flushed.out) \(flushed.err)")
            // Each run starts Python (seconds on a loaded machine) and may be retried 5 s later: 90 s.
            let handled = await eventually(timeout: .seconds(90)) { recorder.matching("POST", "/apprise").count == 2 }
            let list = handled ? "" : ((try? await world.a.run(["escalate", "--list"]))?.out ?? "")
            #expect(handled, "\(recorder.paths()) \(list) \(service.logText())")
            #expect((recorder.matching("POST", "/apprise").last?.json?["title"] as? String)?.hasPrefix("handled: ") == true)
        }
    }
}

/// The program `name` on `PATH`, if any.
func which(_ name: String) -> String? {
    for directory in (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":") {
        let path = "\(directory)/\(name)"
        if FileManager.default.isExecutableFile(atPath: path) { return path }
    }
    return nil
}

@Suite(
    "Escalation on two instances sharing PostgreSQL", .timeLimit(.minutes(5)), .serialized,
    .enabled(if: TestPostgres.testsRun, "PostgreSQL is not available here"))
struct EscalationInstancesTests {
    @Test("20 escalations published through two instances: each sent once, each taken back once")
    func eachOnce() async throws {
        let recorder = TargetRecorder()
        try await recorder.application().test(.live) { client in
            let port = try #require(client.port)
            let directory = Repository.temporaryDirectory("notty-escalation-instances")
            let environment = ["NOTTY_POSTGRES_URL": try await TestPostgres.createDatabase()]
            let one = try await ServeProcess(directory: directory.appendingPathComponent("one"), environment: environment)
            let two = try await ServeProcess(sharingStorageOf: one, directory: directory.appendingPathComponent("two"))
            let world = try await TwoDevices(directory: directory, a: one, b: two)
            /// What the two services warned of, for a failure to show.
            func warnings() -> String {
                [one, two].map {
                    $0.logText(last: 200_000).split(separator: "\n").filter { $0.contains(" warning ") || $0.contains(" error ") }.suffix(20).joined(
                        separator: "\n")
                }
                .joined(separator: "\n---\n")
            }
            #expect(try await world.a.run(["escalate", "add", "--after", "5s", "--to", "webhook:http://127.0.0.1:\(port)/hook"]).status == 0)
            var ids: [String] = []
            for n in 0..<20 {
                let server = n.isMultiple(of: 2) ? one : two
                let result = try await world.a.run([
                    "publish", "--server", server.url, "--client-id", one.clientId, "--client-secret=\(one.clientSecret)",
                    "--uns-id", world.uns, "--title", "Alert \(n)", "--priority", "high",
                ])
                // A busy service is asked again by notty publish itself (503, 429).
                try #require(result.status == 0, "\(result.err) \(warnings())")
                ids.append(result.out.trimmingCharacters(in: .whitespacesAndNewlines))
            }
            func events(_ event: String) -> [String] {
                recorder.matching("POST", "/hook").compactMap { hit -> String? in
                    guard let json = hit.json, json["event"] as? String == event else { return nil }
                    return (json["notification"] as? [String: Any])?["id"] as? String
                }
            }
            #expect(
                await eventually(timeout: .seconds(60)) { Set(events("escalated")) == Set(ids) },
                "\(events("escalated").count) of 20 escalated \(warnings())")
            // Handled on B (instance two): each taken back once.
            #expect(try await world.b.run(["sync"]).status == 0)
            #expect(try await world.b.run(["read"] + ids).status == 0)
            #expect(
                await eventually(timeout: .seconds(60)) { Set(events("handled")) == Set(ids) },
                "\(events("handled").count) of 20 handled \(warnings())")
            #expect(events("escalated").count == 20, "sent more than once: \(events("escalated").count) \(warnings())")
            #expect(events("handled").count == 20, "taken back more than once: \(events("handled").count)")
        }
    }
}
