import Foundation
import NottyCore
import NottyTestSupport
import Testing

/// The incident doors (PROTOCOL.md §16) with the real clients that page PagerDuty: Alertmanager's
/// `pagerduty_configs` and PagerDuty's own Python client, against `notty serve` and two devices.
@Suite("Incident doors end to end: Alertmanager and PagerDuty's client page notty", .timeLimit(.minutes(5)), .serialized)
struct IncidentEndToEndTests {
    /// A webhook's token (the routing key), made on device B.
    func routingKey(_ world: TwoDevices) async throws -> String {
        let made = try await world.b.run(["subscribe", "--app", "ci.example.com", "--webhook"])
        let url = made.out.trimmingCharacters(in: .whitespacesAndNewlines)
        guard made.status == 0, let key = url.split(separator: "/").last else { throw SupportError("subscribe --webhook: \(made.err)") }
        return String(key)
    }

    func notifications(_ cli: NottyCLI) async throws -> [UserNotification] { try await cli.syncedNotifications() }

    @Test(
        "Alertmanager's pagerduty_configs with url aimed at notty serve: a firing alert is High on both devices; resolved, it is Dismissed on both",
        .enabled(
            if: TestAlertmanager.available || TestAlertmanager.required,
            "SKIPPED LOUDLY: prometheus-alertmanager or amtool is missing (apt-get install -y prometheus-alertmanager); .ci/run installs it"))
    func alertmanagerPagerDuty() async throws {
        let world = try await TwoDevices()
        let key = try await routingKey(world)
        let alertmanager = try await TestAlertmanager(
            receiver: """
                pagerduty_configs:
                  - routing_key: '\(key)'
                    url: '\(world.service.url)/v2/enqueue'
                    send_resolved: true
                """)
        defer { alertmanager.stop() }
        try await alertmanager.amtool([
            "alert", "add", "alertname=DiskFull", "severity=critical", "instance=nas-1", "--annotation=summary=Disk 91% full on nas-1",
        ])
        var alert: UserNotification?
        #expect(
            try await eventually(timeout: .seconds(30)) {
                alert = try await notifications(world.a).first { $0.payload.visualContent?.title.contains("DiskFull") == true }
                return alert != nil
            }, "the alert did not arrive:\n\(alertmanager.log.suffix(3000))\n\(world.service.logText().suffix(2000))")
        let fired = try #require(alert)
        #expect(fired.priority == .high && fired.userActionState == .noInteraction, "\(fired)")
        #expect(try await notifications(world.b).filter { $0.id == fired.id }.count == 1)

        let past = ISOTime.format(Date().addingTimeInterval(-5))
        try await alertmanager.post(
            #"[{"labels":{"alertname":"DiskFull","severity":"critical","instance":"nas-1"},"annotations":{"summary":"Disk 91% full on nas-1"},"endsAt":"\#(past)"}]"#
        )
        for device in [world.a, world.b] {
            #expect(
                try await eventually(timeout: .seconds(30)) {
                    try await notifications(device).first { $0.id == fired.id }?.userActionState == .dismissed
                }, "the resolved alert was not dismissed:\n\(alertmanager.log.suffix(3000))")
        }
        let resolved = try #require(try await notifications(world.a).first { $0.id == fired.id })
        #expect(
            resolved.changedBy?.user == "Alertmanager" || resolved.changedBy?.user == "PagerDuty Events API",
            "\(String(describing: resolved.changedBy))")
    }

    @Test(
        "PagerDuty's own Python client (EventsApiV2Client, base_url the service's https URL): trigger, the same dedup_key again (one notification, updated), a made key, acknowledge (Read), resolve (Dismissed), a change event (Low), a wrong key refused"
    )
    func pagerDutyClient() async throws {
        let installed = try await Repository.run(["python3", "-c", "import pagerduty"])
        guard installed.status == 0 else {
            Issue.record("SKIPPED LOUDLY: PagerDuty's Python client is missing (pip install pagerduty): .ci/run installs it")
            return
        }
        // The client talks to https only: the service with a certificate of its own, trusted here.
        let directory = Repository.temporaryDirectory("notty-pagerduty")
        defer { try? FileManager.default.removeItem(at: directory) }
        let cert = directory.appendingPathComponent("cert.pem").path, key = directory.appendingPathComponent("key.pem").path
        try await TLSTests.certificate("127.0.0.1", cert: cert, key: key)
        let serve = try await ServeProcess(directory: directory, extraArguments: ["--tls-cert", cert, "--tls-key", key])
        defer { serve.stop() }
        func curl(_ arguments: [String]) async throws -> JSONValue? {
            let result = try await Repository.run(["curl", "-sS", "--max-time", "30", "--cacert", cert] + arguments)
            #expect(result.status == 0, "curl \(arguments): \(result.output)")
            return JSONValue(jsonText: result.output)
        }
        guard
            case .object(let login)? = try await curl([
                "-d", "grant_type=password&username=alice&password=s3cret-pw", serve.url + "/oauth2/v2.0/token",
            ]),
            case .string(let userToken)? = login["access_token"],
            case .object(let hook)? = try await curl([
                "-H", "Authorization: Bearer \(userToken)", "-H", "Content-Type: application/json",
                "-d", #"{"targetHostName":"ci.example.com","platform":"webhook"}"#, serve.url + "/v1/me/subscriptions",
            ]), case .string(let hookURL)? = hook["webhookUrl"], let routingKey = hookURL.split(separator: "/").last
        else { Issue.record("alice could not make a webhook"); return }
        func client(_ code: String, key: String = String(routingKey)) async throws -> (status: Int32, output: String) {
            let script = """
                import sys, pagerduty
                client = pagerduty.EventsApiV2Client(sys.argv[2], base_url=sys.argv[1])
                \(code)
                """
            let run = try await Repository.run(
                ["python3", "-c", script, serve.url, key],
                environment: ["SSL_CERT_FILE": cert, "REQUESTS_CA_BUNDLE": cert, "PYTHONWARNINGS": "ignore"])
            return (run.status, run.output.trimmingCharacters(in: .whitespacesAndNewlines))
        }
        func all() async throws -> [UserNotification] {
            let result = try await Repository.run([
                "curl", "-sS", "--cacert", cert, "-H", "Authorization: Bearer \(userToken)", serve.url + "/v1/me/notifications?view=all&top=100",
            ])
            return try NottyJSON.decoder.decode(NotificationList.self, from: Data(result.output.utf8)).value
        }

        let first = try await client(
            #"print(client.trigger("Disk 91% full on db1", "db1.example.com", dedup_key="disk-db1", severity="error", custom_details={"free": "9 GB"}))"#
        )
        #expect(first.status == 0 && first.output == "disk-db1", "\(first.output)")
        #expect(try await client(#"print(client.trigger("Disk 95% full on db1", "db1.example.com", dedup_key="disk-db1"))"#).status == 0)
        let made = try await client(#"print(client.trigger("Backup late", "nas-1", severity="warning"))"#)
        #expect(made.status == 0 && made.output.count == 32, "a made dedup key: \(made.output)")
        var notifications = try await all()
        let disk = notifications.filter { $0.appNotificationId == "disk-db1" }
        #expect(disk.count == 1 && disk.first?.payload.visualContent?.title == "Disk 95% full on db1" && disk.first?.priority == .high, "\(disk)")
        #expect(notifications.first { $0.appNotificationId == made.output }?.priority == Priority.none)

        #expect(try await client(#"client.acknowledge("disk-db1")"#).status == 0)
        #expect(try await all().first { $0.appNotificationId == "disk-db1" }?.readState == .read)
        #expect(try await client(#"client.resolve("disk-db1")"#).status == 0)
        #expect(try await all().first { $0.appNotificationId == "disk-db1" }?.userActionState == .dismissed)
        #expect(try await client(#"client.send_change_event(payload={"summary": "Deployed v2.3", "source": "ci"})"#).status == 0)
        notifications = try await all()
        #expect(notifications.contains { $0.payload.visualContent?.title == "Deployed v2.3" && $0.priority == .low }, "\(notifications)")
        // A key that is no hook's: the client raises PagerDuty's 400.
        let wrong = try await client(#"client.trigger("x", "y")"#, key: "not-a-hook")
        #expect(wrong.status != 0 && wrong.output.contains("400"), "\(wrong.output)")
    }

    @Test(
        "Alertmanager's opsgenie_configs with api_url aimed at notty serve: a firing alert reaches both devices; resolved, it is closed (Dismissed) on both",
        .enabled(
            if: TestAlertmanager.available || TestAlertmanager.required,
            "SKIPPED LOUDLY: prometheus-alertmanager or amtool is missing (apt-get install -y prometheus-alertmanager); .ci/run installs it"))
    func alertmanagerOpsgenie() async throws {
        let world = try await TwoDevices()
        let key = try await routingKey(world)
        let alertmanager = try await TestAlertmanager(
            receiver: """
                opsgenie_configs:
                  - api_key: '\(key)'
                    api_url: '\(world.service.url)/'
                    priority: 'P1'
                    send_resolved: true
                """)
        defer { alertmanager.stop() }
        try await alertmanager.amtool(["alert", "add", "alertname=BackupLate", "severity=warning", "job=nightly"])
        var alert: UserNotification?
        #expect(
            try await eventually(timeout: .seconds(30)) {
                alert = try await notifications(world.a).first { $0.payload.visualContent?.title.contains("BackupLate") == true }
                return alert != nil
            }, "the alert did not arrive:\n\(alertmanager.log.suffix(3000))\n\(world.service.logText().suffix(2000))")
        let fired = try #require(alert)
        #expect(fired.priority == .high && fired.userActionState == .noInteraction, "\(fired)")
        let past = ISOTime.format(Date().addingTimeInterval(-5))
        try await alertmanager.post(#"[{"labels":{"alertname":"BackupLate","severity":"warning","job":"nightly"},"endsAt":"\#(past)"}]"#)
        for device in [world.a, world.b] {
            #expect(
                try await eventually(timeout: .seconds(30)) {
                    try await notifications(device).first { $0.id == fired.id }?.userActionState == .dismissed
                }, "the resolved alert was not closed:\n\(alertmanager.log.suffix(3000))")
        }
    }

    @Test(
        "Opsgenie's own Python SDK (AlertApi, host the service's): create, the request's status, get by alias, acknowledge, notes, tags, details, priority, message and description (on both devices, still acknowledged), close; a wrong key refused with 401"
    )
    func opsgenieSDK() async throws {
        guard try await Self.opsgenieSDKInstalled() else { return }
        let world = try await TwoDevices()
        let key = try await routingKey(world)
        func sdk(_ code: String, key: String) async throws -> (status: Int32, output: String) {
            try await Self.opsgenieSDK("AlertApi", code, service: world.service.url, key: key)
        }
        let created = try await sdk(
            """
            made = api.create_alert(create_alert_payload=opsgenie_sdk.CreateAlertPayload(
                message='Disk 91% full on db1', alias='disk-db1', description='/var has 9 GB left', priority='P2', tags=['disk']))
            status = api.get_request_status(request_id=made.request_id)
            print(status.data.status, status.data.alert_id, status.data.alias)
            listed = api.list_alerts(query='status:open', limit=10)
            print([alert.alias for alert in listed.data])
            got = api.get_alert(identifier='disk-db1', identifier_type='alias')
            print(got.data.message, '|', got.data.status, got.data.acknowledged, got.data.priority)
            """, key: key)
        #expect(created.status == 0, "\(created.output)")
        let lines = created.output.split(separator: "\n").map(String.init)
        #expect(lines.first?.hasPrefix("Created alert ") == true && lines.first?.hasSuffix(" disk-db1") == true, "\(created.output)")
        #expect(lines.count == 3 && lines[1] == "['disk-db1']", "\(created.output)")
        #expect(lines.last == "Disk 91% full on db1 | open False P2", "\(created.output)")
        let alertId = try #require(lines.first?.split(separator: " ").dropFirst(2).first.map(String.init))
        let seen = try #require(try await notifications(world.b).first { $0.id == alertId })
        #expect(seen.priority == .high && seen.appNotificationId == "disk-db1")

        let acknowledged = try await sdk(
            """
            api.acknowledge_alert(identifier='disk-db1', identifier_type='alias',
                acknowledge_alert_payload=opsgenie_sdk.AcknowledgeAlertPayload(user='ops-bot', note='on it'))
            print(api.get_alert(identifier='disk-db1', identifier_type='alias').data.acknowledged)
            """, key: key)
        #expect(acknowledged.status == 0 && acknowledged.output.hasSuffix("True"), "\(acknowledged.output)")
        for device in [world.a, world.b] {
            #expect(try await eventually(timeout: .seconds(20)) { try await notifications(device).first { $0.id == alertId }?.readState == .read })
        }
        // Edits: on every device, the alert still acknowledged (Read).
        let edited = try await sdk(
            """
            alias = dict(identifier='disk-db1', identifier_type='alias')
            api.add_note(add_note_to_alert_payload=opsgenie_sdk.AddNoteToAlertPayload(note='rotating logs', user='ops-bot'), **alias)
            api.add_tags(add_tags_to_alert_payload=opsgenie_sdk.AddTagsToAlertPayload(tags=['prod', 'db']), **alias)
            api.remove_tags(tags=['disk'], **alias)
            api.add_details(add_details_to_alert_payload=opsgenie_sdk.AddDetailsToAlertPayload(details={'mount': '/var', 'free': '9 GB'}), **alias)
            api.remove_details(keys=['free'], **alias)
            api.update_alert_priority(update_alert_priority_payload=opsgenie_sdk.UpdateAlertPriorityPayload(priority='P1'), **alias)
            api.update_alert_message(update_alert_message_payload=opsgenie_sdk.UpdateAlertMessagePayload(message='Disk 97% full on db1'), **alias)
            api.update_alert_description(
                update_alert_description_payload=opsgenie_sdk.UpdateAlertDescriptionPayload(description='/var has 3 GB left'), **alias)
            got = api.get_alert(**alias).data
            print(got.message, '|', got.priority, got.tags, got.details, got.count, got.acknowledged)
            print([note.note for note in api.list_notes(**alias).data])
            """, key: key)
        #expect(edited.status == 0, "\(edited.output)")
        let editedLines = edited.output.split(separator: "\n").map(String.init)
        #expect(
            editedLines.first == "Disk 97% full on db1 | P1 ['prod', 'db'] {'mount': '/var'} 1 True"
                && editedLines.last == "['rotating logs', 'on it']", "\(edited.output)")
        for device in [world.a, world.b] {
            #expect(
                try await eventually(timeout: .seconds(20)) {
                    guard let n = try await notifications(device).first(where: { $0.id == alertId }) else { return false }
                    return n.payload.visualContent?.title == "Disk 97% full on db1" && n.readState == .read
                        && n.payload.visualContent?.body?.contains("note (ops-bot): rotating logs") == true
                })
        }
        let closed = try await sdk(
            "api.close_alert(identifier='disk-db1', identifier_type='alias', close_alert_payload=opsgenie_sdk.CloseAlertPayload(user='ops-bot'))",
            key: key)
        #expect(closed.status == 0, "\(closed.output)")
        for device in [world.a, world.b] {
            #expect(
                try await eventually(timeout: .seconds(20)) {
                    try await notifications(device).first { $0.id == alertId }?.userActionState == .dismissed
                })
        }
        let wrong = try await sdk("api.get_alert(identifier='disk-db1', identifier_type='alias')", key: "not-a-key")
        #expect(wrong.status != 0 && wrong.output.contains("401"), "\(wrong.output)")
    }
}

extension IncidentEndToEndTests {
    @Test(
        "Opsgenie's own Python SDK (HeartbeatApi) on notty's heartbeats: create, ping, get, disable, update, list, delete; notty heartbeat --list on the device shows the same; a ping of a deleted one is 404"
    )
    func opsgenieHeartbeatSDK() async throws {
        guard try await Self.opsgenieSDKInstalled() else { return }
        let world = try await TwoDevices()
        let key = try await routingKey(world)
        let script = """
            made = api.create_heartbeat(create_heartbeat_payload=opsgenie_sdk.CreateHeartbeatPayload(
                name='etl', interval=10, interval_unit='minutes', enabled=True, alert_message='the ETL did not check in', alert_priority='P2'))
            print(made.data.name, made.data.enabled, made.data.expired)
            api.ping(name='etl')
            got = api.get_heartbeat(name='etl').data
            print(got.interval, got.interval_unit, got.enabled, got.expired, got.last_ping_time is not None)
            api.disable_heartbeat(name='etl')
            print(api.get_heartbeat(name='etl').data.enabled)
            api.update_heartbeat(name='etl', update_heartbeat_payload=opsgenie_sdk.UpdateHeartbeatPayload(interval=2, interval_unit='hours', enabled=True))
            print([(h.name, h.interval, h.interval_unit, h.enabled) for h in api.list_heart_beats().data.heartbeats])
            """
        let run = try await Self.opsgenieSDK("HeartbeatApi", script, service: world.service.url, key: key)
        #expect(run.status == 0, "\(run.output)")
        let lines = run.output.split(separator: "\n").map(String.init)
        #expect(lines == ["etl True False", "10 minutes True False True", "False", "[('etl', 2, 'hours', True)]"], "\(run.output)")
        let listed = try await world.a.run(["heartbeat", "--list"])
        #expect(listed.out.contains("etl  every 2h, grace 12m  up  last ping "), "\(listed.out)\(listed.err)")

        let deleted = try await Self.opsgenieSDK(
            "HeartbeatApi",
            """
            print(api.delete_heartbeat(name='etl').result)
            try:
                api.ping(name='etl')
            except opsgenie_sdk.rest.ApiException as error:
                print(error.status)
            """, service: world.service.url, key: key)
        #expect(deleted.output == "Deleted\n404", "\(deleted.output)")
        #expect(try await world.a.run(["heartbeat", "--list"]).out.contains("no heartbeats"))
    }

    /// Whether Opsgenie's Python SDK is installed; when not, the test says so loudly.
    static func opsgenieSDKInstalled() async throws -> Bool {
        guard try await Repository.run(["python3", "-c", "import opsgenie_sdk"]).status == 0 else {
            Issue.record("SKIPPED LOUDLY: Opsgenie's Python SDK is missing (pip install opsgenie-sdk): .ci/run installs it")
            return false
        }
        return true
    }

    /// Runs `code` with `api`, Opsgenie's SDK's `API` class (`AlertApi`, `HeartbeatApi`), aimed at
    /// `service` with the GenieKey `key`; its exit status and output, trimmed.
    static func opsgenieSDK(_ api: String, _ code: String, service: String, key: String) async throws -> (status: Int32, output: String) {
        let script = """
            import sys, opsgenie_sdk
            conf = opsgenie_sdk.configuration.Configuration()
            conf.host = sys.argv[1]
            conf.api_key['Authorization'] = sys.argv[2]
            conf.api_key_prefix['Authorization'] = 'GenieKey'
            conf.retry_count = 1
            api = opsgenie_sdk.\(api)(api_client=opsgenie_sdk.api_client.ApiClient(configuration=conf))

            """ + code
        let run = try await Repository.run(["python3", "-c", script, service, key])
        return (run.status, run.output.trimmingCharacters(in: .whitespacesAndNewlines))
    }
}
