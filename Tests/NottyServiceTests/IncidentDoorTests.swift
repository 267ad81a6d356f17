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
