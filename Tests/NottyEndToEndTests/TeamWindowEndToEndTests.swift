import Foundation
import NottyTestSupport
import Testing

/// A team's maintenance windows (PROTOCOL.md §16.4) with real processes: `notty serve`, the team's
/// owner and a member through the real `notty`.
@Suite("A team's maintenance windows end to end", .timeLimit(.minutes(5)), .serialized)
struct TeamWindowEndToEndTests {
    let home = FileManager.default.temporaryDirectory.appendingPathComponent("notty-team-window-\(UUID().uuidString)")

    @Test(
        "notty mute --team: the owner's window reaches the member's device (mute --list, --json) and unmute --team lifts it there; a plain member and an outsider are refused with one line"
    )
    func teamWindow() async throws {
        defer { try? FileManager.default.removeItem(at: home) }
        let serve = try await ServeProcess(directory: home.appendingPathComponent("service"))
        defer { serve.stop() }
        for user in ["bob", "carol"] {
            #expect(try await serve.admin.run(["admin", "user", "add", user], input: "s3cret-pw\n").status == 0)
        }
        #expect(try await serve.admin.run(["admin", "team", "add", "ops", "--owner", "alice"]).status == 0)
        let alice = NottyCLI(home: home.appendingPathComponent("alice"))
        try await alice.login(serve.url, device: "laptop")
        var devices: [String: NottyCLI] = [:]
        for user in ["bob", "carol"] {
            let cli = NottyCLI(home: home.appendingPathComponent(user))
            let signedIn = try await cli.run(["login", serve.url, "--user", user, "--password-stdin", "--device", "phone"], input: "s3cret-pw\n")
            #expect(signedIn.status == 0, "\(signedIn.err)")
            devices[user] = cli
        }
        let (bob, carol) = (devices["bob"]!, devices["carol"]!)
        #expect(try await alice.run(["team", "ops", "--add", "bob"]).status == 0)

        let window = ["--app", "db.example.com", "--team", "ops", "--from", "2099-12-24 18:00", "--until", "2099-12-27 09:00"]
        let made = try await alice.run(["mute"] + window)
        #expect(made.status == 0 && made.out.contains("muted app db.example.com for team ops from "), "\(made.out) \(made.err)")
        // The member's device gets it with its next sync, marked as the team's.
        #expect(try await bob.run(["sync"]).status == 0)
        let listed = try await bob.run(["mute", "--list"])
        #expect(listed.status == 0 && listed.out.hasPrefix("app db.example.com (team ops) from "), "\(listed.out) \(listed.err)")
        let json = try await bob.run(["mute", "--list", "--json"])
        #expect(json.out.contains(#""team":"ops""#) && json.out.contains(#""app":"db.example.com""#), "\(json.out)")

        let notOwner = try await bob.run(["mute"] + window)
        #expect(notOwner.status != 0 && notOwner.err.contains("only the owners of ops"), "\(notOwner.err)")
        #expect(notOwner.err.split(separator: "\n").count == 1, "one line: \(notOwner.err)")
        let outsider = try await carol.run(["unmute", "--app", "db.example.com", "--team", "ops"])
        #expect(outsider.status != 0 && outsider.err.contains("no team named ops"), "\(outsider.err)")

        let lifted = try await alice.run(["unmute", "--app", "db.example.com", "--team", "ops"])
        #expect(lifted.status == 0 && lifted.out.contains("unmuted app db.example.com for team ops"), "\(lifted.out) \(lifted.err)")
        #expect(try await bob.run(["sync"]).status == 0)
        #expect(try await bob.run(["mute", "--list"]).out.isEmpty)
    }
}
