import Foundation
import NottyTestSupport
import Testing

/// PROTOCOL.md §15's accounts through the real programs: `notty admin user list|password|disable|enable`
/// on the service's store beside a running `notty serve`, and `notty password` on a device.
@Suite("notty admin user and notty password (PROTOCOL.md §15)", .timeLimit(.minutes(5)))
struct AccountCLITests {
    let home = FileManager.default.temporaryDirectory.appendingPathComponent("notty-accounts-\(UUID().uuidString)")

    @Test(
        "a user changes their password from a device (others signed out); the administrator lists users, disables and enables one, and resets a forgotten password with --sign-out; every refusal is one line"
    )
    func accounts() async throws {
        defer { try? FileManager.default.removeItem(at: home) }
        let serve = try await ServeProcess(directory: home.appendingPathComponent("service"))
        defer { serve.stop() }
        let laptop = NottyCLI(home: home.appendingPathComponent("laptop")), phone = NottyCLI(home: home.appendingPathComponent("phone"))
        try await laptop.login(serve.url, device: "laptop")
        try await phone.login(serve.url, device: "phone")

        // The user's own: too short, wrong current, then right with --sign-out-others.
        for (input, says) in [("s3cret-pw\nshort\n", "at least 8 characters"), ("wrong\nlong-enough-1\n", "the current password is wrong")] {
            let refused = try await laptop.run(["password", "--password-stdin"], input: input)
            #expect(refused.status == 1 && refused.err.contains(says) && refused.err.split(separator: "\n").count == 1, "\(refused.err)")
        }
        let changed = try await laptop.run(["password", "--password-stdin", "--sign-out-others"], input: "s3cret-pw\nlong-enough-1\n")
        #expect(changed.status == 0 && changed.out.contains("password changed"), "\(changed.err)")
        #expect(try await laptop.run(["sync"]).status == 0, "this device stays signed in")
        let phoneAfter = try await phone.run(["sync"])
        #expect(phoneAfter.status != 0, "the phone was not signed out: \(phoneAfter.out)")

        // The administrator's: list (words and JSON), disable, enable.
        let listed = try await serve.admin.run(["admin", "user", "list"])
        #expect(listed.status == 0 && listed.out.hasPrefix("alice  active  made "), "\(listed.out) \(listed.err)")
        let json = try await serve.admin.run(["admin", "user", "list", "--json"])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.out.utf8)) as? [String: Any], "\(json.out)")
        #expect(object["name"] as? String == "alice" && object["disabled"] as? Bool == false && object["devices"] as? Int == 1, "\(object)")
        #expect(try await serve.admin.run(["admin", "user", "disable", "alice"]).status == 0)
        let disabled = try await laptop.run(["sync"])
        #expect(disabled.status != 0 && disabled.err.contains("disabled"), "\(disabled.err)")
        #expect(try await serve.admin.run(["admin", "user", "list", "--json"]).out.contains(#""disabled":true"#))
        #expect(try await serve.admin.run(["admin", "user", "enable", "alice"]).status == 0)
        #expect(try await laptop.run(["sync"]).status == 0, "enabled again, the device's tokens are taken")

        // Forgotten: the administrator sets a new one from standard input and signs alice out everywhere.
        let short = try await serve.admin.run(["admin", "user", "password", "alice"], input: "short\n")
        #expect(short.status == 1 && short.err.contains("at least 8 characters"), "\(short.err)")
        let unknown = try await serve.admin.run(["admin", "user", "password", "zed"], input: "long-enough-2\n")
        #expect(unknown.status == 1 && unknown.err.contains("no user named zed"), "\(unknown.err)")
        let reset = try await serve.admin.run(["admin", "user", "password", "alice", "--sign-out"], input: "long-enough-2\n")
        #expect(reset.status == 0 && reset.out.contains("signed out everywhere"), "\(reset.err)")
        #expect(try await laptop.run(["sync"]).status != 0, "the laptop was not signed out")
        let again = try await laptop.run(["login", serve.url, "--user", "alice", "--password-stdin"], input: "long-enough-2\n")
        #expect(again.status == 0, "\(again.err)")
    }
}
