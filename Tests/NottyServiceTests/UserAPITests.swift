import Foundation
import HTTPTypes
import NottyCore
import NottyTestSupport
import Testing

@testable import NottyHTTP
@testable import NottyService
@testable import NottyServicePostgres
@testable import NottyServiceSQLite

@Suite("The signed-in user's API (PROTOCOL.md §2.3)", .timeLimit(.minutes(5)))
struct UserAPITests {
    @Test("Change feed: pages, cursors, hasMore, tombstones, 304, X-Poll-Interval, ETag", arguments: Backend.available)
    func changeFeed(backend: Backend) async throws {
        let harness = try await ServiceHarness(backend) { $0.pollInterval = 42 }
        try await harness.router { client in
            let world = try await harness.world(client)
            var ids: [String] = []
            for i in 0..<5 { ids.append(try #require(try await world.publish(client, id: "n\(i)").string("id"))) }
            let first = try await client.call(.get, "/v1/me/notifications/changes?limit=2", token: world.userToken)
            #expect(first.headers[HTTPField.Name("X-Poll-Interval")!] == "42")
            let page1 = try first.decode(ChangesPage.self)
            #expect(page1.changes.map(\.id) == Array(ids.prefix(2)))
            #expect(page1.hasMore)
            let page2 = try await client.call(.get, "/v1/me/notifications/changes?since=\(page1.cursor)&limit=2", token: world.userToken).decode(
                ChangesPage.self)
            #expect(page2.changes.map(\.id) == Array(ids[2..<4]))
            let page3 = try await client.call(.get, "/v1/me/notifications/changes?since=\(page2.cursor)", token: world.userToken).decode(
                ChangesPage.self)
            #expect(page3.changes.map(\.id) == [ids[4]])
            #expect(!page3.hasMore)
            // Nothing changed: 304 with no body.
            let unchanged = try await client.call(
                .get, "/v1/me/notifications/changes?since=\(page3.cursor)", token: world.userToken, headers: ["If-None-Match": "\"\(page3.cursor)\""])
            #expect(unchanged.status == .notModified)
            #expect(unchanged.text.isEmpty)
            #expect(unchanged.headers[HTTPField.Name("X-Poll-Interval")!] == "42")
            // A delete shows up as a tombstone, oldest change first, and the 304 stops.
            #expect(try await client.call(.delete, "/v1/me/notifications/\(ids[1])", token: world.userToken).status == .noContent)
            let changed = try await client.call(
                .get, "/v1/me/notifications/changes?since=\(page3.cursor)", token: world.userToken, headers: ["If-None-Match": "\"\(page3.cursor)\""])
            #expect(changed.status == .ok)
            let tail = try changed.decode(ChangesPage.self)
            #expect(tail.changes.map(\.id) == [ids[1]])
            #expect(tail.changes.first?.status == .deleted)
            #expect(changed.headers[.eTag] == "\"\(tail.cursor)\"")
            // Replaying the whole feed gives one entry per notification, as it is now.
            let all = try await client.call(.get, "/v1/me/notifications/changes", token: world.userToken).decode(ChangesPage.self)
            #expect(Set(all.changes.map(\.id)) == Set(ids))
            #expect(all.changes.last?.id == ids[1])
        }
    }

    @Test("Bad cursors: 400 for garbage, 410 cursorExpired for one from elsewhere or too old", arguments: Backend.available)
    func cursors(backend: Backend) async throws {
        let clock = ManualClock()
        let harness = try await ServiceHarness(backend, clock: clock)
        try await harness.router { client in
            let world = try await harness.world(client)
            #expect(try await client.call(.get, "/v1/me/notifications/changes?since=abc", token: world.userToken).status == .badRequest)
            #expect(try await client.call(.get, "/v1/me/notifications/changes?limit=0", token: world.userToken).status == .badRequest)
            let future = try await client.call(.get, "/v1/me/notifications/changes?since=999999", token: world.userToken)
            #expect(future.status == .gone)
            #expect(future.errorCode == "cursorExpired")
            // A tombstone older than the kept history is forgotten; cursors before it expire.
            let a = try #require(try await world.publish(client, id: "a").string("id"))
            let early = try await client.call(.get, "/v1/me/notifications/changes", token: world.userToken).decode(ChangesPage.self)
            _ = try await world.publish(client, id: "b")
            #expect(try await client.call(.delete, "/v1/me/notifications/\(a)", token: world.userToken).status == .noContent)
            clock.advance(by: 31 * 86_400)
            try await harness.service.maintenance.purgeHistory()
            let refreshed = try await client.call(.post, "/oauth2/v2.0/token", form: "grant_type=refresh_token&refresh_token=\(world.refreshToken)")
            let token = try #require(refreshed.string("access_token"))
            let old = try await client.call(.get, "/v1/me/notifications/changes?since=\(early.cursor)", token: token)
            #expect(old.status == .gone)
            #expect(old.errorCode == "cursorExpired")
            // A full resync still works, and no longer lists the forgotten tombstone.
            let full = try await client.call(.get, "/v1/me/notifications/changes", token: token).decode(ChangesPage.self)
            #expect(full.changes.map(\.appNotificationId) == ["b"])
        }
    }

    @Test("Views partition the active notifications; counts add up; snooze ends by time alone", arguments: Backend.available)
    func viewsAndSnooze(backend: Backend) async throws {
        let clock = ManualClock()
        let harness = try await ServiceHarness(backend, clock: clock)
        try await harness.router { client in
            let world = try await harness.world(client)
            var ids: [String] = []
            for i in 0..<6 { ids.append(try #require(try await world.publish(client, id: "n\(i)").string("id"))); clock.advance(by: 1) }
            let until = ISOTime.format(clock.now() + 900)
            let patches = [
                (ids[1], #"{"readState":"Read"}"#),
                (ids[2], #"{"userActionState":"Activated","readState":"Read"}"#),
                (ids[3], #"{"userActionState":"Dismissed"}"#),
                (ids[4], #"{"userActionState":"Snoozed","snoozedUntil":"\#(until)"}"#),
            ]
            for (id, body) in patches {
                #expect(try await client.call(.patch, "/v1/me/notifications/\(id)", token: world.userToken, json: body).status == .ok)
            }
            func view(_ name: String) async throws -> [String] {
                try await client.call(.get, "/v1/me/notifications?view=\(name)", token: world.userToken).decode(NotificationList.self).value.map(\.id)
            }
            #expect(try await view("unread") == [ids[5], ids[0]])
            #expect(try await view("read") == [ids[1]])
            #expect(try await view("activated") == [ids[2]])
            #expect(try await view("dismissed") == [ids[3]])
            #expect(try await view("snoozed") == [ids[4]])
            #expect(try await view("all") == ids.reversed())
            #expect(
                try await client.call(.get, "/v1/me/notifications?view=all&top=2&skip=1", token: world.userToken).decode(NotificationList.self).value
                    .map(\.id) == [ids[4], ids[3]])
            #expect(try await client.call(.get, "/v1/me/notifications?view=bogus", token: world.userToken).status == .badRequest)
            var counts = try await client.call(.get, "/v1/me/notifications/counts", token: world.userToken).decode(ViewCounts.self)
            #expect(counts.unread + counts.read + counts.activated + counts.dismissed + counts.snoozed == counts.all)
            #expect(counts.snoozed == 1 && counts.unread == 2)
            // 15 minutes later, with no request in between, the snooze is over: back in Unread.
            clock.advance(by: 901)
            #expect(try await view("snoozed") == [])
            #expect(try await view("unread") == [ids[5], ids[4], ids[0]])
            counts = try await client.call(.get, "/v1/me/notifications/counts", token: world.userToken).decode(ViewCounts.self)
            #expect(counts.snoozed == 0 && counts.unread == 3 && counts.all == 6)
        }
    }

    @Test("Expiry deletes at expirationDateTime on its own and the feed says so", arguments: Backend.available)
    func expiry(backend: Backend) async throws {
        let clock = ManualClock()
        let harness = try await ServiceHarness(backend, clock: clock)
        try await harness.router { client in
            let world = try await harness.world(client)
            let at = ISOTime.format(clock.now() + 60)
            let id = try #require(
                try await world.publish(client, #"{"appNotificationId":"x","expirationDateTime":"\#(at)","payload":{"rawContent":"x"}}"#).string("id")
            )
            clock.advance(by: 61)
            // Hidden at once, even before the sweeper runs.
            #expect(try await client.call(.get, "/v1/me/notifications/\(id)", token: world.userToken).status == .notFound)
            // The application's maintenance service deletes it on its own (it sweeps every 0.5 s);
            // no request and no explicit call is needed. Bounded wait (10 s: 20 sweeps).
            func feed() async throws -> ChangesPage {
                try await client.call(.get, "/v1/me/notifications/changes", token: world.userToken).decode(ChangesPage.self)
            }
            #expect(try await eventually(timeout: .seconds(10)) { try await feed().changes.first?.status == .deleted })
            #expect(try await feed().changes.map(\.status) == [.deleted])
            #expect(try await harness.service.maintenance.expireDue() == 0, "nothing is left to expire, and it is deleted once")
        }
    }

    @Test("PATCH, DELETE and batch errors; delete is final and idempotent", arguments: Backend.available)
    func mutationsAndErrors(backend: Backend) async throws {
        let harness = try await ServiceHarness(backend)
        try await harness.router { client in
            let world = try await harness.world(client)
            let id = try #require(try await world.publish(client, id: "a").string("id"))
            let path = "/v1/me/notifications/\(id)"
            #expect(try await client.call(.patch, path, token: world.userToken, json: "{").status == .badRequest)
            #expect(try await client.call(.patch, path, token: world.userToken, json: #"{"readState":"Maybe"}"#).status == .badRequest)
            #expect(try await client.call(.patch, path, token: world.userToken, json: #"{"userActionState":"Snoozed"}"#).status == .badRequest)
            #expect(try await client.call(.patch, path, token: world.userToken, json: "{}").status == .badRequest)
            #expect(try await client.call(.patch, path, token: world.userToken, json: #"{"readState":"read"}"#).string("readState") == "Read")
            #expect(
                try await client.call(.patch, "/v1/me/notifications/unknown", token: world.userToken, json: #"{"readState":"Read"}"#).status
                    == .notFound)
            #expect(try await client.call(.delete, "/v1/me/notifications/unknown", token: world.userToken).status == .notFound)
            #expect(try await client.call(.delete, path, token: world.userToken).status == .noContent)
            #expect(try await client.call(.delete, path, token: world.userToken).status == .noContent)
            // Changes to a deleted notification are dropped; it never comes back.
            #expect(try await client.call(.patch, path, token: world.userToken, json: #"{"readState":"Unread"}"#).status == .notFound)
            #expect(try await client.call(.get, path, token: world.userToken).status == .notFound)
            let republished = try await world.publish(client, id: "a")
            #expect(republished.string("id") != id)
        }
    }

    @Test("Batch: per-item results; one bad item does not fail the others", arguments: Backend.available)
    func batch(backend: Backend) async throws {
        let harness = try await ServiceHarness(backend)
        try await harness.router { client in
            let world = try await harness.world(client)
            let a = try #require(try await world.publish(client, id: "a").string("id"))
            let b = try #require(try await world.publish(client, id: "b").string("id"))
            let body =
                #"{"mutations":[{"id":"\#(a)","readState":"Read","mutationId":"m1"},{"id":"\#(b)","readState":"Sideways"},{"id":"nope","readState":"Read"},{"id":"\#(b)","op":"delete","mutationId":"m2"}]}"#
            let reply = try await client.call(.post, "/v1/me/notifications/batch", token: world.userToken, json: body)
            #expect(reply.status == .ok)
            let results = try reply.decode(BatchResponse.self).results
            #expect(results.map(\.status) == [200, 400, 404, 204])
            #expect(results[0].notification?.readState == .read)
            #expect(results[1].error?.code == "badRequest")
            let counts = try await client.call(.get, "/v1/me/notifications/counts", token: world.userToken).decode(ViewCounts.self)
            #expect(counts.read == 1 && counts.all == 1)
            // Replaying the same batch (an outbox resend) changes nothing and answers the same.
            let again = try await client.call(.post, "/v1/me/notifications/batch", token: world.userToken, json: body).decode(BatchResponse.self)
                .results
            #expect(again.map(\.status) == [200, 400, 404, 204])
            #expect(
                try await client.call(.post, "/v1/me/notifications/batch", token: world.userToken, json: #"{"mutations":5}"#).status == .badRequest)
            #expect(try await client.call(.post, "/v1/me/notifications/batch", token: world.userToken, json: "[]").status == .badRequest)
        }
    }

    @Test("The same mutationId twice applies once", arguments: Backend.available)
    func idempotence(backend: Backend) async throws {
        let harness = try await ServiceHarness(backend)
        try await harness.router { client in
            let world = try await harness.world(client)
            let id = try #require(try await world.publish(client, id: "a").string("id"))
            let path = "/v1/me/notifications/\(id)"
            let now = Int64(Date().timeIntervalSince1970 * 1000)
            #expect(
                try await client.call(
                    .patch, path, token: world.userToken, json: #"{"readState":"Read","changedAt":\#(now - 2000),"mutationId":"m-1"}"#
                ).status == .ok)
            #expect(
                try await client.call(
                    .patch, path, token: world.userToken, json: #"{"readState":"Unread","changedAt":\#(now - 1000),"mutationId":"m-2"}"#
                ).string("readState") == "Unread")
            // m-1 again (an outbox resend after a lost acknowledgement): not applied a second time.
            let replay = try await client.call(
                .patch, path, token: world.userToken, json: #"{"readState":"Read","changedAt":\#(now),"mutationId":"m-1"}"#)
            #expect(replay.status == .ok)
            #expect(replay.string("readState") == "Unread")
            let feed = try await client.call(.get, "/v1/me/notifications/changes", token: world.userToken).decode(ChangesPage.self)
            #expect(feed.changes.first?.readState == .unread)
        }
    }

    @Test("Last writer wins per field by the device clock, even when it arrives late; future clocks are clamped", arguments: Backend.available)
    func lastWriterWins(backend: Backend) async throws {
        let clock = ManualClock()
        let harness = try await ServiceHarness(backend, clock: clock)
        try await harness.router { client in
            let world = try await harness.world(client)
            clock.advance(by: 600)
            let id = try #require(try await world.publish(client, id: "a").string("id"))
            let path = "/v1/me/notifications/\(id)"
            let t = ISOTime.millis(clock.now())
            clock.advance(by: 600)
            // Device B dismisses at t+300 s; device A's read at t+100 s and its unread at t+500 arrive after.
            _ = try await client.call(.patch, path, token: world.userToken, json: #"{"userActionState":"Dismissed","changedAt":\#(t + 300_000)}"#)
            _ = try await client.call(
                .patch, path, token: world.userToken, json: #"{"readState":"Read","changedAt":\#(t + 100_000),"userActionState":"Activated"}"#)
            var now = try await client.call(.get, path, token: world.userToken).decode(UserNotification.self)
            #expect(now.userActionState == .dismissed, "the older Activated loses to the newer Dismissed")
            #expect(now.readState == .read, "readState is its own field: the read still applies")
            _ = try await client.call(.patch, path, token: world.userToken, json: #"{"readState":"Unread","changedAt":\#(t + 50_000)}"#)
            now = try await client.call(.get, path, token: world.userToken).decode(UserNotification.self)
            #expect(now.readState == .read, "an older unread loses")
            // A clock far in the future is clamped to the service's, so a later honest change still wins.
            _ = try await client.call(
                .patch, path, token: world.userToken, json: #"{"userActionState":"Activated","changedAt":"2999-01-01T00:00:00Z"}"#)
            clock.advance(by: 1)
            _ = try await client.call(
                .patch, path, token: world.userToken, json: #"{"userActionState":"NoInteraction","changedAt":\#(ISOTime.millis(clock.now()))}"#)
            now = try await client.call(.get, path, token: world.userToken).decode(UserNotification.self)
            #expect(now.userActionState == .noInteraction)
            // Ties go to the later arrival.
            let tie = ISOTime.millis(clock.now())
            _ = try await client.call(.patch, path, token: world.userToken, json: #"{"readState":"Unread","changedAt":\#(tie)}"#)
            _ = try await client.call(.patch, path, token: world.userToken, json: #"{"readState":"Read","changedAt":\#(tie)}"#)
            #expect(try await client.call(.get, path, token: world.userToken).string("readState") == "Read")
        }
    }

    @Test("User B gets 404 for every route on user A's ids and changes nothing", arguments: Backend.available)
    func isolation(backend: Backend) async throws {
        let harness = try await ServiceHarness(backend)
        try await harness.router { client in
            let alice = try await harness.world(client)
            let bob = try await harness.world(client, user: "bob", app: (alice.clientId, alice.clientSecret))
            let id = try #require(try await alice.publish(client, id: "secret").string("id"))
            let path = "/v1/me/notifications/\(id)"
            #expect(try await client.call(.get, path, token: bob.userToken).status == .notFound)
            #expect(try await client.call(.patch, path, token: bob.userToken, json: #"{"readState":"Read"}"#).status == .notFound)
            #expect(try await client.call(.delete, path, token: bob.userToken).status == .notFound)
            let batch = try await client.call(
                .post, "/v1/me/notifications/batch", token: bob.userToken, json: #"{"mutations":[{"id":"\#(id)","op":"delete"}]}"#)
            #expect(try batch.decode(BatchResponse.self).results.map(\.status) == [404])
            #expect(try await client.call(.delete, "/v1/me/subscriptions/\(alice.unsId)", token: bob.userToken).status == .notFound)
            let bobFeed = try await client.call(.get, "/v1/me/notifications/changes", token: bob.userToken).decode(ChangesPage.self)
            #expect(bobFeed.changes.isEmpty)
            #expect(try await client.call(.get, "/v1/me/notifications?view=all", token: bob.userToken).decode(NotificationList.self).value.isEmpty)
            // Alice's notification is untouched.
            let mine = try await client.call(.get, path, token: alice.userToken).decode(UserNotification.self)
            #expect(mine.readState == .unread && mine.status == .active)
            #expect(try await alice.publish(client, id: "still-works").status == .created)
        }
    }

    @Test("Subscriptions: create, list, revoke; me; bad bodies", arguments: Backend.available)
    func subscriptions(backend: Backend) async throws {
        let harness = try await ServiceHarness(backend)
        try await harness.router { client in
            let world = try await harness.world(client)
            let me = try await client.call(.get, "/v1/me", token: world.userToken)
            #expect(me.string("userName") == "alice" && me.string("displayName") == "alice")
            let second = try await client.call(
                .post, "/v1/me/subscriptions", token: world.userToken,
                json: #"{"targetHostName":"graphnotifications.sample.windows.com","deviceName":"phone","platform":"polling"}"#)
            #expect(second.status == .created)
            #expect(second.string("deviceId") != nil && second.string("expirationDateTime") != nil)
            let list = try await client.call(.get, "/v1/me/subscriptions", token: world.userToken).decode(SubscriptionList.self)
            #expect(list.value.count == 2)
            // Every subscription id of the user reaches the same history.
            let viaSecond = try await client.call(
                .post, "/beta/me/notifications", token: world.appToken, json: graphRawSample,
                headers: ["X-UNS-ID": second.string("userNotificationSubscriptionId")!])
            #expect(viaSecond.status == .created)
            #expect(
                try await client.call(.post, "/v1/me/subscriptions", token: world.userToken, json: #"{"platform":"carrier-pigeon"}"#).status
                    == .badRequest)
            #expect(try await client.call(.post, "/v1/me/subscriptions", token: world.userToken, json: "nope").status == .badRequest)
            #expect(try await client.call(.delete, "/v1/me/subscriptions/nope", token: world.userToken).status == .notFound)
        }
    }

    @Test("Operations: healthz, metrics, unknown routes, request ids, plain GET of the doorbell", arguments: Backend.available)
    func operations(backend: Backend) async throws {
        let harness = try await ServiceHarness(backend)
        try await harness.router { client in
            let world = try await harness.world(client)
            _ = try await world.publish(client, id: "x")
            let health = try await client.call(.get, "/healthz")
            #expect(health.status == .ok)
            let metrics = try await client.call(.get, "/metrics")
            #expect(metrics.text.contains("notty_publishes_total 1"))
            #expect(metrics.text.contains("notty_http_responses_total{status=\"201\"}"))
            let unknown = try await client.call(.get, "/nowhere")
            #expect(unknown.status == .notFound)
            #expect(unknown.errorCode == "itemNotFound")
            #expect(unknown.headers[HTTPField.Name("request-id")!]?.isEmpty == false)
            #expect(try await client.call(.get, "/v1/me/push").status == .unauthorized)
            #expect(try await client.call(.get, "/v1/me/push", token: world.userToken).status == .upgradeRequired)
        }
    }
}

@Suite("Devices: registration, listing, revocation (PROTOCOL.md §7.3)", .timeLimit(.minutes(5)))
struct DeviceAPITests {
    @Test(
        "Revoking a device's registration refuses its access and refresh tokens at once; an app subscription's revocation does not; an unknown app is 404; the list says when each was made and seen",
        arguments: Backend.available)
    func revokeDevice(backend: Backend) async throws {
        let clock = ManualClock()
        let harness = try await ServiceHarness(backend, clock: clock)
        try await harness.router { client in
            let world = try await harness.world(client)
            // A second sign-in is a second device; it registers and is seen.
            let login = try await client.call(.post, "/oauth2/v2.0/token", form: "grant_type=password&username=alice&password=s3cret-alice")
            let laptop = try #require(login.string("access_token")), laptopRefresh = try #require(login.string("refresh_token"))
            let registered = try await client.call(
                .post, "/v1/me/subscriptions", token: laptop, json: #"{"deviceName":"laptop","platform":"polling"}"#)
            #expect(registered.status == .created)
            let registration = try #require(registered.string("userNotificationSubscriptionId"))
            let unknownApp = try await client.call(.post, "/v1/me/subscriptions", token: laptop, json: #"{"targetHostName":"typo.example"}"#)
            #expect(unknownApp.status == .notFound && unknownApp.errorCode == "itemNotFound")
            let appSub = try await client.call(.post, "/v1/me/subscriptions", token: laptop, json: #"{"targetHostName":"\#(world.host)"}"#)
            #expect(appSub.status == .created)
            #expect(appSub.string("deviceId") == registered.string("deviceId"), "a device's app subscriptions carry its device id")
            let registeredAt = clock.nowMillis()
            clock.advance(by: 120)  // past the once-a-minute throttle
            #expect(try await client.call(.get, "/v1/me", token: laptop).status == .ok)
            let seenAt = clock.nowMillis()
            var entry: SubscriptionInfo?
            _ = try await eventually(timeout: .seconds(10)) {  // last seen is written in the background
                let list = try await client.call(.get, "/v1/me/subscriptions", token: world.userToken).decode(SubscriptionList.self).value
                entry = list.first { $0.userNotificationSubscriptionId == registration }
                return entry?.lastSeenDateTime == seenAt
            }
            #expect(entry?.isDevice == true && entry?.deviceName == "laptop" && entry?.platform == "polling")
            #expect(entry?.createdDateTime == registeredAt && entry?.lastSeenDateTime == seenAt, "\(String(describing: entry))")

            // Revoking the app subscription leaves the laptop signed in.
            #expect(
                try await client.call(
                    .delete, "/v1/me/subscriptions/\(try #require(appSub.string("userNotificationSubscriptionId")))", token: world.userToken
                ).status == .noContent)
            #expect(try await client.call(.get, "/v1/me", token: laptop).status == .ok)
            // Revoking the registration (from the other device) signs the laptop out: both tokens.
            #expect(try await client.call(.delete, "/v1/me/subscriptions/\(registration)", token: world.userToken).status == .noContent)
            let refused = try await client.call(.get, "/v1/me", token: laptop)
            #expect(refused.status == .unauthorized, "a revoked device's access token still works")
            let refresh = try await client.call(.post, "/oauth2/v2.0/token", form: "grant_type=refresh_token&refresh_token=\(laptopRefresh)")
            #expect(refresh.status == .badRequest && refresh.string("error") == "invalid_grant")
            #expect(try await client.call(.get, "/v1/me", token: world.userToken).status == .ok, "the other device was signed out too")
            #expect(try await client.call(.delete, "/v1/me/subscriptions/\(registration)", token: world.userToken).status == .notFound)
        }
    }
}
