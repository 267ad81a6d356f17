import Foundation
import Hummingbird
import HummingbirdTesting
import NottyCore
import NottyTestSupport
import Testing

/// Actions (PROTOCOL.md §12) with real processes: `notty serve`, two devices through the real
/// `notty`, a stand-in target, and a real Alertmanager silenced from `notty act`.
@Suite("Actions end to end", .timeLimit(.minutes(5)), .serialized)
struct ActionEndToEndTests {
    @Test(
        "notty publish --action, notty show on B lists it, notty act on A and B at once makes one request with its headers and body; the outcome shows on both; clear dismisses everywhere; a failing action exits non-zero with one line"
    )
    func pressFromTwoDevices() async throws {
        let recorder = TargetRecorder()
        try await recorder.application().test(.live) { client in
            let port = try #require(client.port)
            let world = try await TwoDevices()
            let (a, b) = (world.a, world.b)
            let target = "http://127.0.0.1:\(port)/deploy/approve"
            let id = try await world.publish(
                "Deploy web 1.42?",
                extra: [
                    "--action", "http, Approve, \(target), method=PUT, headers.Authorization=Bearer s3cret, body='{\"ok\": true}', clear=true",
                    "--action", "view, Diff, https://git.example.com/compare/1.41...1.42",
                ])
            #expect(try await b.run(["sync"]).status == 0)
            let shown = try await b.run(["show", id])
            #expect(shown.out.contains("action 1 Approve (runs on the service, then dismisses)"), "\(shown.out)")
            #expect(shown.out.contains("action 2 Diff (opens https://git.example.com/compare/1.41...1.42)"), "\(shown.out)")
            #expect(!shown.out.contains("s3cret") && !shown.out.contains("/deploy/approve"))
            let listed = try await b.run(["list", "--json"]).out
            #expect(!listed.contains("s3cret") && !listed.contains("deploy"), "\(listed)")

            // Pressed on both devices at once: one request.
            async let onA = a.run(["act", id, "1"])
            async let onB = b.run(["act", String(id.prefix(8)), "approve"])
            let (ra, rb) = try await (onA, onB)
            #expect(ra.status == 0 && rb.status == 0, "A: \(ra.err) B: \(rb.err)")
            #expect((ra.out + rb.out).contains("Approve: done"), "\(ra.out) \(rb.out)")
            let hits = recorder.matching("PUT", "/deploy/approve")
            #expect(hits.count == 1, "\(recorder.paths())")
            #expect(
                hits.first?.headers["authorization"] == "Bearer s3cret" || hits.first?.headers["Authorization"] == "Bearer s3cret",
                "\(hits.first?.headers ?? [:])")
            #expect(hits.first?.body == #"{"ok": true}"#)
            // Every device shows the outcome; clear dismissed it everywhere.
            for device in [a, b] {
                #expect(try await device.run(["sync"]).status == 0)
                let after = try await device.run(["show", id, "--json"]).out
                let n = try NottyJSON.decoder.decode(UserNotification.self, from: Data(after.utf8))
                #expect(n.userActionState == .dismissed, "\(after)")
                #expect(n.actionResults?.first?.status == .done && n.actionResults?.first?.httpStatus == 200, "\(after)")
                #expect(["A", "B"].contains(n.actionResults?.first?.device ?? ""), "\(after)")
                #expect(try await device.run(["show", id]).out.contains("action 1 Approve (runs on the service, then dismisses) — done on "))
            }

            // A failing target: non-zero, one line saying why; it runs again when pressed again.
            recorder.failNext.update { $0 = 1 }
            let other = try await world.publish("Restart nginx?", extra: ["--action", "http, Restart, http://127.0.0.1:\(port)/restart"])
            #expect(try await b.run(["sync"]).status == 0)
            let failed = try await b.run(["act", other, "Restart"])
            #expect(failed.status != 0)
            #expect(
                failed.err.contains("Restart: failed") && failed.err.contains("HTTP 503") && failed.err.split(separator: "\n").count == 1,
                "\(failed.err)")
            let retried = try await b.run(["act", other, "1"])
            #expect(retried.status == 0 && retried.out.contains("Restart: done"), "\(retried.err)")
            #expect(recorder.matching("POST", "/restart").count == 2)
            // Unknown actions are a clear line.
            let unknown = try await b.run(["act", other, "Reboot"])
            #expect(unknown.status != 0 && unknown.err.contains("has no action \"Reboot\" (it has \"Restart\")"), "\(unknown.err)")
        }
    }

    @Test(
        "a webhook made with --alertmanager: a firing alert carries Silence 1h; notty act silences it in the real Alertmanager (matchers = its labels, createdBy naming user and device) and it is dismissed everywhere",
        .enabled(
            if: TestAlertmanager.available || TestAlertmanager.required,
            "SKIPPED LOUDLY: prometheus-alertmanager or amtool is missing (apt-get install -y prometheus-alertmanager); .ci/run installs it"))
    func silenceAlertmanager() async throws {
        let world = try await TwoDevices()
        let port = TestPostgres.freePort()
        let made = try await world.a.run(["subscribe", "--app", "ci.example.com", "--webhook", "--alertmanager", "http://127.0.0.1:\(port)"])
        #expect(made.status == 0, "\(made.err)")
        let alertmanager = try await TestAlertmanager(webhook: made.out.trimmingCharacters(in: .whitespacesAndNewlines), port: port)
        defer { alertmanager.stop() }
        try await alertmanager.amtool([
            "alert", "add", "alertname=DiskFull", "severity=critical", "instance=nas-1", "--annotation=summary=Disk 91% full",
        ])
        var alert: UserNotification?
        #expect(
            await eventually(timeout: .seconds(30)) {
                _ = try? await world.b.run(["sync"])
                let listed = (try? await world.b.run(["list", "--json"]))?.out ?? ""
                alert = listed.split(separator: "\n").compactMap { try? NottyJSON.decoder.decode(UserNotification.self, from: Data($0.utf8)) }.first {
                    $0.groupName == "DiskFull"
                }
                return alert != nil
            }, "the alert did not arrive:\n\(alertmanager.log.suffix(2000))")
        let fired = try #require(alert)
        #expect(fired.actions?.map(\.label) == ["Silence 1h"], "\(fired.actions ?? [])")

        let silenced = try await world.b.run(["act", fired.id, "Silence 1h"])
        #expect(silenced.status == 0 && silenced.out.contains("Silence 1h: done"), "\(silenced.out)\(silenced.err)")
        let query = try await alertmanager.amtool(["silence", "query", "-o", "json"])
        let silences = try #require(try JSONSerialization.jsonObject(with: Data(query.utf8)) as? [[String: Any]], "\(query)")
        #expect(silences.count == 1, "\(query)")
        let silence = try #require(silences.first)
        #expect(silence["createdBy"] as? String == "notty: alice on B", "\(silence)")
        let matchers = (silence["matchers"] as? [[String: Any]] ?? []).map { "\($0["name"] ?? "")=\($0["value"] ?? "")" }.sorted()
        #expect(matchers == ["alertname=DiskFull", "instance=nas-1", "severity=critical"], "\(matchers)")
        if let ends = (silence["endsAt"] as? String).flatMap(ISOTime.parse) {
            #expect(abs(ends.timeIntervalSinceNow - 3600) < 600, "\(silence)")
        } else {
            Issue.record("no endsAt: \(silence)")
        }
        #expect(try await world.a.run(["sync"]).status == 0)
        let onA = try await world.a.run(["show", fired.id, "--json"]).out
        #expect(try NottyJSON.decoder.decode(UserNotification.self, from: Data(onA.utf8)).userActionState == .dismissed, "\(onA)")
    }
}

@Suite(
    "Actions end to end on two instances", .timeLimit(.minutes(5)), .serialized,
    .enabled(if: TestPostgres.testsRun, "PostgreSQL is not available here"))
struct ActionInstancesEndToEndTests {
    @Test(
        "two notty serve instances on one PostgreSQL: notty act on A (instance 1) and B (instance 2) at once makes one request; both show the outcome"
    )
    func pressThroughTwoInstances() async throws {
        let recorder = TargetRecorder()
        try await recorder.application().test(.live) { client in
            let port = try #require(client.port)
            let directory = Repository.temporaryDirectory("notty-instances")
            let environment = ["NOTTY_POSTGRES_URL": try await TestPostgres.createDatabase()]
            let one = try await ServeProcess(directory: directory.appendingPathComponent("one"), environment: environment)
            let two = try await ServeProcess(sharingStorageOf: one, directory: directory.appendingPathComponent("two"))
            let world = try await TwoDevices(directory: directory, a: one, b: two)
            let id = try await world.publish(
                "Roll back web 1.42?", extra: ["--action", "http, Roll back, http://127.0.0.1:\(port)/rollback, clear=true"])
            #expect(try await world.b.run(["sync"]).status == 0)
            async let onA = world.a.run(["act", id, "1"])
            async let onB = world.b.run(["act", id, "Roll back"])
            let (ra, rb) = try await (onA, onB)
            #expect(ra.status == 0 && rb.status == 0, "A: \(ra.err) B: \(rb.err)")
            #expect(recorder.matching("POST", "/rollback").count == 1, "\(recorder.paths())")
            for device in [world.a, world.b] {
                #expect(try await device.run(["sync"]).status == 0)
                let shown = try await device.run(["show", id, "--json"]).out
                let n = try NottyJSON.decoder.decode(UserNotification.self, from: Data(shown.utf8))
                #expect(n.actionResults?.first?.status == .done && n.userActionState == .dismissed, "\(shown)")
            }
        }
    }
}
