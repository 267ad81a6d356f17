import Foundation
import HTTPTypes
import HummingbirdTesting
import HummingbirdWSClient
import Logging
import NottyCore
import NottyOutbound
import NottyTestSupport
import Synchronization
import Testing

@testable import NottyHTTP
@testable import NottyPaging
@testable import NottyRecords
@testable import NottySecrets
@testable import NottyService
@testable import NottyWebPush

/// PROTOCOL.md §15: what one person on a service can do to another. Each case here was open on the
/// build before (issue 62): a plain member, a removed owner or a revoked browser used it.
@Suite("The walls between the people of one service (PROTOCOL.md §15)", .timeLimit(.minutes(5)))
struct TrustTests {
    /// alice owns ops; bob (and, when asked, more) are plain members; a weekly rotation of alice.
    static func team(_ harness: ServiceHarness, _ client: any TestClientProtocol, members: [String] = ["bob"]) async throws -> [String: World] {
        let alice = try await harness.world(client)
        var worlds = ["alice": alice]
        for user in members { worlds[user] = try await harness.world(client, user: user, app: (alice.clientId, alice.clientSecret)) }
        try await harness.service.teams.create(name: "ops", owner: "alice")
        for user in members {
            let added = try await client.call(.post, "/v1/teams/ops/members", token: alice.userToken, json: #"{"user":"\#(user)"}"#)
            #expect(added.status == .ok, "\(added.text)")
        }
        return worlds
    }

    @Test(
        "a member cannot break the team's schedule: years outside 1970–9999 are 400s (none traps), overrides are capped per member (50) and per team (200) without pushing out anyone's, and a stored schedule that cannot be read says so instead of reading as no rotation",
        arguments: Backend.available)
    func schedules(backend: Backend) async throws {
        let clock = ManualClock()
        let harness = try await ServiceHarness(backend, clock: clock)
        try await harness.router { client in
            let worlds = try await Self.team(harness, client, members: ["bob", "carol", "dave", "erin"])
            let alice = worlds["alice"]!, bob = worlds["bob"]!
            let start = ISOTime.format(clock.now() - 60)
            let rotation = try await client.call(
                .put, "/v1/teams/ops/oncall", token: alice.userToken,
                json: #"{"rotation":["alice","bob"],"shift":"1w","start":"\#(start)","zone":"UTC"}"#)
            #expect(rotation.status == .ok, "\(rotation.text)")

            // The defect: year 10000 was taken, written in a form that could not be read back, and the rotation was gone.
            for (from, until) in [
                ("10000-01-01 00:00", "10000-01-02 00:00"), ("299999999-12-31 00:00", "300000000-01-01 00:00"),
                ("1969-12-31 00:00", "1970-01-02 00:00"),
                ("+10000-01-01T00:00:00Z", "+10000-01-02T00:00:00Z"),
            ] {
                let refused = try await client.call(
                    .post, "/v1/teams/ops/oncall/overrides", token: bob.userToken, json: #"{"from":"\#(from)","until":"\#(until)"}"#)
                #expect(refused.status == .badRequest, "\(from): \(refused.status) \(refused.text)")
            }
            let far = try await client.call(
                .put, "/v1/teams/ops/oncall", token: alice.userToken,
                json: #"{"rotation":["alice"],"shift":"1w","start":"10000-01-01 00:00","zone":"UTC"}"#)
            #expect(far.status == .badRequest && far.text.contains("1970–9999"), "\(far.text)")
            var view = try await client.call(.get, "/v1/teams/ops/oncall", token: bob.userToken).decode(OnCallView.self)
            #expect(view.now?.user == "alice" && !view.next.isEmpty, "the rotation stays: \(view)")

            // Overrides: the owner's first, then 50 of bob's; bob's 51st is refused and the owner's stays.
            let from = ISOTime.format(clock.now() + 86_400), until = ISOTime.format(clock.now() + 2 * 86_400)
            func override(_ world: World) async throws -> Reply {
                try await client.call(
                    .post, "/v1/teams/ops/oncall/overrides", token: world.userToken, json: #"{"from":"\#(from)","until":"\#(until)"}"#)
            }
            let owners = try await override(alice)
            #expect(owners.status == .created, "\(owners.text)")
            for n in 0..<OnCallSchedule.maxOverridesPerMember {
                let made = try await override(bob)
                guard made.status == .created else {
                    Issue.record("bob's override \(n): \(made.text)")
                    return
                }
            }
            let over = try await override(bob)
            #expect(over.status == .badRequest && over.text.contains("you hold 50 overrides"), "\(over.text)")
            view = try await client.call(.get, "/v1/teams/ops/oncall", token: alice.userToken).decode(OnCallView.self)
            #expect(view.overrides.contains { $0.id == owners.string("id") }, "the owner's override was pushed out")
            // The team's 200: carol and dave 50 each, erin 49; erin's 50th is refused, the team being full.
            for (name, count) in [("carol", 50), ("dave", 50), ("erin", 49)] {
                for _ in 0..<count {
                    let made = try await override(worlds[name]!)
                    guard made.status == .created else {
                        Issue.record("\(name): \(made.text)")
                        return
                    }
                }
            }
            let full = try await override(worlds["erin"]!)
            #expect(full.status == .badRequest && full.text.contains("holds 200 overrides"), "\(full.text)")
            view = try await client.call(.get, "/v1/teams/ops/oncall", token: alice.userToken).decode(OnCallView.self)
            #expect(view.overrides.count == 200 && view.overrides.contains { $0.id == owners.string("id") })

            // A stored schedule that cannot be read: every reader and writer says so; nothing writes over it.
            let ops = try #require(try await harness.storage.team(name: "ops"))
            try await harness.storage.updateOnCallSchedule(teamId: ops.id, at: clock.now()) { _ in #"{"rotation":["alice"],"shift":"# }
            let unreadable = try await client.call(.get, "/v1/teams/ops/oncall", token: bob.userToken)
            #expect(unreadable.status == .internalServerError && unreadable.text.contains("cannot be read"), "\(unreadable.text)")
            let overwrite = try await client.call(
                .put, "/v1/teams/ops/oncall", token: alice.userToken, json: #"{"rotation":["alice"],"shift":"1w","start":"\#(start)","zone":"UTC"}"#)
            #expect(overwrite.status == .internalServerError && overwrite.text.contains("cannot be read"), "\(overwrite.text)")
            #expect(try await override(bob).status == .internalServerError)
            #expect(try await harness.storage.onCallSchedule(teamId: ops.id) == #"{"rotation":["alice"],"shift":"#)
            // The pager says the same, not "no rotation".
            let directory = PagingDirectory(teams: [ops], schedules: [ops.id: #"{"rotation":"#], contacts: [:])
            let pages = directory.pages(for: .onCall, teamId: ops.id, now: clock.now())
            #expect(pages.count == 1 && pages[0].target.contains("the on-call schedule of ops cannot be read"), "\(pages)")
        }
    }

    @Test(
        "a member's contact shows only its scheme, host and port to anyone else: the team's policy and the page on a team notification carry no path, query or token",
        arguments: Backend.available)
    func credentials(backend: Backend) async throws {
        let clock = ManualClock()
        let outbound = RecordingOutbound()
        let harness = try await ServiceHarness(backend, clock: clock, outbound: outbound)
        try await harness.router { client in
            let worlds = try await Self.team(harness, client, members: ["bob", "carol"])
            let alice = worlds["alice"]!, bob = worlds["bob"]!, carol = worlds["carol"]!
            let secret = "https://ntfy.example/bob-x?auth=SECRET"
            let contact = try await client.call(.post, "/v1/me/contacts", token: bob.userToken, json: #"{"target":"ntfy:\#(secret)"}"#)
            #expect(contact.status == .created, "\(contact.text)")
            #expect(try await client.call(.get, "/v1/me/contacts", token: bob.userToken).text.contains("auth=SECRET"), "bob sees his own")
            let step = try await client.call(
                .post, "/v1/teams/ops/escalations", token: alice.userToken, json: #"{"name":"bob","after":"0s","targets":["user:bob"]}"#)
            #expect(step.status == .created, "\(step.text)")
            let subscribed = try await client.call(
                .post, "/v1/me/subscriptions", token: alice.userToken, json: #"{"targetHostName":"\#(alice.host)","team":"ops"}"#)
            var team = alice
            team.unsId = try #require(subscribed.string("userNotificationSubscriptionId"))

            let escalation = try #require(harness.service.paging as? Escalation)
            try await escalation.planEveryone()
            let loops = [Task { await escalation.runPlanner() }, Task { await escalation.runSender() }, Task { await escalation.runFinisher() }]
            defer { for loop in loops { loop.cancel() } }
            let id = try #require(try await team.publish(client, id: "db1", title: "db1 down", extra: #","priority":"High""#).string("id"))
            let paged = await eventually(timeout: .seconds(30)) {
                _ = try? await escalation.fireDue()
                let seen = try? await client.call(.get, "/v1/me/notifications/\(id)", token: carol.userToken).decode(UserNotification.self)
                return (seen?.escalations ?? []).contains { $0.user == "bob" }
            }
            #expect(paged, "\(outbound.requests.map(\.url))")
            #expect(outbound.requests.contains { $0.url.contains("auth=SECRET") }, "the page went to bob's contact: \(outbound.requests.map(\.url))")
            for path in ["/v1/me/notifications/\(id)", "/v1/teams/ops/escalations"] {
                let read = try await client.call(.get, path, token: carol.userToken)
                #expect(read.status == .ok)
                #expect(!read.text.contains("SECRET") && !read.text.contains("bob-x"), "\(path) shows carol bob's credentials: \(read.text)")
                #expect(read.text.contains("ntfy:https://ntfy.example:443"), "\(path): \(read.text)")
            }
            // An owner is not the user who gave it either.
            let owners = try await client.call(.get, "/v1/teams/ops/escalations", token: alice.userToken)
            #expect(!owners.text.contains("SECRET") && !owners.text.contains("bob-x"), "\(owners.text)")
        }
    }

    @Test(
        "a team's apps and hooks are the team's: owners list and revoke them after their maker is gone, a plain member cannot; a team's feed is never a member nor signed in as",
        arguments: Backend.available)
    func teamsApps(backend: Backend) async throws {
        let harness = try await ServiceHarness(backend)
        try await harness.router { client in
            let worlds = try await Self.team(harness, client, members: ["bob", "carol"])
            let alice = worlds["alice"]!, bob = worlds["bob"]!, carol = worlds["carol"]!
            let hook = try await client.call(
                .post, "/v1/me/subscriptions", token: alice.userToken, json: #"{"targetHostName":"\#(alice.host)","platform":"webhook","team":"ops"}"#
            )
            #expect(hook.status == .created, "\(hook.text)")
            let hookId = try #require(hook.string("userNotificationSubscriptionId"))
            let url = try #require(hook.string("webhookUrl"))
            let path = String(url[try #require(url.range(of: "/v1/hooks/")).lowerBound...])
            #expect(try await client.call(.post, path, json: #"{"title":"from the hook"}"#).status.code < 300)

            // bob becomes an owner and takes alice out: the hook is still the team's, and his to end.
            #expect(
                try await client.call(.post, "/v1/teams/ops/members", token: alice.userToken, json: #"{"user":"bob","role":"owner"}"#).status == .ok)
            #expect(try await client.call(.delete, "/v1/teams/ops/members/alice", token: bob.userToken).status == .noContent)
            let listed = try await client.call(.get, "/v1/teams/ops/subscriptions", token: bob.userToken)
            #expect(listed.status == .ok && listed.text.contains(hookId), "\(listed.text)")
            #expect(try await client.call(.get, "/v1/teams/ops/subscriptions", token: carol.userToken).status == .forbidden)
            #expect(try await client.call(.delete, "/v1/teams/ops/subscriptions/\(hookId)", token: carol.userToken).status == .forbidden)
            #expect(try await client.call(.get, "/v1/teams/ops/subscriptions", token: alice.userToken).status == .notFound)
            #expect(try await client.call(.delete, "/v1/teams/ops/subscriptions/\(hookId)", token: bob.userToken).status == .noContent)
            #expect(try await client.call(.delete, "/v1/teams/ops/subscriptions/\(hookId)", token: bob.userToken).status == .notFound)
            let after = try await client.call(.post, path, json: #"{"title":"after the revoke"}"#)
            #expect(after.status.code >= 400, "the revoked hook still publishes: \(after.status)")

            // A team's feed is not a user.
            try await harness.service.teams.create(name: "b", owner: "carol")
            for name in ["team/b", "team/ops"] {
                let added = try await client.call(.post, "/v1/teams/ops/members", token: bob.userToken, json: #"{"user":"\#(name)"}"#)
                #expect(added.status == .notFound, "\(name): \(added.text)")
                let signIn = try await client.call(.post, "/oauth2/v2.0/token", form: "grant_type=password&username=\(name)&password=")
                #expect(signIn.status == .badRequest && signIn.text.contains("invalid_grant"), "\(signIn.text)")
            }
            await #expect(throws: ServiceError.self) { try await harness.service.teams.create(name: "c", owner: "team/b") }
        }
    }

    @Test(
        "revoked or expired, a doorbell's token ends its open connections within a second: a full-payload doorbell of a revoked device, a browser's session signed out elsewhere",
        arguments: Backend.available)
    func revokedStreams(backend: Backend) async throws {
        let harness = try await ServiceHarness(backend)
        try await harness.live { client in
            let port = try #require(client.port)
            let alice = try await harness.world(client)
            // A device of its own (registered with its token's device id), listening in full.
            let laptop = try await client.call(
                .post, "/v1/me/subscriptions", token: alice.userToken, json: #"{"deviceName":"laptop","platform":"websocket"}"#)
            let laptopId = try #require(laptop.string("userNotificationSubscriptionId"), "\(laptop.text)")
            let full = FrameLog()
            let listening = connectDoorbell(port: port, token: alice.userToken, query: "?payload=full", log: full)
            defer { listening.cancel() }
            // A browser, signed in with its cookie, listening in full too.
            let session = try await client.call(
                .post, "/v1/web/session", json: #"{"username":"alice","password":"s3cret-alice"}"#, headers: ["Sec-Fetch-Site": "same-origin"])
            #expect(session.status == .created, "\(session.text)")
            let cookie = try #require(session.headers[.setCookie]?.split(separator: ";").first.map(String.init))
            let browserId = try #require(session.string("subscriptionId"))
            let browser = FrameLog()
            // Its session token, carried as a bearer: this WebSocket client sends an Origin of its
            // own without the port, which the same-Origin rule for the cookie refuses (Chromium's
            // doorbell on the cookie is tested by Tests/browser/web_inbox.py).
            let sessionToken = String(try #require(cookie.split(separator: "=", maxSplits: 1).last))
            let browsing = connectDoorbell(port: port, token: sessionToken, query: "?payload=full", log: browser)
            defer { browsing.cancel() }
            // Milliseconds alone; at the peak of a full run over 10 s (a bound, not the measure).
            let connected = await eventually(timeout: .seconds(60)) { harness.service.hub.connectionCount >= 2 }
            if !connected {
                // Ended first: a socket still open would hold this wait until the time limit.
                browsing.cancel()
                listening.cancel()
                let ended = await Result { try await browsing.value }
                Issue.record("connected: \(harness.service.hub.connectionCount); the browser's: \(ended)")
            }
            try #require(connected)
            let fullOpened = await full.wait { !$0.isEmpty }, browserOpened = await browser.wait { !$0.isEmpty }
            #expect(fullOpened && browserOpened, "both opened")

            // A second device of alice's revokes the browser, then the laptop: each closes at once.
            let phone = try await client.call(.post, "/oauth2/v2.0/token", form: "grant_type=password&username=alice&password=s3cret-alice")
            let phoneToken = try #require(phone.string("access_token"))
            #expect(try await client.call(.delete, "/v1/me/subscriptions/\(browserId)", token: phoneToken).status == .noContent)
            let revokedAt = ContinuousClock.now
            let closed = try? await browsing.value
            #expect(closed != nil, "the browser's socket was not closed")
            // Within a second (the check runs every 250 ms); the margin is for a loaded machine.
            #expect(ContinuousClock.now - revokedAt < .seconds(10))
            #expect(try await client.call(.delete, "/v1/me/subscriptions/\(laptopId)", token: phoneToken).status == .noContent)
            _ = try? await listening.value
            #expect(harness.service.hub.connectionCount == 0, "both left the hub")
            let framesBefore = full.all.count + browser.all.count
            _ = try await alice.publish(client, id: "after-revoke", title: "not for revoked devices")
            try await Task.sleep(for: .milliseconds(300))
            #expect(full.all.count + browser.all.count == framesBefore, "a revoked device was sent a change")
        }
    }

    @Test("an expired token's doorbell is hung up by the clock, with no query")
    func expiredStreams() async throws {
        let clock = ManualClock()
        let harness = try await ServiceHarness(.sqlite, clock: clock)
        defer { Task { [storage = harness.storage] in try? await storage.close() } }
        final class Listener: DoorbellListener, Sendable {
            let hungUp = Atomic<Bool>(false)
            func ring(_ value: Int64) {}
            func hangUp() { hungUp.store(true, ordering: .relaxed) }
        }
        // No jobs run here: each check is called. The first reads the generation of revocations.
        try await harness.service.auth.closeEndedStreams()
        let soon = Listener(), later = Listener()
        let hub = harness.service.hub
        _ = hub.connect(userId: "u", credential: .init(tokenHash: "a", expires: clock.now() + 10), listener: soon)
        _ = hub.connect(userId: "u", credential: .init(tokenHash: "b", expires: clock.now() + 100), listener: later)
        try await harness.service.auth.closeEndedStreams()
        #expect(!soon.hungUp.load(ordering: .relaxed) && hub.connectionCount == 2)
        clock.advance(by: 11)
        try await harness.service.auth.closeEndedStreams()
        #expect(soon.hungUp.load(ordering: .relaxed) && !later.hungUp.load(ordering: .relaxed) && hub.connectionCount == 1)
        // A revocation anywhere: every open token is read again, and one that is not there ends.
        harness.service.core.forgetCachedCredentials()
        try await harness.service.auth.closeEndedStreams()
        #expect(later.hungUp.load(ordering: .relaxed) && hub.connectionCount == 0)
    }

    @Test("--webpush-allow compares parsed URLs, not text: a user part, another host or port, or a path outside the entry's is not allowed")
    func webPushAllow() {
        for (entry, endpoint, allowed) in [
            ("http://127.0.0.1:", "http://127.0.0.1:4567/push/1", true), ("https://push.example.com/", "https://push.example.com/v1/x", true),
            ("https://push.example.com", "https://PUSH.example.com/x", true), ("https://push.example.com/v1/", "https://push.example.com/v1", false),
            ("https://push.example.com", "https://push.example.com@10.0.0.5/", false),
            ("https://push.example.com", "https://push.example.com.evil.test/x", false),
            ("https://push.example.com:8443/", "https://push.example.com/x", false),
            ("https://push.example.com/v1/", "https://push.example.com/v2/x", false),
            ("https://push.example.com/v1", "https://push.example.com/v1evil", false),
            ("http://push.example.com/", "https://push.example.com/x", false),
        ] {
            #expect(WebPushDelivery.allows(entry, endpoint) == allowed, "\(entry) \(endpoint)")
        }
        #expect(WebPushDelivery.endpointProblem("https://push.example.com@10.0.0.5/", allow: ["https://push.example.com"]) != nil)
    }

    @Test("a Web Push that the outbound policy refuses is dropped, not tried again", arguments: Backend.available)
    func refusedPush(backend: Backend) async throws {
        let clock = ManualClock()
        let lookups = Atomic<Int>(0)
        let policy = try OutboundPolicy(resolver: { name in
            if name == "pushy.test" { lookups.add(1, ordering: .relaxed) }
            return name == "pushy.test" ? [[169, 254, 169, 254]] : []
        })
        let outbound = RecordingOutbound(policy: policy)
        let harness = try await ServiceHarness(backend, clock: clock, outbound: outbound) { $0.webPushAllow = ["https://pushy.test/"] }
        try await harness.router { client in
            let alice = try await harness.world(client)
            let aliceId = try #require(try await harness.storage.user(name: "alice")).id
            let browser = WebPushServiceTests.Browser(endpoint: "https://pushy.test/sub-1")
            let made = try await client.call(.post, "/v1/me/webpush", token: alice.userToken, json: browser.json)
            #expect(made.status == .created, "\(made.text)")
            _ = try await alice.publish(client, id: "one", title: "One")
            let webPush = try #require(harness.service.webPush as? WebPushDelivery)
            await webPush.pushNow(userId: aliceId)
            #expect(lookups.load(ordering: .relaxed) == 1 && outbound.requests.isEmpty)
            for _ in 0..<3 {
                clock.advance(by: 4000)
                await webPush.pushNow(userId: aliceId)
            }
            #expect(lookups.load(ordering: .relaxed) == 1, "a refused push was tried again")
        }
    }

    @Test(
        "the session cookie is Secure and __Host- named behind https: an https public URL, or X-Forwarded-Proto from a --trusted-proxy (whose X-Forwarded-For is the address sign-ins are counted by); anyone else's forwarding headers count for nothing"
    )
    func secureCookie() async throws {
        @Sendable func signIn(_ client: any TestClientProtocol, _ headers: [String: String] = [:]) async throws -> Reply {
            try await client.call(
                .post, "/v1/web/session", json: #"{"username":"alice","password":"s3cret-alice"}"#,
                headers: ["Sec-Fetch-Site": "same-origin"].merging(headers) { a, _ in a })
        }
        // TLS ended by a proxy, the public URL https: Secure, __Host-, HSTS; the plain name is not read.
        let behind = try await ServiceHarness { $0.publicURL = "https://notty.example.com" }
        try await behind.router { client in
            _ = try await behind.world(client)
            let session = try await signIn(client)
            let cookie = try #require(session.headers[.setCookie])
            #expect(cookie.hasPrefix("__Host-notty_session=") && cookie.contains("; Secure") && cookie.contains("Path=/"), "\(cookie)")
            #expect(session.headers[HTTPField.Name("strict-transport-security")!] != nil)
            let token = String(try #require(cookie.split(separator: ";").first?.split(separator: "=", maxSplits: 1).last))
            #expect(try await client.call(.get, "/v1/me", headers: ["Cookie": "__Host-notty_session=\(token)"]).status == .ok)
            #expect(try await client.call(.get, "/v1/me", headers: ["Cookie": "notty_session=\(token)"]).status == .unauthorized)
        }
        // A trusted proxy on loopback: its X-Forwarded-Proto and X-Forwarded-For are believed.
        let proxied = try await ServiceHarness { $0.trustedProxies = ["127.0.0.0/8"] }
        try await proxied.live { client in
            _ = try await proxied.world(client)
            let overHTTPS = try #require(try await signIn(client, ["X-Forwarded-Proto": "https"]).headers[.setCookie])
            #expect(overHTTPS.hasPrefix("__Host-notty_session=") && overHTTPS.contains("; Secure"), "\(overHTTPS)")
            let plain = try #require(try await signIn(client).headers[.setCookie])
            #expect(plain.hasPrefix("notty_session=") && !plain.contains("Secure"), "\(plain)")
            _ = try await client.call(
                .post, "/oauth2/v2.0/token", form: "grant_type=password&username=alice&password=wrong",
                headers: ["X-Forwarded-For": "203.0.113.9, 127.0.0.1"])
            let counted = try await proxied.storage.allGuesses().map(\.key)
            #expect(counted.contains("address:203.0.113.9") && !counted.contains("address:127.0.0.1"), "\(counted)")
        }
        // No trusted proxy: the same headers are anyone's, and count for nothing.
        let open = try await ServiceHarness()
        try await open.live { client in
            _ = try await open.world(client)
            let cookie = try #require(try await signIn(client, ["X-Forwarded-Proto": "https"]).headers[.setCookie])
            #expect(cookie.hasPrefix("notty_session=") && !cookie.contains("Secure"), "\(cookie)")
            _ = try await client.call(
                .post, "/oauth2/v2.0/token", form: "grant_type=password&username=alice&password=wrong", headers: ["X-Forwarded-For": "203.0.113.9"])
            let counted = try await open.storage.allGuesses().map(\.key)
            #expect(!counted.contains("address:203.0.113.9") && counted.contains { $0.hasPrefix("address:127.") }, "\(counted)")
        }
    }

    @Test(
        "nothing grows without bound per user: calendar feeds 10, devices 100 (a device registering again is the same one), contacts 10; contact and escalation tests 10 a minute",
        arguments: Backend.available)
    func bounds(backend: Backend) async throws {
        let clock = ManualClock()
        let harness = try await ServiceHarness(backend, clock: clock, outbound: RecordingOutbound())
        try await harness.router { client in
            let worlds = try await Self.team(harness, client)
            let bob = worlds["bob"]!
            for n in 0..<10 {
                let made = try await client.call(.post, "/v1/teams/ops/oncall/calendar", token: bob.userToken)
                #expect(made.status == .created, "calendar \(n): \(made.text)")
            }
            let eleventh = try await client.call(.post, "/v1/teams/ops/oncall/calendar", token: bob.userToken)
            #expect(eleventh.status == .badRequest && eleventh.text.contains("at most 10 calendar feeds"), "\(eleventh.text)")
            // Devices: bob's own token's device registers again and again: one.
            for _ in 0..<3 {
                let again = try await client.call(.post, "/v1/me/subscriptions", token: bob.userToken, json: #"{"deviceName":"laptop"}"#)
                #expect(again.status == .created, "\(again.text)")
            }
            let bobId = try #require(try await harness.storage.user(name: "bob")).id
            let now = clock.now()
            for n in 0..<99 {
                try await harness.storage.insertSubscription(
                    SubscriptionRecord(
                        id: "dev-\(n)", userId: bobId, targetHostName: nil, deviceId: "device-\(n)", deviceName: "d\(n)", platform: "websocket",
                        createdAt: now, expiresAt: now + 86_400))
            }
            let over = try await client.call(.post, "/v1/me/subscriptions", json: #"{"deviceName":"one too many"}"#, headers: [:])
            #expect(over.status == .unauthorized)
            let signedIn = try await client.call(.post, "/oauth2/v2.0/token", form: "grant_type=password&username=bob&password=s3cret-bob")
            let newToken = try #require(signedIn.string("access_token"))
            let refused = try await client.call(.post, "/v1/me/subscriptions", token: newToken, json: #"{"deviceName":"one too many"}"#)
            #expect(refused.status == .badRequest && refused.text.contains("at most 100 devices and browsers"), "\(refused.text)")
            #expect(try await client.call(.post, "/v1/me/subscriptions", token: bob.userToken, json: #"{"deviceName":"laptop"}"#).status == .created)
            // Contacts: 10; tests: 10 a minute, then 429 with Retry-After.
            var contactId = ""
            for n in 0..<10 {
                let added = try await client.call(
                    .post, "/v1/me/contacts", token: bob.userToken, json: #"{"target":"webhook:http://127.0.0.1:9/\#(n)"}"#)
                #expect(added.status == .created, "\(added.text)")
                contactId = added.string("id") ?? contactId
            }
            #expect(
                try await client.call(.post, "/v1/me/contacts", token: bob.userToken, json: #"{"target":"webhook:http://127.0.0.1:9/x"}"#).status
                    == .badRequest)
            for n in 0..<10 {
                #expect(try await client.call(.post, "/v1/me/contacts/\(contactId)/test", token: bob.userToken).status == .ok, "test \(n)")
            }
            let scanning = try await client.call(.post, "/v1/me/contacts/\(contactId)/test", token: bob.userToken)
            #expect(scanning.status == .tooManyRequests && scanning.headers[.retryAfter] != nil, "\(scanning.text)")
            clock.advance(by: 6)
            #expect(try await client.call(.post, "/v1/me/contacts/\(contactId)/test", token: bob.userToken).status == .ok, "one a 6 s comes back")
        }
    }

    @Test(
        "the types in place of strings: six kinds of subscription told apart in one place, a feed's owner a user or a team, a sealed value that prints nothing"
    )
    func types() {
        let now = Date()
        func record(host: String?, platform: String?) -> SubscriptionRecord {
            SubscriptionRecord(
                id: "s", userId: "u", targetHostName: host, deviceId: "team-1", deviceName: nil, platform: platform, createdAt: now, expiresAt: now)
        }
        let kinds: [(SubscriptionRecord, SubscriptionRecord.Kind, SubscriptionRecord.Limited)] = [
            (record(host: nil, platform: "websocket"), .device, .signedIn), (record(host: nil, platform: nil), .device, .signedIn),
            (record(host: nil, platform: "web"), .browser, .signedIn), (record(host: nil, platform: "ntfy"), .topic, .signedIn),
            (record(host: "ci.example.com", platform: nil), .app, .apps), (record(host: "ci.example.com", platform: "webhook"), .hook, .apps),
            (record(host: nil, platform: "ical"), .calendar, .calendars),
        ]
        for (row, kind, limited) in kinds {
            #expect(row.kind == kind && row.kind.limited == limited, "\(row.platform ?? "nil") \(row.targetHostName ?? "nil")")
            #expect((row.calendarTeamId != nil) == (kind == .calendar))
        }
        #expect(FeedOwner(id: "team-01a2") == .team(id: "team-01a2") && FeedOwner(id: "team-01a2").isTeam)
        #expect(FeedOwner(id: "5f0c6a1e") == .user(id: "5f0c6a1e") && !FeedOwner(id: "5f0c6a1e").isTeam)
        #expect(UserRecord(id: Team.idPrefix + "x", userName: "team/ops", displayName: "ops", passwordHash: "").isTeamFeed)
        let sealed = SecretBox.ephemeral().seal("whsec_do_not_print")
        #expect("\(sealed)" == "(sealed)" && !String(describing: [sealed]).contains("whsec"))
    }
}

@Suite("The pager's directory: only the teams whose tracks came due, each for a few seconds")
struct PagingDirectoryTests {
    @Test("a team read is known for directoryLifetime, one read and not found pages 'the team is gone', a team never read is not known")
    func readOnlyWhatIsDue() {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let member = TeamMember(user: "bob", displayName: "Bob", role: .member, since: now)
        let ops = Team(id: "team-ops", name: "ops", created: now, members: [member])
        var directory = PagingDirectory()
        directory.read(
            teamIds: ["team-ops", "team-gone"], teams: [ops], schedules: [:],
            contacts: ["bob": [Contact(id: "c1", target: "webhook:https://bob.example/page", created: now)]], at: now)
        #expect(directory.knows(teamId: "team-ops", now: now + 1))
        #expect(directory.knows(teamId: "team-gone", now: now + 1))
        #expect(!directory.knows(teamId: "team-other", now: now + 1), "a team whose track did not come due is not read")
        #expect(!directory.knows(teamId: "team-ops", now: now + Escalation.directoryLifetime), "read again after its lifetime")
        #expect(directory.pages(for: .user("bob"), teamId: "team-ops", now: now).map(\.target) == ["webhook:https://bob.example/page"])
        #expect(directory.pages(for: .onCall, teamId: "team-ops", now: now).first?.target.contains("has no rotation") == true)
        #expect(directory.pages(for: .team, teamId: "team-gone", now: now).first?.target.contains("the team is gone") == true)
        // Read again without bob's contacts (he removed them): the page says so.
        directory.read(teamIds: ["team-ops"], teams: [ops], schedules: [:], contacts: [:], at: now + 10)
        #expect(directory.pages(for: .user("bob"), teamId: "team-ops", now: now + 10).first?.target.contains("has no contacts") == true)
    }
}
