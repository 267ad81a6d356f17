import Foundation
import HTTPTypes
import NottyCore
import NottyOutbound
import NottyTestSupport
import Testing

@testable import NottyHTTP
@testable import NottyPaging
@testable import NottyService
@testable import NottyServicePostgres
@testable import NottyServiceSQLite

@Suite("On call: a team's policy pages whoever is on call when a step fires (PROTOCOL.md §13.2)", .timeLimit(.minutes(5)))
struct OnCallServiceTests {
    @Test(
        "a handoff mid-incident pages the new person; a member without contacts is a failed page that says so; handled by a member, every page sent is taken back with who handled it, and nothing fires after",
        arguments: Backend.available)
    func pagingFollowsTheRotation(backend: Backend) async throws {
        let clock = ManualClock()
        let outbound = RecordingOutbound()
        let harness = try await ServiceHarness(backend, clock: clock, outbound: outbound)
        try await harness.router { client in
            let alice = try await harness.world(client)
            let bob = try await harness.world(client, user: "bob", app: (alice.clientId, alice.clientSecret))
            _ = try await harness.world(client, user: "carol", app: (alice.clientId, alice.clientSecret))
            try await harness.service.teams.create(name: "ops", owner: "alice")
            for user in ["bob", "carol"] {
                #expect(try await client.call(.post, "/v1/teams/ops/members", token: alice.userToken, json: #"{"user":"\#(user)"}"#).status == .ok)
            }
            for (world, user) in [(alice, "alice"), (bob, "bob")] {
                let added = try await client.call(
                    .post, "/v1/me/contacts", token: world.userToken, json: #"{"target":"webhook:http://pager.test/\#(user)"}"#)
                #expect(added.status == .created, "\(added.text)")
            }
            // Hour shifts, alice first, from 50 minutes ago: alice now, bob in 10 minutes.
            let start = ISOTime.format(clock.now() - 3000)
            let rotation = try await client.call(
                .put, "/v1/teams/ops/oncall", token: alice.userToken,
                json: #"{"rotation":["alice","bob"],"shift":"1h","start":"\#(start)","zone":"UTC"}"#)
            #expect(rotation.status == .ok, "\(rotation.text)")
            #expect(try rotation.decode(OnCallView.self).now?.user == "alice")
            for body in [
                #"{"name":"now","after":"0s","repeat":"10m","targets":["oncall"]}"#, #"{"name":"carol","after":"0s","targets":["user:carol"]}"#,
                #"{"name":"later","after":"30m","targets":["team"]}"#,
                #"{"name":"pager","after":"1d","targets":["ntfy:https://tk_owners0nly@ntfy.test/ops"]}"#,
            ] {
                let added = try await client.call(.post, "/v1/teams/ops/escalations", token: alice.userToken, json: body)
                #expect(added.status == .created, "\(body): \(added.text)")
            }
            let subscribed = try await client.call(
                .post, "/v1/me/subscriptions", token: alice.userToken, json: #"{"targetHostName":"\#(alice.host)","team":"ops"}"#)
            var team = alice
            team.unsId = try #require(subscribed.string("userNotificationSubscriptionId"))

            let escalation = try #require(harness.service.paging as? Escalation)
            try await escalation.planEveryone()
            let loops = [
                Task { await escalation.runPlanner() }, Task { await escalation.runSender() }, Task { await escalation.runFinisher() },
            ]
            defer { for loop in loops { loop.cancel() } }
            func hooks(_ user: String) -> [JSONValue] {
                outbound.requests.filter { $0.url == "http://pager.test/\(user)" }.compactMap {
                    JSONValue(jsonText: String(decoding: $0.body ?? Data(), as: UTF8.self))
                }
            }
            func field(_ value: JSONValue, _ path: String...) -> String? {
                var current = value
                for key in path {
                    guard case .object(let o) = current, let next = o[key] else { return nil }
                    current = next
                }
                if case .string(let text) = current { return text }
                return nil
            }

            let published = try await team.publish(client, id: "db1-down", title: "db1 down", extra: #","priority":"High""#)
            let id = try #require(published.string("id"), "\(published.text)")
            // Planned (the track starts), then due at once: alice is paged, and carol's page says why it went nowhere.
            #expect(
                await eventually(timeout: .seconds(30)) {
                    _ = try? await escalation.fireDue()
                    return hooks("alice").count == 1
                }, "\(outbound.requests.map(\.url))")
            #expect(field(hooks("alice")[0], "paged") == "alice" && field(hooks("alice")[0], "event") == "escalated")
            #expect(hooks("bob").isEmpty, "bob is not on call yet")
            let logged = await eventually(timeout: .seconds(30)) {
                let shown = try? await client.call(.get, "/v1/me/notifications/\(id)", token: bob.userToken).decode(UserNotification.self)
                return (shown?.escalations ?? []).count == 2
            }
            let seen = try await client.call(.get, "/v1/me/notifications/\(id)", token: bob.userToken).decode(UserNotification.self)
            #expect(logged, "\(seen.escalations ?? [])")
            let records = seen.escalations ?? []
            #expect(records.contains { $0.user == "alice" && $0.outcome == "sent" && $0.target == "webhook:http://pager.test:80" }, "\(records)")
            #expect(
                records.contains { $0.user == "carol" && $0.outcome == "failed" && $0.error == "carol has no contacts (notty contact add)" },
                "\(records)")

            // Eleven minutes on the step repeats: bob took over at the handoff, so bob is paged.
            clock.advance(by: 660)
            #expect(
                await eventually(timeout: .seconds(30)) {
                    _ = try? await escalation.fireDue()
                    return hooks("bob").count == 1
                }, "\(outbound.requests.map(\.url))")
            #expect(hooks("alice").count == 1, "alice is off call: the repeat went to bob alone")

            // Bob reads it: both pages are taken back, saying bob did it; the later step never fires.
            let read = try await client.call(.patch, "/v1/me/notifications/\(id)", token: bob.userToken, json: #"{"readState":"Read"}"#)
            #expect(read.status == .ok, "\(read.text)")
            #expect(
                await eventually(timeout: .seconds(30)) { hooks("alice").count == 2 && hooks("bob").count == 2 }, "\(outbound.requests.map(\.url))")
            for user in ["alice", "bob"] {
                guard let handled = hooks(user).dropFirst().first else { continue }
                #expect(field(handled, "event") == "handled" && field(handled, "handledBy", "user") == "bob", "\(handled.jsonText)")
                #expect(field(handled, "handledBy", "state") == "read")
            }
            // Every delivery recorded before the clock jumps 40 minutes: a sent one not yet
            // recorded would have its lease run out in the jump and be sent once more (PROTOCOL
            // §11 allows that), which is not what this test is about.
            let recorded = await eventually(timeout: .seconds(30)) { (try? await harness.storage.escalationBacklog().pending) == 0 }
            #expect(recorded, "deliveries still pending")
            clock.advance(by: 2400)
            _ = try await escalation.fireDue()
            // Fired: nothing was due (the track ended with the read), so nothing waits to be sent.
            #expect(try await harness.storage.escalationBacklog().pending == 0)
            #expect(
                hooks("alice").count == 2 && hooks("bob").count == 2,
                "handled: nothing more is sent; sent: \((hooks("alice") + hooks("bob")).map { field($0, "event") ?? "?" })")

            // The team's policy as its members see it: carol cannot be reached; members may read, not change it.
            let list = try await client.call(.get, "/v1/teams/ops/escalations", token: bob.userToken).decode(EscalationRuleList.self)
            #expect(list.unreachable == ["carol"] && Set(list.value.map(\.name)) == ["now", "carol", "later", "pager"])
            // The policy's credentials are its owners' alone.
            let bobsPager = list.value.first { $0.name == "pager" }?.targets ?? []
            #expect(
                bobsPager == ["ntfy:https://ntfy.test:443"], "\(bobsPager)")
            let owners = try await client.call(.get, "/v1/teams/ops/escalations", token: alice.userToken).decode(EscalationRuleList.self)
            #expect(owners.value.first { $0.name == "pager" }?.targets == ["ntfy:https://tk_owners0nly@ntfy.test/ops"])
            let notOwner = try await client.call(
                .post, "/v1/teams/ops/escalations", token: bob.userToken, json: #"{"after":"0s","targets":["team"]}"#)
            #expect(notOwner.status == .forbidden, "\(notOwner.text)")
            #expect(try await client.call(.get, "/v1/me/escalations", token: alice.userToken).decode(EscalationRuleList.self).value.isEmpty)
        }
    }

    @Test(
        "overrides: a member for themselves, an owner for anyone, the later made wins; removing one; bad times are 400s", arguments: Backend.available
    )
    func overrides(backend: Backend) async throws {
        let clock = ManualClock()
        let harness = try await ServiceHarness(backend, clock: clock)
        try await harness.router { client in
            let (alice, bob) = try await harness.aliceAndBobInOps(client)
            let start = ISOTime.format(clock.now() - 60)
            #expect(
                try await client.call(
                    .put, "/v1/teams/ops/oncall", token: alice.userToken,
                    json: #"{"rotation":["alice"],"shift":"1w","start":"\#(start)","zone":"Europe/Berlin"}"#
                ).status == .ok)
            // Within the hour of the tokens.
            let from = ISOTime.format(clock.now() + 600), until = ISOTime.format(clock.now() + 1200)
            let byBob = try await client.call(
                .post, "/v1/teams/ops/oncall/overrides", token: bob.userToken, json: #"{"from":"\#(from)","until":"\#(until)"}"#)
            #expect(byBob.status == .created && byBob.string("user") == "bob", "\(byBob.text)")
            let forAlice = try await client.call(
                .post, "/v1/teams/ops/oncall/overrides", token: bob.userToken, json: #"{"user":"alice","from":"\#(from)","until":"\#(until)"}"#)
            #expect(forAlice.status == .forbidden, "\(forAlice.text)")
            clock.advance(by: 1)
            let byOwner = try await client.call(
                .post, "/v1/teams/ops/oncall/overrides", token: alice.userToken, json: #"{"user":"alice","from":"\#(from)","until":"\#(until)"}"#)
            #expect(byOwner.status == .created, "\(byOwner.text)")
            clock.advance(by: 600 + 60)
            var view = try await client.call(.get, "/v1/teams/ops/oncall", token: bob.userToken).decode(OnCallView.self)
            #expect(view.now?.user == "alice" && view.now?.override == true, "the later made wins: \(view)")
            let ownerId = try #require(byOwner.string("id"))
            #expect(try await client.call(.delete, "/v1/teams/ops/oncall/overrides/\(ownerId)", token: bob.userToken).status == .forbidden)
            #expect(try await client.call(.delete, "/v1/teams/ops/oncall/overrides/\(ownerId)", token: alice.userToken).status == .noContent)
            view = try await client.call(.get, "/v1/teams/ops/oncall", token: bob.userToken).decode(OnCallView.self)
            #expect(view.now?.user == "bob", "\(view)")
            let mine = try await client.call(.get, "/v1/me/oncall", token: bob.userToken).decode(MyOnCallList.self).value
            #expect(mine.first?.onCall == true && mine.first?.until == ISOTime.parse(until), "\(mine)")
            for (body, says) in [
                (#"{"from":"\#(until)","until":"\#(from)"}"#, "before it starts"),
                (#"{"from":"soon","until":"\#(from)"}"#, "is not a time"),
                (#"{"user":"zed","from":"\#(from)","until":"\#(until)"}"#, "zed is not a member of ops"),
                (#"{"until":"\#(until)"}"#, "from and until are required"),
            ] {
                let refused = try await client.call(.post, "/v1/teams/ops/oncall/overrides", token: alice.userToken, json: body)
                #expect(refused.status == .badRequest && refused.text.contains(says), "\(body): \(refused.text)")
            }
            #expect(try await client.call(.get, "/v1/teams/nope/oncall", token: bob.userToken).status == .notFound)
        }
    }
}
