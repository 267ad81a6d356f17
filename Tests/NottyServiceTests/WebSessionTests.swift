import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NottyCore
import Testing

@testable import NottyService

/// The browser's session routes (PROTOCOL.md §14) as a client that is not a browser meets them.
@Suite("The web session")
struct WebSessionTests {
    @Test(
        "signing out with a bearer token ends that token even when its device never registered; a sign-in from another Origin is 403; a name holding U+0000 is 400",
        arguments: Backend.available)
    func signOut(backend: Backend) async throws {
        let harness = try await ServiceHarness(backend)
        try await harness.router { client in
            _ = try await harness.world(client)
            let signedIn = try await client.call(.post, "/oauth2/v2.0/token", form: "grant_type=password&username=alice&password=s3cret-alice")
            let token = try #require(signedIn.string("access_token"), "\(signedIn.text)")
            #expect(try await client.call(.get, "/v1/me", token: token).status == .ok)
            let out = try await client.call(.delete, "/v1/web/session", token: token)
            #expect(out.status == .noContent, "\(out.text)")
            #expect(out.headers[.setCookie]?.contains("Max-Age=0") == true)
            #expect(try await client.call(.get, "/v1/me", token: token).status == .unauthorized, "the token ended with the session")

            let elsewhere = try await client.call(
                .post, "/v1/web/session", json: #"{"username":"alice","password":"s3cret-alice"}"#, headers: ["Origin": "https://evil.example"])
            #expect(elsewhere.status == .forbidden, "\(elsewhere.text)")
            let nul = try await client.call(
                .post, "/v1/web/session", json: #"{"username":"alice\u0000x","password":"s3cret-alice"}"#, headers: ["Sec-Fetch-Site": "same-origin"])
            #expect(nul.status == .badRequest && nul.text.contains("U+0000"), "\(nul.text)")
        }
    }

    @Test(
        "a one-time sign-in link signs a browser in once, as its user, within 60 s: a second use, a late one, a revoked device's, a disabled user's and another Origin's are refused; an app's token makes none",
        arguments: Backend.available)
    func signInLink(backend: Backend) async throws {
        let clock = ManualClock()
        let harness = try await ServiceHarness(backend, clock: clock)
        try await harness.router { client in
            let alice = try await harness.world(client)
            let bob = try await harness.world(client, user: "bob", host: "bob.example.com")
            let sameOrigin = ["Sec-Fetch-Site": "same-origin"]
            func link(_ token: String) async throws -> String {
                let made = try await client.call(.post, "/v1/web/signin-links", token: token, json: "{}")
                #expect(made.status == .created && made.headers[.cacheControl] == "no-store", "\(made.text)")
                let token = try #require(made.string("token"), "\(made.text)")
                #expect(made.string("path") == "/#signin=" + token && made["expiresIn"] == .number(60))
                return token
            }
            func exchange(_ token: String, headers: [String: String] = ["Sec-Fetch-Site": "same-origin"]) async throws -> Reply {
                try await client.call(.post, "/v1/web/session/link", json: #"{"token":"\#(token)","deviceName":"phone browser"}"#, headers: headers)
            }

            // Used once: a session of alice's own, a device of its own; the second use is refused.
            let first = try await link(alice.userToken)
            let session = try await exchange(first)
            #expect(session.status == .created && session.string("user") == "alice", "\(session.text)")
            let cookie = try #require(session.headers[.setCookie], "\(session.text)")
            #expect(cookie.hasPrefix("notty_session=") && cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"))
            let cookieToken = String(cookie.dropFirst("notty_session=".count).prefix { $0 != ";" })
            let me = try await client.call(.get, "/v1/me", headers: ["Cookie": "notty_session=\(cookieToken)"])
            #expect(me.status == .ok && me.string("userName") == "alice", "\(me.text)")
            let devices = try await client.call(.get, "/v1/me/subscriptions", token: alice.userToken)
            #expect(devices.text.contains("phone browser"), "\(devices.text)")
            let again = try await exchange(first)
            #expect(again.status == .badRequest && again.text.contains("used already or is older than 60 s"), "\(again.text)")
            // The link is not a bearer token, and bob's link signs in bob, not alice.
            #expect(try await client.call(.get, "/v1/me", token: first).status == .unauthorized)
            let bobs = try await exchange(try await link(bob.userToken))
            #expect(bobs.status == .created && bobs.string("user") == "bob", "\(bobs.text)")

            // Late: 61 s after it was made.
            let late = try await link(alice.userToken)
            clock.advance(by: 61)
            #expect(try await exchange(late).status == .badRequest)
            // From another site, or with nothing saying where from: 403, and the link is not used up.
            let kept = try await link(alice.userToken)
            #expect(try await exchange(kept, headers: ["Origin": "https://evil.example"]).status == .forbidden)
            #expect(try await exchange(kept, headers: [:]).status == .forbidden)
            #expect(try await exchange(kept).status == .created)
            // Unknown, empty, or not a string: words, not a session.
            #expect(try await exchange("no-such-link").status == .badRequest)
            let typed = try await client.call(.post, "/v1/web/session/link", json: #"{"token":5}"#, headers: sameOrigin)
            #expect(typed.status == .badRequest, "\(typed.text)")
            // An app's token makes no link (a link is a user's).
            #expect(try await client.call(.post, "/v1/web/signin-links", token: alice.appToken, json: "{}").status == .unauthorized)

            // A link made by a device that is then revoked is dead with it.
            let signedIn = try await client.call(.post, "/oauth2/v2.0/token", form: "grant_type=password&username=alice&password=s3cret-alice")
            let laptop = try #require(signedIn.string("access_token"))
            let registered = try await client.call(
                .post, "/v1/me/subscriptions", token: laptop, json: #"{"deviceName":"laptop","platform":"websocket"}"#)
            let laptopId = try #require(registered.string("userNotificationSubscriptionId"), "\(registered.text)")
            let orphan = try await link(laptop)
            #expect(try await client.call(.delete, "/v1/me/subscriptions/\(laptopId)", token: alice.userToken).status == .noContent)
            #expect(try await exchange(orphan).status == .badRequest, "a revoked device's link still signs in")
            // A disabled user's link is refused with words.
            let disabled = try await link(alice.userToken)
            try await harness.service.admin.setDisabled(name: "alice", true)
            let refused = try await exchange(disabled)
            #expect(refused.status == .badRequest && refused.text.contains("disabled"), "\(refused.text)")
        }
    }
}
