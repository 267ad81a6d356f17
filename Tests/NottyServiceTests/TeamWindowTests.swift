import Foundation
import HTTPTypes
import HummingbirdTesting
import NottyCore
import NottyTestSupport
import Testing

@testable import NottyHTTP
@testable import NottyService

@Suite("A team's maintenance windows (PROTOCOL.md §16.4)", .timeLimit(.minutes(5)))
struct TeamWindowTests {
    @Test(
        "an owner sets the team's window; every member sees it as team.T.mute.… (preferences and change feed), the team's policy reads it; a plain member may not set it, an outsider sees nothing, a removed member loses it; only mutes, and no team. keys of one's own",
        arguments: Backend.available)
    func windows(backend: Backend) async throws {
        let harness = try await ServiceHarness(backend)
        try await harness.router { client in
            let alice = try await harness.world(client)
            let bob = try await harness.world(client, user: "bob", app: (alice.clientId, alice.clientSecret))
            let carol = try await harness.world(client, user: "carol", app: (alice.clientId, alice.clientSecret))
            try await harness.service.teams.create(name: "ops", owner: "alice")
            #expect(try await client.call(.post, "/v1/teams/ops/members", token: alice.userToken, json: #"{"user":"bob"}"#).status == .ok)
            let from = ISOTime.format(Date().addingTimeInterval(-60)), until = ISOTime.format(Date().addingTimeInterval(3600))
            let window = #"{"preferences":[{"key":"mute.app.db.example.com","value":{"from":"\#(from)","until":"\#(until)"}}]}"#

            let set = try await client.call(.patch, "/v1/teams/ops/preferences", token: alice.userToken, json: window)
            #expect(set.status == .ok, "\(set.text)")
            let teamList = try set.decode(PreferenceList.self)
            #expect(teamList.preferences.map(\.key) == ["mute.app.db.example.com"])

            // Bob, a member: he reads it, his devices get it (whole and through the change feed), he may not change it.
            let read = try await client.call(.get, "/v1/teams/ops/preferences", token: bob.userToken)
            let readList = try read.decode(PreferenceList.self)
            #expect(read.status == .ok && readList == teamList)
            let mine = try await client.call(.get, "/v1/me/preferences", token: bob.userToken).decode(PreferenceList.self)
            let seen = try #require(mine.preferences.first { $0.key == "team.ops.mute.app.db.example.com" }, "\(mine)")
            let team = UserNotification.fixture(id: "1", app: "db.example.com", priority: .high)
            var ops = team
            ops.team = "ops"
            #expect(Interruptions(preferences: [seen], now: Date()).isMuted(ops) && !Interruptions(preferences: [seen], now: Date()).isMuted(team))
            let feed = try await client.call(.get, "/v1/me/notifications/changes?limit=100", token: bob.userToken).decode(ChangesPage.self)
            #expect(feed.preferences?.contains { $0.key == seen.key } == true, "\(String(describing: feed.preferences))")
            let refused = try await client.call(.patch, "/v1/teams/ops/preferences", token: bob.userToken, json: window)
            #expect(refused.status == .forbidden && refused.text.contains("owners"), "\(refused.text)")
            // The team's escalation policy reads the team's own preferences: the window, as a mute.
            let teamId = try #require(try await harness.storage.team(name: "ops")?.id)
            #expect(try await harness.storage.preferences(userId: teamId).map(\.key) == ["mute.app.db.example.com"])

            // Carol is not in ops: nothing to read or write, and none of it in her preferences.
            #expect(try await client.call(.get, "/v1/teams/ops/preferences", token: carol.userToken).status == .notFound)
            #expect(try await client.call(.patch, "/v1/teams/ops/preferences", token: carol.userToken, json: window).status == .notFound)
            #expect(try await client.call(.get, "/v1/me/preferences", token: carol.userToken).decode(PreferenceList.self).preferences.isEmpty)

            // Only mutes, with a mute's value; nobody writes team. keys as their own.
            for body in [
                #"{"preferences":[{"key":"quiet","value":{"until":"\#(until)"}}]}"#,
                #"{"preferences":[{"key":"mute.app.x.example.com","value":{"until":5}}]}"#,
                #"{"preferences":[{"key":"mute.app.x.example.com","value":{"until":null,"strict":true}}]}"#,
            ] {
                let bad = try await client.call(.patch, "/v1/teams/ops/preferences", token: alice.userToken, json: body)
                #expect(bad.status == .badRequest, "\(body): \(bad.text)")
            }
            let spoof = try await client.call(
                .patch, "/v1/me/preferences", token: carol.userToken,
                json: #"{"preferences":[{"key":"team.ops.mute.app.db.example.com","value":{"until":null}}]}"#)
            #expect(spoof.status == .badRequest, "\(spoof.text)")

            // Lifted: null. Bob taken out of ops: the team's mutes are no longer his.
            let lift = #"{"preferences":[{"key":"mute.app.db.example.com","value":null}]}"#
            #expect(try await client.call(.patch, "/v1/teams/ops/preferences", token: alice.userToken, json: lift).status == .ok)
            let lifted = try await client.call(.get, "/v1/me/preferences", token: bob.userToken).decode(PreferenceList.self)
            #expect(lifted.preferences.first { $0.key == seen.key }?.value == .null, "\(lifted)")
            #expect(try await client.call(.patch, "/v1/teams/ops/preferences", token: alice.userToken, json: window).status == .ok)
            #expect(try await client.call(.delete, "/v1/teams/ops/members/bob", token: alice.userToken).status == .noContent)
            let gone = try await client.call(.get, "/v1/me/preferences", token: bob.userToken).decode(PreferenceList.self)
            #expect(!gone.preferences.contains { $0.key.hasPrefix("team.") }, "\(gone)")
        }
    }
}
