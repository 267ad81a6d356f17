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
}
