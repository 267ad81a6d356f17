import Foundation
import NottyTestSupport
import Testing

/// `notty admin team` on the service's store and `notty team` against a real `notty serve`.
@Suite("notty team and notty admin team (PROTOCOL.md §13.1)", .timeLimit(.minutes(5)))
struct TeamCLITests {
    let home = FileManager.default.temporaryDirectory.appendingPathComponent("notty-team-\(UUID().uuidString)")

    @Test(
        "the administrator makes ops with alice as owner; alice adds bob, bob sees it (words and --json) but may not add; bob leaves; every refusal is one line"
    )
    func teams() async throws {
        defer { try? FileManager.default.removeItem(at: home) }
        let serve = try await ServeProcess(directory: home.appendingPathComponent("service"))
        defer { serve.stop() }
        let bobAdded = try await serve.admin.run(["admin", "user", "add", "bob"], input: "s3cret-pw\n")
        #expect(bobAdded.status == 0, "\(bobAdded.err)")
        let made = try await serve.admin.run(["admin", "team", "add", "ops", "--owner", "alice"])
        #expect(made.status == 0 && made.out.hasPrefix("added team ops (owner alice)"), "\(made.err)")
        for (arguments, says) in [
            (["admin", "team", "add", "ops", "--owner", "bob"], "a team named ops already exists"),
            (["admin", "team", "add", "Ops!", "--owner", "bob"], "lowercase letters, digits and hyphens"),
            (["admin", "team", "add", "web", "--owner", "zed"], "no user named zed"),
            (["admin", "team", "remove", "web"], "no team named web"),
        ] {
            let refused = try await serve.admin.run(arguments)
            #expect(
                refused.status == 1 && refused.err.contains(says) && refused.err.split(separator: "\n").count == 1, "\(arguments): \(refused.err)")
        }

        let alice = NottyCLI(home: home.appendingPathComponent("alice"))
        try await alice.login(serve.url)
        let bob = NottyCLI(home: home.appendingPathComponent("bob"))
        let signedIn = try await bob.run(["login", serve.url, "--user", "bob", "--password-stdin"], input: "s3cret-pw\n")
        #expect(signedIn.status == 0, "\(signedIn.err)")

        let none = try await bob.run(["team"])
        #expect(none.status == 0 && none.out.hasPrefix("you are in no team"), "\(none.out) \(none.err)")
        let added = try await alice.run(["team", "ops", "--add", "bob"])
        #expect(added.status == 0 && added.out == "bob is a member of ops\n", "\(added.err)")
        let listed = try await bob.run(["team", "--list"])
        #expect(listed.out == "ops  alice (owner), bob\n", "\(listed.out) \(listed.err)")
        let json = try await bob.run(["team", "ops", "--json"])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.out.utf8)) as? [String: Any], "\(json.out)")
        #expect(object["name"] as? String == "ops")
        #expect((object["members"] as? [[String: Any]])?.map { $0["role"] as? String } == ["owner", "member"])

        let notOwner = try await bob.run(["team", "ops", "--add", "alice", "--owner"])
        #expect(
            notOwner.status == 1 && notOwner.err.hasSuffix("(403 forbidden): only the owners of ops (alice) add and remove its members\n")
                && notOwner.err.split(separator: "\n").count == 1, "\(notOwner.err)")
        let lastOwner = try await alice.run(["team", "ops", "--remove", "alice"])
        #expect(lastOwner.status == 1 && lastOwner.err.contains("last owner of ops"), "\(lastOwner.err)")
        let unknown = try await alice.run(["team", "nope"])
        #expect(unknown.status == 1 && unknown.err.contains("no team named nope that you are in"), "\(unknown.err)")
        let badName = try await alice.run(["team", "Nope", "--add", "bob"])
        #expect(badName.status != 0 && badName.err.contains("lowercase letters") && !badName.err.contains("USAGE"), "\(badName.err)")
        let ownerAlone = try await alice.run(["team", "ops", "--owner"])
        #expect(ownerAlone.status != 0 && ownerAlone.err.contains("--owner goes with --add"), "\(ownerAlone.err)")

        // Alice subscribes the app for the team; its publish reaches bob too, and his dismiss is hers.
        let uns = try await alice.run(["subscribe", "--app", "ci.example.com", "--team", "ops"])
        #expect(uns.status == 0, "\(uns.err)")
        let notTheirs = try await bob.run(["subscribe", "--app", "ci.example.com", "--team", "ops"])
        #expect(notTheirs.status == 1 && notTheirs.err.contains("only the owners of ops subscribe apps for it"), "\(notTheirs.err)")
        let published = try await alice.run([
            "publish", "--server", serve.url, "--client-id", serve.clientId, "--client-secret=\(serve.clientSecret)",
            "--uns-id", uns.out.trimmingCharacters(in: .whitespacesAndNewlines), "--title", "Disk full on db1",
        ])
        #expect(published.status == 0, "\(published.err)")
        let id = published.out.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(try await bob.run(["sync"]).status == 0)
        #expect(try await bob.run(["list", "--json"]).out.contains(id))
        let dismissed = try await bob.run(["dismiss", id])
        #expect(dismissed.status == 0, "\(dismissed.err)")
        #expect(try await bob.run(["sync"]).status == 0)
        #expect(try await alice.run(["sync"]).status == 0)
        #expect(try await alice.run(["list", "--view", "dismissed", "--json"]).out.contains(id), "bob's dismiss is alice's")
        #expect(try await !alice.run(["list", "--json"]).out.contains(id))
        // Alice's device says whose it is and who handled it, in words and in JSON.
        let shown = try await alice.run(["show", id])
        #expect(shown.out.contains("team:        ops\n") && shown.out.contains("handled:     dismissed by bob on "), "\(shown.out)")
        let shownJSON = try await alice.run(["show", id, "--json"])
        #expect(shownJSON.out.contains(#""team":"ops""#) && shownJSON.out.contains(#""user":"bob""#), "\(shownJSON.out)")

        let left = try await bob.run(["team", "ops", "--remove", "bob"])
        #expect(left.status == 0 && left.out == "bob left ops\n", "\(left.err)")
        #expect(try await bob.run(["team"]).out.hasPrefix("you are in no team"))
        // Bob's device resyncs (his history starts after leaving) and the team's notification is gone from it.
        #expect(try await bob.run(["sync"]).status == 0)
        #expect(try await !bob.run(["list", "--view", "all", "--json"]).out.contains(id))
        let all = try await serve.admin.run(["admin", "team", "list"])
        #expect(all.out == "ops  alice (owner)\n", "\(all.out) \(all.err)")
        #expect(try await serve.admin.run(["admin", "team", "remove", "ops"]).out == "removed team ops\n")
        #expect(try await alice.run(["team"]).out.hasPrefix("you are in no team"))
    }

    @Test(
        "a team's hook is the team's (PROTOCOL.md §15): made by alice, listed and revoked by bob once he is an owner and alice is gone; a plain member may not list them"
    )
    func teamHooks() async throws {
        defer { try? FileManager.default.removeItem(at: home) }
        let serve = try await ServeProcess(directory: home.appendingPathComponent("service"))
        defer { serve.stop() }
        #expect(try await serve.admin.run(["admin", "user", "add", "bob"], input: "s3cret-pw\n").status == 0)
        #expect(try await serve.admin.run(["admin", "user", "add", "carol"], input: "s3cret-pw\n").status == 0)
        #expect(try await serve.admin.run(["admin", "team", "add", "ops", "--owner", "alice"]).status == 0)
        let alice = NottyCLI(home: home.appendingPathComponent("alice"))
        try await alice.login(serve.url)
        let bob = NottyCLI(home: home.appendingPathComponent("bob")), carol = NottyCLI(home: home.appendingPathComponent("carol"))
        #expect(try await bob.run(["login", serve.url, "--user", "bob", "--password-stdin"], input: "s3cret-pw\n").status == 0)
        #expect(try await carol.run(["login", serve.url, "--user", "carol", "--password-stdin"], input: "s3cret-pw\n").status == 0)
        #expect(try await alice.run(["team", "ops", "--add", "bob", "--owner"]).status == 0)
        #expect(try await alice.run(["team", "ops", "--add", "carol"]).status == 0)
        let hook = try await alice.run(["subscribe", "--app", "ci.example.com", "--webhook", "--team", "ops"])
        let url = hook.out.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(hook.status == 0 && url.contains("/v1/hooks/"), "\(hook.err)")
        #expect(try await bob.run(["team", "ops", "--remove", "alice"]).status == 0)

        let listed = try await bob.run(["team", "ops", "--apps"])
        let line = try #require(listed.out.split(separator: "\n").first { $0.contains("hook  ci.example.com") }, "\(listed.out) \(listed.err)")
        let id = String(line.prefix { $0 != " " })
        let refused = try await carol.run(["team", "ops", "--apps"])
        #expect(refused.status == 1 && refused.err.contains("only the owners of ops"), "\(refused.err)")
        let revoked = try await bob.run(["team", "ops", "--revoke", id])
        #expect(revoked.status == 0 && revoked.out == "revoked \(id) of ops\n", "\(revoked.err)")
        let posted = try await Repository.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "-d", "after", url])
        #expect(posted.output == "404", "the revoked hook answered \(posted.output)")
        #expect(try await bob.run(["team", "ops", "--apps"]).out.contains("no app subscriptions or hooks"))
    }
}
