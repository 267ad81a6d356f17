import Foundation
import HTTPTypes
import HummingbirdTesting
import NottyCore
import NottyTestSupport
import Testing

@testable import NottyHTTP
@testable import NottyService

/// PROTOCOL.md §15's accounts: what an administrator does for years (list, reset, disable) and what a
/// user does with their own password.
@Suite("Accounts an administrator runs (PROTOCOL.md §15)", .timeLimit(.minutes(5)))
struct AccountTests {
    static func signIn(_ client: any TestClientProtocol, _ user: String, _ password: String) async throws -> Reply {
        try await client.call(.post, "/oauth2/v2.0/token", form: "grant_type=password&username=\(user)&password=\(password)")
    }

    @Test(
        "a user changes their own password: 8 characters at least, the current one checked and counted as a sign-in, the old one refused after, and --sign-out-others ends every other device but this one",
        arguments: Backend.available)
    func ownPassword(backend: Backend) async throws {
        let harness = try await ServiceHarness(backend)
        try await harness.router { client in
            let alice = try await harness.world(client)
            let phone = try #require(try await Self.signIn(client, "alice", "s3cret-alice").string("access_token"))
            func change(_ json: String, token: String = alice.userToken) async throws -> Reply {
                try await client.call(.post, "/v1/me/password", token: token, json: json)
            }
            for (json, says) in [
                (#"{"current":"s3cret-alice","new":"short"}"#, "at least 8 characters"),
                (#"{"current":"s3cret-alice"}"#, "current and new are required"),
                (#"{"current":"wrong-one","new":"n3w-password"}"#, "the current password is wrong"),
            ] {
                let refused = try await change(json)
                #expect(refused.status == .badRequest && refused.text.contains(says), "\(json): \(refused.text)")
            }
            #expect(try await harness.storage.allGuesses().contains { $0.key == "user:alice" && $0.failures == 1 }, "the wrong one was counted")
            #expect(
                try await client.call(.post, "/v1/me/password", json: #"{"current":"s3cret-alice","new":"n3w-password"}"#).status == .unauthorized)

            #expect(try await change(#"{"current":"s3cret-alice","new":"n3w-password","signOutOthers":true}"#).status == .noContent)
            #expect(try await Self.signIn(client, "alice", "s3cret-alice").status == .badRequest, "the old password still signs in")
            #expect(try await Self.signIn(client, "alice", "n3w-password").status == .ok)
            #expect(try await client.call(.get, "/v1/me", token: alice.userToken).status == .ok, "this device stays signed in")
            let other = try await client.call(.get, "/v1/me", token: phone)
            #expect(other.status == .unauthorized, "another device was not signed out: \(other.text)")
            // Without signOutOthers, the other devices stay.
            let tablet = try #require(try await Self.signIn(client, "alice", "n3w-password").string("access_token"))
            #expect(try await change(#"{"current":"n3w-password","new":"th1rd-password"}"#).status == .noContent)
            #expect(try await client.call(.get, "/v1/me", token: tablet).status == .ok)
        }
    }

    @Test(
        "the administrator lists users (not teams' feeds), resets a password (--sign-out ends every device, calendar and open doorbell within a second), and disables and enables a user (tokens refused and sign-in refused in words that say so; data kept)",
        arguments: Backend.available)
    func administrator(backend: Backend) async throws {
        let harness = try await ServiceHarness(backend)
        try await harness.live { client in
            let port = try #require(client.port)
            let alice = try await harness.world(client)
            let bob = try await harness.world(client, user: "bob", app: (alice.clientId, alice.clientSecret))
            try await harness.service.teams.create(name: "ops", owner: "alice")
            _ = try await client.call(.post, "/v1/me/subscriptions", token: bob.userToken, json: #"{"deviceName":"laptop"}"#)
            _ = try await bob.publish(client, id: "kept", title: "kept through it all")
            let admin = harness.service.admin

            let users = try await admin.users()
            #expect(users.map(\.name) == ["alice", "bob"], "\(users)")
            #expect(users[0].teams == ["ops"] && users[1].teams.isEmpty && users[1].devices == 1 && !users[1].disabled, "\(users)")
            #expect(users.allSatisfy { $0.created != nil })

            // Reset, without signing out: the old password stops, devices stay.
            await #expect(throws: ServiceError.badRequest("a password has at least 8 characters")) {
                try await admin.addUser(name: "eve", password: "7-chars")
            }
            #expect(try await admin.users().map(\.name) == ["alice", "bob"], "a user with a short password was added")
            await #expect(throws: ServiceError.self) { try await admin.setPassword(name: "bob", password: "short", signOut: false) }
            await #expect(throws: ServiceError.self) { try await admin.setPassword(name: "team/ops", password: "long enough", signOut: false) }
            try await admin.setPassword(name: "bob", password: "reset-by-admin", signOut: false)
            #expect(try await Self.signIn(client, "bob", "s3cret-bob").status == .badRequest)
            #expect(try await client.call(.get, "/v1/me", token: bob.userToken).status == .ok)

            // Reset with --sign-out: every token, device and open doorbell of bob's ends.
            let log = FrameLog()
            let doorbell = connectDoorbell(port: port, token: bob.userToken, log: log)
            defer { doorbell.cancel() }
            try await waitForConnections(harness.service, 1)
            let calendar = try await client.call(.post, "/v1/me/subscriptions", token: bob.userToken, json: #"{"platform":"ntfy"}"#)
            #expect(calendar.status == .created, "\(calendar.text)")
            let resetAt = ContinuousClock.now
            try await admin.setPassword(name: "bob", password: "reset-again", signOut: true)
            _ = try? await doorbell.value
            #expect(ContinuousClock.now - resetAt < .seconds(10), "the doorbell stayed open")
            #expect(try await client.call(.get, "/v1/me", token: bob.userToken).status == .unauthorized)
            #expect(
                try await harness.storage.subscriptions(userId: try #require(try await harness.storage.user(name: "bob")).id).allSatisfy {
                    $0.targetHostName != nil
                }, "a device, topic or calendar of bob's survived the sign-out")
            let fresh = try #require(try await Self.signIn(client, "bob", "reset-again").string("access_token"))

            // Disable: refused at once, sign-in says so (only to whoever knows the password); enable: back as it was.
            let made = try await client.call(.post, "/v1/me/subscriptions", token: fresh, json: #"{"platform":"ntfy"}"#)
            let topicURL = try #require(made.string("topicUrl"), "\(made.text)")
            let topic = String(try #require(topicURL.split(separator: "/").last))
            #expect(try await client.call(.get, "/\(topic)/json?poll=1").status == .ok)
            let open = connectDoorbell(port: port, token: fresh, log: FrameLog())
            defer { open.cancel() }
            try await waitForConnections(harness.service, 1)
            try await admin.setDisabled(name: "bob", true)
            _ = try? await open.value
            let refused = try await client.call(.get, "/v1/me", token: fresh)
            #expect(refused.status == .unauthorized && refused.text.contains("disabled"), "\(refused.text)")
            let signIn = try await Self.signIn(client, "bob", "reset-again")
            #expect(signIn.status == .badRequest && signIn.text.contains("disabled"), "\(signIn.text)")
            let guessed = try await Self.signIn(client, "bob", "a-guess")
            #expect(!guessed.text.contains("disabled"), "a guesser learned the account is disabled: \(guessed.text)")
            #expect(try await admin.users().first { $0.name == "bob" }?.disabled == true)
            #expect(try await client.call(.get, "/\(topic)/json?poll=1").status == .notFound, "a disabled user's ntfy topic still answers")
            try await admin.setDisabled(name: "bob", false)
            #expect(try await client.call(.get, "/\(topic)/json?poll=1").status == .ok)
            let back = try await client.call(.get, "/v1/me/notifications", token: fresh)
            #expect(back.status == .ok && back.text.contains("kept through it all"), "\(back.text)")
        }
    }
}
