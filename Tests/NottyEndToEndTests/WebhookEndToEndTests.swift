import Foundation
import NottyCore
import NottyTestSupport
import Testing

@Suite(
    "Webhooks end to end: a real Alertmanager, notty serve and two devices", .timeLimit(.minutes(5)), .serialized,
    .enabled(
        if: TestAlertmanager.available || TestAlertmanager.required,
        "SKIPPED LOUDLY: prometheus-alertmanager or amtool is missing (apt-get install -y prometheus-alertmanager); .ci/run installs it"))
struct WebhookEndToEndTests {
    /// Every notification device `cli` lists (after a sync), by title.
    func notifications(_ cli: NottyCLI) async throws -> [UserNotification] { try await cli.syncedNotifications() }

    @Test(
        "an alert posted to Alertmanager reaches a device as one notification (title, priority, group, link); resolved, it is Dismissed on both devices; a group of 50 alerts is 50 notifications from one request"
    )
    func alertmanager() async throws {
        let world = try await TwoDevices()
        let made = try await world.b.run(["subscribe", "--app", "ci.example.com", "--webhook"])
        let url = made.out.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(made.status == 0 && url.hasPrefix("\(world.service.url)/v1/hooks/") && !url.contains("\n"), "\(made.out)\(made.err)")
        let alertmanager = try await TestAlertmanager(webhook: url)
        defer { alertmanager.stop() }

        // One alert, through amtool as an operator would.
        try await alertmanager.amtool([
            "alert", "add", "alertname=DiskFull", "severity=critical", "instance=nas-1",
            "--annotation=summary=Disk 91% full on nas-1", "--annotation=description=/srv has 9% left",
            "--generator-url=http://prometheus.example:9090/graph?g0.expr=disk",
        ])
        var alert: UserNotification?
        #expect(
            try await eventually(timeout: .seconds(20)) {
                alert = try await notifications(world.a).first { $0.groupName == "DiskFull" }
                return alert != nil
            }, "the alert did not arrive:\n\(alertmanager.log.suffix(2000))")
        let fired = try #require(alert)
        #expect(fired.payload.visualContent?.title == "DiskFull: Disk 91% full on nas-1")
        #expect(fired.payload.visualContent?.body?.hasPrefix("/srv has 9% left") == true)
        #expect(fired.priority == .high && fired.launchUrl == "http://prometheus.example:9090/graph?g0.expr=disk")
        #expect(fired.appNotificationId.hasPrefix("alert-") && fired.userActionState == .noInteraction)
        #expect(try await notifications(world.b).filter { $0.groupName == "DiskFull" }.count == 1)

        // Resolved (endsAt in the past): Dismissed on both devices, updated in place.
        let past = ISOTime.format(Date().addingTimeInterval(-5))
        try await alertmanager.post(
            #"[{"labels":{"alertname":"DiskFull","severity":"critical","instance":"nas-1"},"annotations":{"summary":"Disk 91% full on nas-1"},"endsAt":"\#(past)"}]"#
        )
        for device in [world.a, world.b] {
            #expect(
                try await eventually(timeout: .seconds(20)) {
                    try await notifications(device).first { $0.id == fired.id }?.userActionState == .dismissed
                }, "the resolved alert was not dismissed:\n\(alertmanager.log.suffix(2000))")
            let resolved = try #require(try await notifications(device).first { $0.id == fired.id })
            #expect(resolved.payload.visualContent?.title.hasPrefix("✓ Resolved: DiskFull") == true)
        }

        // 50 alerts of one group: one webhook request (they share the service's clock).
        let probes = (0..<50).map {
            #"{"labels":{"alertname":"ProbeFailed","severity":"warning","instance":"host-\#($0)"},"annotations":{"summary":"host-\#($0) down"}}"#
        }
        try await alertmanager.post("[\(probes.joined(separator: ","))]")
        var group: [UserNotification] = []
        #expect(
            try await eventually(timeout: .seconds(20)) {
                group = try await notifications(world.b).filter { $0.groupName == "ProbeFailed" }
                return group.count == 50
            }, "\(group.count) of 50 arrived:\n\(alertmanager.log.suffix(2000))")
        #expect(Set(group.map(\.createdDateTime)).count == 1, "the 50 alerts came in more than one request")
        #expect(Set(group.map(\.appNotificationId)).count == 50 && group.allSatisfy { $0.priority == .none })
    }

    @Test("notty subscribe --webhook --secret: curl with the secret publishes, without it 401; notty devices lists it; revoked, the URL is 404")
    func cli() async throws {
        let world = try await TwoDevices()
        let made = try await world.a.run(["subscribe", "--app", "ci.example.com", "--webhook", "--secret", "hunter2"])
        let url = made.out.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(made.status == 0, "\(made.err)")
        func curl(_ arguments: [String]) async throws -> String {
            try await Repository.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}"] + arguments + [url]).output
        }
        #expect(try await curl(["-d", "Backup failed"]) == "401")
        #expect(try await curl(["-H", "Authorization: Bearer hunter2", "-d", "Backup failed\nnas-1: disk full"]) == "200")
        #expect(try await world.b.run(["sync"]).status == 0)
        let listed = try await world.b.run(["list", "--json"]).out
        #expect(listed.contains(#""title":"Backup failed""#) && listed.contains(#""body":"nas-1: disk full""#), "\(listed)")
        let devices = try await world.a.run(["devices"]).out
        #expect(devices.contains("webhooks") && devices.contains("ci.example.com") && devices.contains("with a secret"), "\(devices)")
        let id = try #require(try await world.a.run(["devices", "--json"]).out.split(separator: "\n").first { $0.contains(#""kind":"webhook""#) })
        let subscription = try #require(
            JSONValue(jsonText: String(id)).flatMap { value -> String? in
                if case .object(let o) = value, case .string(let s)? = o["userNotificationSubscriptionId"] { return s }
                return nil
            })
        let revoke = try await world.a.run(["devices", "revoke", String(subscription.prefix(8))])
        #expect(revoke.status == 0 && revoke.out.contains("its URL answers 404"), "\(revoke.out)\(revoke.err)")
        #expect(try await curl(["-H", "Authorization: Bearer hunter2", "-d", "again"]) == "404")
    }
}
