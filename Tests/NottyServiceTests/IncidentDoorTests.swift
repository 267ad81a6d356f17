import Foundation
import HTTPTypes
import HummingbirdTesting
import NottyCore
import NottyTestSupport
import Testing

@testable import NottyHTTP
@testable import NottyService

extension TestClientProtocol {
    /// A PagerDuty event to `path` (`/v2/enqueue` unless told).
    func pagerDuty(_ json: String, path: String = "/v2/enqueue") async throws -> Reply {
        try await call(.post, path, body: Data(json.utf8), headers: ["Content-Type": "application/json"])
    }

    /// An Opsgenie request with `Authorization: GenieKey KEY` (none without a key).
    func opsgenie(_ method: HTTPRequest.Method, _ path: String, key: String?, _ json: String = "") async throws -> Reply {
        var headers = ["Content-Type": "application/json"]
        if let key { headers["Authorization"] = "GenieKey \(key)" }
        return try await call(method, path, body: Data(json.utf8), headers: headers)
    }
}

@Suite("PagerDuty's Events API v2 on a hook's token (PROTOCOL.md §16.1)", .timeLimit(.minutes(5)))
struct PagerDutyDoorTests {
    @Test(
        "trigger publishes (its dedup key answered), the same key updates it in place, acknowledge is Read and resolve Dismissed, named after the client; a change event is Low",
        arguments: Backend.available)
    func alertLifecycle(backend: Backend) async throws {
        let harness = try await ServiceHarness(backend)
        try await harness.router { client in
            let alice = try await harness.world(client)
            let key = try await alice.hookToken(client)
            let trigger = """
                {"routing_key":"\(key)","event_action":"trigger","dedup_key":"disk-db1","client":"Alertmanager",
                 "payload":{"summary":"Disk 91% full on db1","source":"db1.example.com","severity":"critical","component":"postgres",
                            "group":"storage","custom_details":{"free":"9 GB","mount":"/var"}},
                 "links":[{"href":"javascript:alert(1)","text":"no"},{"href":"https://grafana.example.com/d/disk","text":"Graph"}]}
                """
            let made = try await client.pagerDuty(trigger)
            #expect(made.status == .accepted, "\(made.text)")
            #expect(made.string("status") == "success" && made.string("message") == "Event processed" && made.string("dedup_key") == "disk-db1")
            var all = try await alice.all(client)
            #expect(all.count == 1, "\(all)")
            let first = try #require(all.first)
            #expect(first.appNotificationId == "disk-db1" && first.priority == .high && first.groupName == "storage")
            #expect(first.payload.visualContent?.title == "Disk 91% full on db1")
            #expect(first.payload.visualContent?.body == "source: db1.example.com\ncomponent: postgres\nfree: 9 GB\nmount: /var")
            #expect(first.launchUrl == "https://grafana.example.com/d/disk")

            // The same key again: the one notification, updated in place.
            let again = try await client.pagerDuty(trigger.replacingOccurrences(of: "Disk 91%", with: "Disk 95%"))
            #expect(again.status == .accepted && again.string("dedup_key") == "disk-db1")
            all = try await alice.all(client)
            #expect(all.count == 1 && all[0].id == first.id && all[0].payload.visualContent?.title == "Disk 95% full on db1", "\(all)")

            // Acknowledge: Read everywhere, the client named as who handled it.
            let ack = try await client.pagerDuty(
                #"{"routing_key":"\#(key)","event_action":"acknowledge","dedup_key":"disk-db1","client":"Alertmanager"}"#)
            #expect(ack.status == .accepted && ack.string("dedup_key") == "disk-db1", "\(ack.text)")
            let read = try await alice.notification(client, first.id)
            #expect(read.readState == .read && read.userActionState == .noInteraction)
            #expect(read.changedBy?.user == "Alertmanager" && read.changedBy?.device == nil, "\(String(describing: read.changedBy))")
            // Resolve: Dismissed everywhere; without a client, the door's name.
            let resolve = try await client.pagerDuty(#"{"routing_key":"\#(key)","event_action":"resolve","dedup_key":"disk-db1"}"#)
            #expect(resolve.status == .accepted)
            let dismissed = try await alice.notification(client, first.id)
            #expect(dismissed.userActionState == .dismissed && dismissed.changedBy?.user == "PagerDuty Events API")
            // The user's own change after it: nobody else named.
            let mine = try await client.call(
                .patch, "/v1/me/notifications/\(first.id)", token: alice.userToken, json: #"{"readState":"Unread"}"#)
            #expect(mine.status == .ok && mine["changedBy"] == nil, "\(mine.text)")
            // Acknowledging a key that is not there is taken, and changes nothing.
            let unknown = try await client.pagerDuty(#"{"routing_key":"\#(key)","event_action":"acknowledge","dedup_key":"nothing-here"}"#)
            #expect(unknown.status == .accepted && unknown.string("dedup_key") == "nothing-here")

            // A trigger without a key gets one of PagerDuty's shape; info is Low.
            let keyless = try await client.pagerDuty(
                #"{"routing_key":"\#(key)","event_action":"trigger","payload":{"summary":"FYI","source":"cron","severity":"info","class":"backup"}}"#)
            let made2 = try #require(keyless.string("dedup_key"))
            #expect(keyless.status == .accepted && made2.count == 32 && made2.allSatisfy(\.isHexDigit), "\(keyless.text)")
            let fyi = try #require(try await alice.all(client).first { $0.appNotificationId == made2 })
            #expect(fyi.priority == .low && fyi.groupName == "backup")

            // A change event: a Low notification, no alert.
            let change = try await client.pagerDuty(
                #"{"routing_key":"\#(key)","payload":{"summary":"Deployed v2.3 to production","source":"ci","custom_details":{"commit":"abc123"}},"links":[{"href":"https://ci.example.com/run/9"}]}"#,
                path: "/v2/change/enqueue")
            #expect(change.status == .accepted && change.string("message") == "Change event processed", "\(change.text)")
            let deployed = try #require(try await alice.all(client).first { $0.payload.visualContent?.title == "Deployed v2.3 to production" })
            #expect(deployed.priority == .low && deployed.groupName == "change" && deployed.launchUrl == "https://ci.example.com/run/9")
        }
    }

    @Test(
        "bad events are PagerDuty's 400 with every problem; an unknown, revoked or secret hook's key is refused with words; nothing is published",
        arguments: Backend.available)
    func refusals(backend: Backend) async throws {
        let harness = try await ServiceHarness(backend)
        try await harness.router { client in
            let alice = try await harness.world(client)
            let key = try await alice.hookToken(client)
            func errors(_ reply: Reply) -> [String] {
                guard case .array(let items)? = reply["errors"] else { return [] }
                return items.compactMap { if case .string(let text) = $0 { text } else { nil } }
            }
            let cases: [(String, [String])] = [
                ("not json", ["the body is not a JSON object"]),
                (#"{"event_action":"trigger"}"#, ["'routing_key' is missing or blank"]),
                (
                    #"{"routing_key":"\#(key)","event_action":"page","payload":{}}"#,
                    ["'event_action' is invalid (must be one of: trigger, acknowledge, resolve)"]
                ),
                (
                    #"{"routing_key":"\#(key)","event_action":"trigger","payload":{"severity":"urgent"}}"#,
                    [
                        "'payload.summary' is missing or blank", "'payload.source' is missing or blank",
                        "'payload.severity' is invalid (must be one of: critical, error, warning, info)",
                    ]
                ),
                (#"{"routing_key":"\#(key)","event_action":"resolve"}"#, ["'dedup_key' is missing or blank"]),
                (
                    #"{"routing_key":"\#(key)","event_action":"acknowledge","dedup_key":"\#(String(repeating: "k", count: 256))"}"#,
                    ["Length of 'dedup_key' is incorrect (should be at most 255 characters)"]
                ),
            ]
            for (body, expected) in cases {
                let reply = try await client.pagerDuty(body)
                #expect(reply.status == .badRequest && reply.string("status") == "invalid event", "\(body): \(reply.text)")
                #expect(errors(reply) == expected, "\(body): \(reply.text)")
            }
            let valid = #"{"routing_key":"KEY","event_action":"trigger","payload":{"summary":"s","source":"x","severity":"error"}}"#
            // A key that is no hook's.
            let unknown = try await client.pagerDuty(valid.replacingOccurrences(of: "KEY", with: "not-a-hook"))
            #expect(unknown.status == .badRequest && errors(unknown).first?.contains("no notty webhook has this key") == true, "\(unknown.text)")
            // A hook with a secret: PagerDuty's events cannot carry it.
            let secret = try await alice.hookToken(client, secret: "s3cret")
            let guarded = try await client.pagerDuty(valid.replacingOccurrences(of: "KEY", with: secret))
            #expect(guarded.status == .badRequest && errors(guarded).first?.contains("has a secret") == true, "\(guarded.text)")
            // A revoked hook.
            let hook = try await alice.webhook(client)
            let revokedKey = String(hook.path.split(separator: "/").last!)
            #expect(try await client.call(.delete, "/v1/me/subscriptions/\(hook.id)", token: alice.userToken).status == .noContent)
            let revoked = try await client.pagerDuty(valid.replacingOccurrences(of: "KEY", with: revokedKey))
            #expect(revoked.status == .badRequest && errors(revoked).first?.contains("no notty webhook has this key") == true, "\(revoked.text)")
            #expect(try await alice.all(client).isEmpty, "a refused event published")
        }
    }

    @Test("every event counts against the app's rate: past it, PagerDuty's 429 with Retry-After, and nothing changes", arguments: Backend.available)
    func throttled(backend: Backend) async throws {
        let harness = try await ServiceHarness(backend) {
            $0.publishRate = 0.001; $0.publishBurst = 1
        }
        try await harness.router { client in
            let alice = try await harness.world(client)
            let key = try await alice.hookToken(client)
            let fired = try await client.pagerDuty(
                #"{"routing_key":"\#(key)","event_action":"trigger","dedup_key":"k","payload":{"summary":"s","source":"x","severity":"error"}}"#)
            #expect(fired.status == .accepted, "\(fired.text)")
            let ack = try await client.pagerDuty(#"{"routing_key":"\#(key)","event_action":"acknowledge","dedup_key":"k"}"#)
            #expect(ack.status == .tooManyRequests && ack.string("status") == "throttle event" && ack.headers[.retryAfter] != nil, "\(ack.text)")
            #expect(try await alice.all(client).first?.readState == .unread)
        }
    }

    @Test("a team's hook: its key publishes to the team, and an acknowledgement is Read for every member", arguments: Backend.available)
    func teamKey(backend: Backend) async throws {
        let harness = try await ServiceHarness(backend)
        try await harness.router { client in
            let alice = try await harness.world(client)
            let bob = try await harness.world(client, user: "bob", app: (alice.clientId, alice.clientSecret))
            try await harness.service.teams.create(name: "ops", owner: "alice")
            #expect(
                try await client.call(.post, "/v1/teams/ops/members", token: alice.userToken, json: #"{"user":"bob"}"#).status == .ok)
            let made = try await client.call(
                .post, "/v1/me/subscriptions", token: alice.userToken,
                json: #"{"targetHostName":"\#(alice.host)","platform":"webhook","team":"ops"}"#)
            let url = try #require(made.string("webhookUrl"), "\(made.text)")
            let key = String(url.split(separator: "/").last!)
            let fired = try await client.pagerDuty(
                #"{"routing_key":"\#(key)","event_action":"trigger","dedup_key":"api-down","payload":{"summary":"API down","source":"lb","severity":"error"}}"#
            )
            #expect(fired.status == .accepted, "\(fired.text)")
            let seen = try #require(try await bob.all(client).first { $0.appNotificationId == "api-down" })
            #expect(seen.team == "ops" && seen.priority == .high)
            #expect(
                try await client.pagerDuty(#"{"routing_key":"\#(key)","event_action":"acknowledge","dedup_key":"api-down","client":"Grafana"}"#)
                    .status
                    == .accepted)
            let acknowledged = try #require(try await alice.all(client).first { $0.appNotificationId == "api-down" })
            #expect(acknowledged.readState == .read && acknowledged.changedBy?.user == "Grafana", "\(acknowledged)")
        }
    }
}

@Suite("Opsgenie's Alert API v2 on a hook's token (PROTOCOL.md §16.2)", .timeLimit(.minutes(5)))
struct OpsgenieDoorTests {
    @Test(
        "create (202 and a request id whose status names the alert), the same alias updates in place, get by id, tiny and alias, acknowledge, unacknowledge, snooze, close and delete on every device, named after the user",
        arguments: Backend.available)
    func lifecycle(backend: Backend) async throws {
        let harness = try await ServiceHarness(backend)
        try await harness.router { client in
            let alice = try await harness.world(client)
            let key = try await alice.hookToken(client)
            func call(_ method: HTTPRequest.Method, _ path: String, _ json: String = "") async throws -> Reply {
                try await client.opsgenie(method, path, key: key, json)
            }
            let create =
                #"{"message":"Disk 91% full on db1","alias":"disk-db1","description":"/var has 9 GB left","priority":"P1","entity":"db1","source":"zabbix","tags":["disk","db"],"details":{"free":"9 GB"}}"#
            let made = try await call(.post, "/v2/alerts", create)
            #expect(made.status == .accepted && made.string("result") == "Request will be processed", "\(made.text)")
            let requestId = try #require(made.string("requestId"))
            let status = try await call(.get, "/v2/alerts/requests/\(requestId)")
            #expect(status.status == .ok, "\(status.text)")
            guard case .object(let data)? = status["data"], case .string(let alertId)? = data["alertId"] else {
                Issue.record("no alertId: \(status.text)")
                return
            }
            #expect(data["status"] == .string("Created alert") && data["alias"] == .string("disk-db1") && data["isSuccess"] == .bool(true))
            var all = try await alice.all(client)
            #expect(all.count == 1 && all[0].id == alertId && all[0].priority == .high && all[0].groupName == "db1", "\(all)")
            #expect(all[0].payload.visualContent?.body == "/var has 9 GB left\nsource: zabbix\ntags: disk, db\nfree: 9 GB")
            // The same alias again: the same notification, updated.
            #expect(try await call(.post, "/v2/alerts", create.replacingOccurrences(of: "91%", with: "95%")).status == .accepted)
            all = try await alice.all(client)
            #expect(all.count == 1 && all[0].payload.visualContent?.title == "Disk 95% full on db1")

            for path in ["/v2/alerts/\(alertId)", "/v2/alerts/\(alertId)?identifierType=tiny", "/v2/alerts/disk-db1?identifierType=alias"] {
                let got = try await call(.get, path)
                guard case .object(let alert)? = got["data"] else {
                    Issue.record("\(path): \(got.text)")
                    continue
                }
                #expect(alert["id"] == .string(alertId) && alert["alias"] == .string("disk-db1") && alert["status"] == .string("open"), "\(got.text)")
                #expect(
                    alert["acknowledged"] == .bool(false) && alert["priority"] == .string("P1") && alert["message"] == .string("Disk 95% full on db1")
                )
            }
            func alert() async throws -> UserNotification { try await alice.notification(client, alertId) }
            #expect(try await call(.post, "/v2/alerts/disk-db1/acknowledge?identifierType=alias", #"{"user":"zabbix-bot"}"#).status == .accepted)
            var seen = try await alert()
            #expect(seen.readState == .read && seen.changedBy?.user == "zabbix-bot", "\(seen)")
            guard case .object(let acknowledged)? = try await call(.get, "/v2/alerts/\(alertId)")["data"] else { return }
            #expect(acknowledged["acknowledged"] == .bool(true) && acknowledged["isSeen"] == .bool(true))
            #expect(try await call(.post, "/v2/alerts/\(alertId)/unacknowledge").status == .accepted)
            seen = try await alert()
            #expect(seen.readState == .unread && seen.changedBy?.user == "Opsgenie API")
            let until = ISOTime.format(Date().addingTimeInterval(3600))
            #expect(try await call(.post, "/v2/alerts/\(alertId)/snooze", #"{"endTime":"\#(until)"}"#).status == .accepted)
            #expect(try await alert().userActionState == .snoozed)
            #expect(try await call(.post, "/v2/alerts/\(alertId)/snooze", "{}").status == .badRequest)
            #expect(try await call(.post, "/v2/alerts/\(alertId)/close").status == .accepted)
            #expect(try await alert().userActionState == .dismissed)
            guard case .object(let closed)? = try await call(.get, "/v2/alerts/\(alertId)")["data"] else { return }
            #expect(closed["status"] == .string("closed"))
            let deleted = try await call(.delete, "/v2/alerts/\(alertId)")
            #expect(deleted.status == .accepted, "\(deleted.text)")
            #expect(try await alice.all(client).isEmpty)
            let gone = try await call(.get, "/v2/alerts/\(alertId)")
            #expect(gone.status == .notFound && gone.string("message") == "Alert does not exist", "\(gone.text)")
        }
    }

    @Test(
        "the list: the key's alerts newest first (oldest with order=asc), limit and offset, status:open|closed, acknowledged:true|false and words; another field is 422; another user's key lists none of them",
        arguments: Backend.available)
    func list(backend: Backend) async throws {
        let harness = try await ServiceHarness(backend)
        try await harness.router { client in
            let alice = try await harness.world(client)
            let bob = try await harness.world(client, user: "bob", app: (alice.clientId, alice.clientSecret))
            let key = try await alice.hookToken(client), bobKey = try await bob.hookToken(client)
            func call(_ method: HTTPRequest.Method, _ path: String, key: String, _ json: String = "") async throws -> Reply {
                try await client.opsgenie(method, path, key: key, json)
            }
            for (alias, message) in [("disk", "Disk full on db1"), ("api", "API down"), ("cert", "Certificate expires on db1")] {
                #expect(try await call(.post, "/v2/alerts", key: key, #"{"message":"\#(message)","alias":"\#(alias)"}"#).status == .accepted)
            }
            #expect(try await call(.post, "/v2/alerts/api/acknowledge?identifierType=alias", key: key).status == .accepted)
            #expect(try await call(.post, "/v2/alerts/cert/close?identifierType=alias", key: key).status == .accepted)
            func aliases(_ query: String, as other: String? = nil) async throws -> [String] {
                let reply = try await call(.get, "/v2/alerts" + query, key: other ?? key)
                guard reply.status == .ok, case .array(let items)? = reply["data"] else {
                    Issue.record("\(query): \(reply.status) \(reply.text)")
                    return []
                }
                return items.compactMap { if case .object(let alert) = $0, case .string(let alias)? = alert["alias"] { alias } else { nil } }
            }
            #expect(try await aliases("") == ["cert", "api", "disk"])
            #expect(try await aliases("?order=asc&limit=2") == ["disk", "api"])
            #expect(try await aliases("?limit=2&offset=2") == ["disk"])
            #expect(try await aliases("?query=status:open") == ["api", "disk"])
            #expect(try await aliases("?query=status:closed") == ["cert"])
            #expect(try await aliases("?query=acknowledged:true") == ["api"])
            #expect(try await aliases("?query=db1%20status:open") == ["disk"])
            #expect(try await aliases("", as: bobKey).isEmpty)
            for bad in ["?query=owner:bob", "?limit=0", "?limit=x", "?sort=message", "?order=up"] {
                let refused = try await call(.get, "/v2/alerts" + bad, key: key)
                #expect(refused.status == .unprocessableContent && refused.string("message") != nil, "\(bad): \(refused.text)")
            }
        }
    }

    @Test(
        "a team's key reaches only its team's alerts, and an owner's own key lists only its own; by id or alias it reaches its owned team's too, its own first",
        arguments: Backend.available)
    func feedsApart(backend: Backend) async throws {
        let harness = try await ServiceHarness(backend)
        try await harness.router { client in
            let alice = try await harness.world(client)
            try await harness.service.teams.create(name: "ops", owner: "alice")
            let made = try await client.call(
                .post, "/v1/me/subscriptions", token: alice.userToken,
                json: #"{"targetHostName":"\#(alice.host)","platform":"webhook","team":"ops"}"#)
            let teamKey = String(try #require(made.string("webhookUrl"), "\(made.text)").split(separator: "/").last!)
            let ownKey = try await alice.hookToken(client)
            func call(_ method: HTTPRequest.Method, _ path: String, key: String, _ json: String = "") async throws -> Reply {
                try await client.opsgenie(method, path, key: key, json)
            }
            #expect(try await call(.post, "/v2/alerts", key: teamKey, #"{"message":"Team's","alias":"same"}"#).status == .accepted)
            #expect(try await call(.post, "/v2/alerts", key: ownKey, #"{"message":"Alice's","alias":"same"}"#).status == .accepted)
            let all = try await alice.all(client)
            #expect(all.count == 2 && Set(all.map(\.team)) == [nil, "ops"], "\(all)")
            let teamId = try #require(all.first { $0.team == "ops" }?.id), ownId = try #require(all.first { $0.team == nil }?.id)
            func messages(_ key: String) async throws -> [String] {
                guard case .array(let items)? = try await call(.get, "/v2/alerts", key: key)["data"] else { return [] }
                return items.compactMap { if case .object(let a) = $0, case .string(let m)? = a["message"] { m } else { nil } }
            }
            #expect(try await messages(teamKey) == ["Team's"])
            #expect(try await messages(ownKey) == ["Alice's"])
            #expect(try await call(.get, "/v2/alerts/\(ownId)", key: teamKey).status == .notFound)
            // Alice owns ops, so her key (which may publish there: `responders`) reaches the team's alert by id.
            #expect(try await call(.get, "/v2/alerts/\(teamId)", key: ownKey).status == .ok)
            // By alias, each key closes its own "same" (the owner's key its own feed's first), never the other's.
            #expect(try await call(.post, "/v2/alerts/same/close?identifierType=alias", key: teamKey).status == .accepted)
            var after = try await alice.all(client)
            #expect(after.first { $0.id == teamId }?.userActionState == .dismissed)
            #expect(after.first { $0.id == ownId }?.userActionState == .noInteraction)
            #expect(try await call(.post, "/v2/alerts/same/acknowledge?identifierType=alias", key: ownKey).status == .accepted)
            after = try await alice.all(client)
            #expect(after.first { $0.id == ownId }?.readState == .read && after.first { $0.id == teamId }?.readState == .unread)
        }
    }

    @Test(
        "a wrong, revoked or secret hook's key is 401; a bad create is 422 with each field; another user's alert is not there, nor its request; a disabled user's key publishes but reads and changes nothing",
        arguments: Backend.available)
    func walls(backend: Backend) async throws {
        let harness = try await ServiceHarness(backend)
        try await harness.router { client in
            let alice = try await harness.world(client)
            let bob = try await harness.world(client, user: "bob", app: (alice.clientId, alice.clientSecret))
            let aliceKey = try await alice.hookToken(client), bobKey = try await bob.hookToken(client)
            func call(_ method: HTTPRequest.Method, _ path: String, key: String?, _ json: String = "") async throws -> Reply {
                try await client.opsgenie(method, path, key: key, json)
            }
            let create = #"{"message":"API down","alias":"api"}"#
            for key in [nil, "wrong", try await alice.hookToken(client, secret: "s3cret")] as [String?] {
                let refused = try await call(.post, "/v2/alerts", key: key, create)
                #expect(refused.status == .unauthorized && refused.string("message")?.hasPrefix("Could not authenticate") == true, "\(refused.text)")
            }
            let bad = try await call(.post, "/v2/alerts", key: aliceKey, #"{"message":"","priority":"P9","tags":"x"}"#)
            #expect(bad.status == .unprocessableContent, "\(bad.text)")
            guard case .object(let errors)? = bad["errors"] else { Issue.record("\(bad.text)"); return }
            #expect(Set(errors.keys) == ["message", "priority", "tags"], "\(bad.text)")

            let made = try await call(.post, "/v2/alerts", key: aliceKey, create)
            let requestId = try #require(made.string("requestId"))
            let alertId = try #require(try await alice.all(client).first?.id)
            // Bob's key: not his alert, by id or alias, nor its request; he cannot close it.
            #expect(try await call(.get, "/v2/alerts/\(alertId)", key: bobKey).status == .notFound)
            #expect(try await call(.get, "/v2/alerts/api?identifierType=alias", key: bobKey).status == .notFound)
            #expect(try await call(.get, "/v2/alerts/requests/\(requestId)", key: bobKey).status == .notFound)
            #expect(try await call(.post, "/v2/alerts/\(alertId)/close", key: bobKey).status == .notFound)
            #expect(try await alice.notification(client, alertId).userActionState == .noInteraction)
            // A revoked key is 401 from then on.
            let hook = try await alice.webhook(client)
            let revokedKey = String(hook.path.split(separator: "/").last!)
            #expect(try await call(.post, "/v2/alerts", key: revokedKey, create).status == .accepted)
            #expect(try await client.call(.delete, "/v1/me/subscriptions/\(hook.id)", token: alice.userToken).status == .noContent)
            #expect(try await call(.post, "/v2/alerts/api/close?identifierType=alias", key: revokedKey).status == .unauthorized)

            // A disabled user's key still publishes (their notifications are kept), but reads and
            // changes nothing, through either door.
            try await harness.service.admin.setDisabled(name: "alice", true)
            #expect(try await call(.post, "/v2/alerts", key: aliceKey, #"{"message":"still kept","alias":"kept"}"#).status == .accepted)
            let read = try await call(.get, "/v2/alerts/kept?identifierType=alias", key: aliceKey)
            #expect(read.status == .unauthorized && read.string("message")?.contains("disabled") == true, "\(read.text)")
            #expect(try await call(.post, "/v2/alerts/kept/close?identifierType=alias", key: aliceKey).status == .unauthorized)
            let pagerDuty = try await client.pagerDuty(#"{"routing_key":"\#(aliceKey)","event_action":"resolve","dedup_key":"kept"}"#)
            #expect(pagerDuty.status == .badRequest && pagerDuty.text.contains("disabled"), "\(pagerDuty.text)")
        }
    }
}
