import Foundation
import HTTPTypes
import NottyCore
import NottyTestSupport
import Testing

@testable import NottyHTTP
@testable import NottyService
@testable import NottyServicePostgres
@testable import NottyServiceSQLite

@Suite("Teams and their members (PROTOCOL.md §13.1)", .timeLimit(.minutes(5)))
struct TeamTests {
    @Test(
        "the administrator makes a team with an owner; owners add members and owners, a member may only read and leave, a team keeps an owner, and an outsider sees no team",
        arguments: Backend.available)
    func membership(backend: Backend) async throws {
        let harness = try await ServiceHarness(backend)
        try await harness.router { client in
            let alice = try await harness.world(client)
            let bob = try await harness.world(client, user: "bob", host: "b.example.com")
            let carol = try await harness.world(client, user: "carol", host: "c.example.com")
            let made = try await harness.service.teams.create(name: "ops", owner: "alice")
            #expect(made.members.map(\.user) == ["alice"] && made.members[0].role == .owner)

            func teams(_ world: World) async throws -> [Team] {
                try await client.call(.get, "/v1/me/teams", token: world.userToken).decode(TeamList.self).value
            }
            func add(_ user: String, role: String = "member", by world: World) async throws -> Reply {
                try await client.call(.post, "/v1/teams/ops/members", token: world.userToken, json: #"{"user":"\#(user)","role":"\#(role)"}"#)
            }
            #expect(try await teams(alice).map(\.name) == ["ops"])
            #expect(try await teams(bob).isEmpty)
            // An outsider is told there is no such team, for reading and for changing alike.
            #expect(try await client.call(.get, "/v1/teams/ops", token: bob.userToken).status == .notFound)
            #expect(try await add("bob", by: bob).status == .notFound)

            // A name holding U+0000 is refused, not read up to it (SQLite's text ends there: bob).
            let nul = try await add("bob\\u0000zzz", role: "owner", by: alice)
            #expect(nul.status == .badRequest && nul.text.contains("U+0000"), "\(nul.text)")
            #expect(try await teams(bob).isEmpty)

            // The owner adds bob as a member: both see the team, owners first.
            let added = try await add("bob", by: alice)
            #expect(added.status == .ok, "\(added.text)")
            let team = try added.decode(Team.self)
            #expect(team.members.map(\.user) == ["alice", "bob"] && team.role(of: "bob") == .member)
            #expect(try await teams(bob).map(\.name) == ["ops"])
            #expect(try await client.call(.get, "/v1/teams/ops", token: bob.userToken).decode(Team.self) == team)

            // A member who is not an owner may not add or remove anyone: 403, naming the owners.
            let refused = try await add("carol", by: bob)
            #expect(refused.status == .forbidden && refused.text.contains("alice"), "\(refused.text)")
            #expect(try await client.call(.delete, "/v1/teams/ops/members/alice", token: bob.userToken).status == .forbidden)
            #expect(try await teams(carol).isEmpty, "nothing was written")

            // The last owner cannot leave or step down; with a second owner, she can.
            let lastOwner = try await client.call(.delete, "/v1/teams/ops/members/alice", token: alice.userToken)
            #expect(lastOwner.status == .badRequest && lastOwner.text.contains("last owner"), "\(lastOwner.text)")
            #expect(try await add("alice", role: "member", by: alice).status == .badRequest)
            #expect(try await add("bob", role: "owner", by: alice).status == .ok)
            #expect(try await add("alice", role: "member", by: alice).status == .ok, "another owner: alice may step down")
            #expect(try await client.call(.get, "/v1/teams/ops", token: alice.userToken).decode(Team.self).role(of: "alice") == .member)
            // Bob, an owner now, adds carol; alice leaves by herself.
            #expect(try await add("carol", by: bob).status == .ok)
            #expect(try await client.call(.delete, "/v1/teams/ops/members/alice", token: alice.userToken).status == .noContent)
            #expect(try await teams(alice).isEmpty)
            #expect(try await client.call(.get, "/v1/teams/ops", token: carol.userToken).decode(Team.self).members.map(\.user) == ["bob", "carol"])

            // Unknown users and teams are 404s that say which; a bad body is a 400 that says what to send.
            let nobody = try await add("zed", by: bob)
            #expect(nobody.status == .notFound && nobody.text.contains("no user named zed"), "\(nobody.text)")
            #expect(try await client.call(.get, "/v1/teams/nope", token: bob.userToken).status == .notFound)
            #expect(try await client.call(.delete, "/v1/teams/ops/members/alice", token: bob.userToken).status == .notFound)
            for body in [#"{"user":"carol","role":"boss"}"#, #"{"role":"owner"}"#, #"{"user":"carol","colour":"red"}"#, "[1]", "{"] {
                let bad = try await client.call(.post, "/v1/teams/ops/members", token: bob.userToken, json: body)
                #expect(bad.status == .badRequest, "\(body): \(bad.status) \(bad.text)")
            }
            #expect(try await client.call(.get, "/v1/me/teams").status == .unauthorized)

            // The administrator's refusals: a taken or ill-formed name, an unknown owner.
            for (name, owner, says) in [
                ("ops", "carol", "already exists"), ("Ops", "carol", "lowercase"), (String(repeating: "a", count: 41), "carol", "lowercase"),
                ("-ops", "carol", "lowercase"), ("web", "zed", "no user named zed"),
            ] {
                await #expect(throws: ServiceError.self, "\(name)") { try await harness.service.teams.create(name: name, owner: owner) }
                do {
                    try await harness.service.teams.create(name: name, owner: owner)
                } catch let error as ServiceError {
                    #expect(error.message.contains(says), "\(name): \(error.message)")
                }
            }
            #expect(try await harness.service.teams.all().map(\.name) == ["ops"])
            // A user who is a team's last owner is not removed with their account; removing the team frees them.
            await #expect(throws: ServiceError.self) { try await harness.service.admin.removeUser(name: "bob") }
            #expect(try await harness.service.teams.remove(name: "ops"))
            #expect(try await !harness.service.teams.remove(name: "ops"))
            #expect(try await teams(carol).isEmpty)
            #expect(try await harness.service.admin.removeUser(name: "bob"))
        }
    }

    @Test(
        "a team's limits: members a team may have, teams a user may be in; two owners stepping down at once leave one owner",
        arguments: Backend.available)
    func limitsAndRaces(backend: Backend) async throws {
        let harness = try await ServiceHarness(backend)
        let teams = Teams(core: harness.service.core, storage: harness.storage, limits: TeamLimits(teamsPerUser: 2, membersPerTeam: 3))
        for name in ["alice", "bob", "carol", "dave"] { try await harness.service.admin.addUser(name: name, password: "s3cret-pw") }
        let alice = try #require(try await harness.storage.user(name: "alice"))
        func user(_ name: String) async throws -> String { try #require(try await harness.storage.user(name: name)).id }
        try await teams.create(name: "ops", owner: "alice")
        let limits = TeamLimits(teamsPerUser: 2, membersPerTeam: 3)
        #expect(try await harness.storage.setTeamMember(team: "ops", userId: user("bob"), role: .owner, at: Date(), limits: limits) == .done)
        #expect(try await harness.storage.setTeamMember(team: "ops", userId: user("carol"), role: .member, at: Date(), limits: limits) == .done)
        #expect(try await harness.storage.setTeamMember(team: "ops", userId: user("dave"), role: .member, at: Date(), limits: limits) == .teamFull)
        #expect(try await harness.storage.setTeamMember(team: "gone", userId: user("dave"), role: .member, at: Date(), limits: limits) == .noTeam)
        try await teams.create(name: "web", owner: "alice")
        await #expect(throws: ServiceError.self, "a third team for alice") { try await teams.create(name: "db", owner: "alice") }
        try await teams.create(name: "db", owner: "dave")
        #expect(try await harness.storage.setTeamMember(team: "db", userId: alice.id, role: .member, at: Date(), limits: limits) == .tooManyTeams)

        // Alice and Bob, both owners of ops, step down at once many times over: one owner is always left.
        for _ in 0..<5 {
            async let a = harness.storage.setTeamMember(team: "ops", userId: alice.id, role: .member, at: Date(), limits: limits)
            async let b = harness.storage.setTeamMember(team: "ops", userId: user("bob"), role: .member, at: Date(), limits: limits)
            let outcomes = try await [a, b]
            #expect(outcomes.sorted { "\($0)" < "\($1)" } == [.done, .lastOwner], "\(outcomes)")
            let owners = try #require(try await harness.storage.team(name: "ops")).members.filter { $0.role == .owner }
            #expect(owners.count == 1)
            for owner in [alice.id, try await user("bob")] {
                _ = try await harness.storage.setTeamMember(team: "ops", userId: owner, role: .owner, at: Date(), limits: limits)
            }
        }
    }
}
