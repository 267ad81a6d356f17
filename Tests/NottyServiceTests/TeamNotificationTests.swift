import Foundation
import HTTPTypes
import HummingbirdTesting
import NottyCore
import NottyTestSupport
import Testing

@testable import NottyHTTP
@testable import NottyService
@testable import NottyServicePostgres
@testable import NottyServiceSQLite

@Suite("Team notifications: one notification, one state, every member (PROTOCOL.md §13.1)", .timeLimit(.minutes(5)))
struct TeamNotificationTests {
    @Test(
        "an owner subscribes an app for the team; its publish is stored once and is in every member's feed, list and counts; a member's dismiss is every member's, rings them, and applies once; joining and leaving resync the member's devices; personal notifications stay personal",
        arguments: Backend.available)
    func sharedState(backend: Backend) async throws {
        let harness = try await ServiceHarness(backend)
        try await harness.router { client in
            let alice = try await harness.world(client)
            let bob = try await harness.world(client, user: "bob", app: (alice.clientId, alice.clientSecret))
            let carol = try await harness.world(client, user: "carol", app: (alice.clientId, alice.clientSecret))
            try await harness.service.teams.create(name: "ops", owner: "alice")
            #expect(try await client.call(.post, "/v1/teams/ops/members", token: alice.userToken, json: #"{"user":"bob"}"#).status == .ok)

            // Only an owner subscribes an app for the team; a device registration cannot be a team's.
            let host = "graphnotifications.sample.windows.com"
            let byBob = try await client.call(
                .post, "/v1/me/subscriptions", token: bob.userToken, json: #"{"targetHostName":"\#(host)","team":"ops"}"#)
            #expect(byBob.status == .forbidden, "\(byBob.text)")
            let byCarol = try await client.call(
                .post, "/v1/me/subscriptions", token: carol.userToken, json: #"{"targetHostName":"\#(host)","team":"ops"}"#)
            #expect(byCarol.status == .notFound, "\(byCarol.text)")
            #expect(try await client.call(.post, "/v1/me/subscriptions", token: alice.userToken, json: #"{"team":"ops"}"#).status == .badRequest)
            let subscribed = try await client.call(
                .post, "/v1/me/subscriptions", token: alice.userToken, json: #"{"targetHostName":"\#(host)","team":"ops"}"#)
            #expect(subscribed.status == .created, "\(subscribed.text)")
            var team = alice
            team.unsId = try #require(subscribed.string("userNotificationSubscriptionId"))

            func feed(_ world: World, since: String = "") async throws -> Reply {
                try await client.call(.get, "/v1/me/notifications/changes" + (since.isEmpty ? "" : "?since=\(since)"), token: world.userToken)
            }
            func unread(_ world: World) async throws -> [String] {
                try await client.call(.get, "/v1/me/notifications?view=unread", token: world.userToken).decode(NotificationList.self).value.map(\.id)
            }
            let bobBefore = try await feed(bob).decode(ChangesPage.self).cursor
            let published = try await team.publish(client, id: "disk-full", title: "Disk full on db1")
            #expect(published.status == .created, "\(published.text)")
            let id = try #require(published.string("id"))
            #expect(published.string("team") == "ops" && published["changedBy"] == nil, "\(published.text)")
            // Stored once: one row, in the team's feed.
            let bobId = try await bob.userId(client)
            #expect(try await harness.storage.teamOwners(ids: [id], userId: bobId)[id].map { $0 != bobId } == true)
            for member in [alice, bob] {
                #expect(try await unread(member) == [id])
                #expect(try await client.call(.get, "/v1/me/notifications/counts", token: member.userToken)["unread"] == .number(1))
                #expect(try await client.call(.get, "/v1/me/notifications/\(id)", token: member.userToken).status == .ok)
            }
            #expect(try await feed(bob, since: bobBefore).decode(ChangesPage.self).changes.map(\.id) == [id])
            #expect(try await unread(carol).isEmpty, "carol is not in ops")
            #expect(try await client.call(.get, "/v1/me/notifications/\(id)", token: carol.userToken).status == .notFound)

            // Bob's personal notification is his alone.
            let personal = try await bob.publish(client, id: "bobs-own")
            let personalId = try #require(personal.string("id"))
            #expect(personal["team"] == nil, "a personal notification has no team: \(personal.text)")
            #expect(try await unread(alice) == [id])
            #expect(Set(try await unread(bob)) == [id, personalId])

            // Bob dismisses the team's: dismissed for alice too, and her feed moves; the same
            // mutation again applies once; carol cannot touch it.
            let aliceCursor = try await feed(alice).decode(ChangesPage.self).cursor
            let dismiss = #"{"userActionState":"Dismissed","mutationId":"m-bob-1"}"#
            #expect(try await client.call(.patch, "/v1/me/notifications/\(id)", token: bob.userToken, json: dismiss).status == .ok)
            let aliceSees = try await feed(alice, since: aliceCursor).decode(ChangesPage.self)
            #expect(aliceSees.changes.map(\.id) == [id] && aliceSees.changes.first?.userActionState == .dismissed, "\(aliceSees)")
            // Who did it: bob, on his device (which has no registration here: named by its id), when the service applied it.
            let changedBy = try #require(aliceSees.changes.first?.changedBy)
            #expect(changedBy.user == "bob" && changedBy.device?.hasPrefix("device ") == true, "\(changedBy)")
            #expect(abs(changedBy.at.timeIntervalSinceNow) < 600)
            #expect(aliceSees.changes.first?.team == "ops")
            #expect(try await client.call(.patch, "/v1/me/notifications/\(id)", token: bob.userToken, json: dismiss).status == .ok)
            #expect(try await feed(alice, since: aliceSees.cursor).decode(ChangesPage.self).changes.isEmpty, "applied once")
            #expect(try await unread(alice).isEmpty)
            #expect(
                try await client.call(.patch, "/v1/me/notifications/\(id)", token: carol.userToken, json: #"{"readState":"Read"}"#).status
                    == .notFound)

            // Carol joins: her devices' cursors are before her history now (410, resync), and
            // a resync from the start has the team's notifications.
            let carols = try #require(try await carol.publish(client, id: "carols-own").string("id"))
            let carolCursor = try await feed(carol).decode(ChangesPage.self).cursor
            #expect(try await client.call(.post, "/v1/teams/ops/members", token: alice.userToken, json: #"{"user":"carol"}"#).status == .ok)
            #expect(try await feed(carol, since: carolCursor).status == .gone)
            #expect(Set(try await feed(carol).decode(ChangesPage.self).changes.map(\.id)) == [id, carols])
            // Her resync a row a page: its cursors say it is a resync, so positions before the
            // history's new start are not refused; it ends on a plain cursor past that start.
            var cursor = "", read: [String] = [], more = true
            while more {
                let page = try await client.call(
                    .get, "/v1/me/notifications/changes?limit=1" + (cursor.isEmpty ? "" : "&since=\(cursor)"), token: carol.userToken)
                #expect(page.status == .ok, "\(cursor): \(page.text)")
                let decoded = try page.decode(ChangesPage.self)
                read += decoded.changes.map(\.id)
                (cursor, more) = (decoded.cursor, decoded.hasMore)
                #expect(more == cursor.hasPrefix("r"), "\(cursor)")
            }
            #expect(Set(read) == [id, carols])
            #expect(try await feed(carol, since: cursor).status == .ok, "the last page's cursor is not behind her history")
            // Bob leaves: the same for him, and his resync has only his own.
            let bobCursor = try await feed(bob).decode(ChangesPage.self).cursor
            #expect(try await client.call(.delete, "/v1/teams/ops/members/bob", token: bob.userToken).status == .noContent)
            #expect(try await feed(bob, since: bobCursor).status == .gone)
            #expect(try await feed(bob).decode(ChangesPage.self).changes.map(\.id) == [personalId])
            #expect(try await client.call(.get, "/v1/me/notifications/\(id)", token: bob.userToken).status == .notFound)
        }
    }

    @Test("a member's dismiss rings every member's connected devices with a cursor of their own feed", arguments: Backend.available)
    func ringsMembers(backend: Backend) async throws {
        let harness = try await ServiceHarness(backend)
        try await harness.router { client in
            let (alice, bob) = try await harness.aliceAndBobInOps(client)
            let subscribed = try await client.call(
                .post, "/v1/me/subscriptions", token: alice.userToken,
                json: #"{"targetHostName":"graphnotifications.sample.windows.com","team":"ops"}"#)
            var team = alice
            team.unsId = try #require(subscribed.string("userNotificationSubscriptionId"))
            let id = try #require(try await team.publish(client, id: "x").string("id"))
            // Bob's device, connected to the doorbell: alice's read rings it with his feed's newest cursor.
            let (_, rings) = harness.service.hub.connect(userId: try await bob.userId(client))
            #expect(try await client.call(.patch, "/v1/me/notifications/\(id)", token: alice.userToken, json: #"{"readState":"Read"}"#).status == .ok)
            let cursor = try await client.call(.get, "/v1/me/notifications/changes", token: bob.userToken).decode(ChangesPage.self).cursor
            #expect(await Self.hears(rings, cursor), "bob's ring is his feed's newest cursor")
        }
    }
}

extension TeamNotificationTests {
    /// Whether a doorbell rings with `cursor` within `limit` (a ring is a task's event: waited
    /// for, not polled; the limit only ends a test that would otherwise hang).
    static func hears(_ rings: AsyncStream<Int64>, _ cursor: String, within limit: Duration = .seconds(30)) async -> Bool {
        await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                for await ring in rings where String(ring) == cursor { return true }
                return false
            }
            group.addTask {
                try? await Task.sleep(for: limit)
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
    }

    /// alice (owner) and bob in ops, and a World that publishes to ops.
    static func team(_ harness: ServiceHarness, _ client: any TestClientProtocol) async throws -> (alice: World, bob: World, team: World) {
        let (alice, bob) = try await harness.aliceAndBobInOps(client)
        let subscribed = try await client.call(
            .post, "/v1/me/subscriptions", token: alice.userToken, json: #"{"targetHostName":"graphnotifications.sample.windows.com","team":"ops"}"#)
        var team = alice
        team.unsId = try #require(subscribed.string("userNotificationSubscriptionId"), "\(subscribed.text)")
        return (alice, bob, team)
    }

    @Test(
        "a team notification's action runs once for the team, whichever members press it at once; every member sees who ran it",
        arguments: Backend.available)
    func actionOnceForTheTeam(backend: Backend) async throws {
        let target = ActionTarget(delay: .milliseconds(300))
        let harness = try await ServiceHarness(backend, outbound: target)
        try await harness.router { client in
            let (alice, bob, team) = try await Self.team(harness, client)
            let id = try #require(try await team.publish(client, id: "page", extra: actionsExtra).string("id"))
            let statuses = try await withThrowingTaskGroup(of: String?.self) { group in
                for i in 0..<6 { group.addTask { try await (i % 2 == 0 ? alice : bob).press(client, id, 1).string("status") } }
                return try await group.reduce(into: [String?]()) { $0.append($1) }
            }
            #expect(target.requests.count == 1, "\(statuses)")
            // Its outcome and its clear (Silence 1h dismisses) are every member's.
            for member in [alice, bob] {
                let seen = try await member.notification(client, id)
                let result = try #require(seen.actionResults?.first, "\(seen)")
                #expect(result.status == .done)
                #expect(result.device?.hasPrefix("alice on ") == true || result.device?.hasPrefix("bob on ") == true, "\(result)")
                #expect(seen.userActionState == .dismissed && seen.changedBy != nil)
            }
        }
    }

    @Test(
        "a team's webhook (Alertmanager): each firing alert is every member's; resolved, it is dismissed for the team", arguments: Backend.available)
    func teamWebhook(backend: Backend) async throws {
        let harness = try await ServiceHarness(backend)
        try await harness.router { client in
            let (alice, bob, _) = try await Self.team(harness, client)
            let made = try await client.call(
                .post, "/v1/me/subscriptions", token: alice.userToken,
                json: #"{"targetHostName":"\#(alice.host)","platform":"webhook","team":"ops"}"#)
            let url = try #require(made.string("webhookUrl"), "\(made.text)")
            let path = String(url[try #require(url.range(of: "/v1/hooks/")).lowerBound...])
            let firing = try webhookFixture("alertmanager-firing.json")
            let fired = try await client.hook(path, firing, headers: ["Content-Type": "application/json"])
            #expect(fired.status == .ok && fired.ids.count == 2, "\(fired.text)")
            for member in [alice, bob] {
                let seen = try await member.notification(client, fired.ids[0])
                #expect(seen.team == "ops" && seen.userActionState == .noInteraction, "\(seen)")
            }
            _ = try await client.hook(path, firing.replacingOccurrences(of: #""firing""#, with: #""resolved""#))
            for member in [alice, bob] {
                let counts = try await member.counts(client)
                #expect(counts.dismissed == 2 && counts.unread == 0, "\(counts)")
            }
        }
    }

    @Test(
        "a member's ntfy phone topic (PROTOCOL.md §8.2) has the team's Unread notifications, and not once another member read it",
        arguments: Backend.available)
    func memberPhoneTopic(backend: Backend) async throws {
        let harness = try await ServiceHarness(backend)
        try await harness.router { client in
            let (alice, bob, team) = try await Self.team(harness, client)
            let (topic, _) = try await bob.ntfyTopic(client)
            let id = try #require(try await team.publish(client, id: "db1", title: "Disk full on db1").string("id"))
            let polled = try await client.call(.get, "/\(topic)/json?poll=1")
            #expect(polled.status == .ok && polled.text.contains("Disk full on db1"), "\(polled.text)")
            #expect(
                try await client.call(.patch, "/v1/me/notifications/\(id)", token: alice.userToken, json: #"{"readState":"Read"}"#).status == .ok)
            let after = try await client.call(.get, "/\(topic)/json?poll=1")
            #expect(after.status == .ok && !after.text.contains("Disk full on db1"), "alice's read took it off bob's phone: \(after.text)")
        }
    }

    @Test(
        "two instances on one PostgreSQL: a member's dismiss through one rings the other member's device connected to the other",
        .enabled(if: TestPostgres.testsRun, "PostgreSQL is not available here"))
    func twoInstances() async throws {
        let one = try await ServiceHarness(.postgres)
        let two = try await ServiceHarness(sharingDatabaseOf: one)
        try await one.router { c1 in
            try await two.router { c2 in
                let (alice, bob, team) = try await Self.team(one, c1)
                let id = try #require(try await team.publish(c1, id: "db1").string("id"))
                let (_, rings) = two.service.hub.connect(userId: try await bob.userId(c2))
                #expect(
                    try await c1.call(.patch, "/v1/me/notifications/\(id)", token: alice.userToken, json: #"{"userActionState":"Dismissed"}"#).status
                        == .ok)
                let cursor = try await c2.call(.get, "/v1/me/notifications/changes", token: bob.userToken).decode(ChangesPage.self).cursor
                #expect(await Self.hears(rings, cursor), "bob's device on instance two heard of alice's dismiss on instance one")
                let seen = try await c2.call(.get, "/v1/me/notifications/\(id)", token: bob.userToken).decode(UserNotification.self)
                #expect(seen.userActionState == .dismissed && seen.changedBy?.user == "alice")
            }
        }
    }
}

extension World {
    /// The signed-in user's id.
    func userId(_ client: any TestClientProtocol) async throws -> String {
        try #require(try await client.call(.get, "/v1/me", token: userToken).string("id"))
    }
}
