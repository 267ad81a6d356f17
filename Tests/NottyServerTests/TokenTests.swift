import Foundation
import HTTPTypes
import NottyCore
import Testing
@testable import NottyServer

@Suite("Tokens (SPEC §2.1)", .timeLimit(.minutes(5)))
struct TokenTests {
    @Test("Refresh rotates: the new pair works, the old refresh token stops working", arguments: Backend.available)
    func refreshRotation(backend: Backend) async throws {
        let harness = try await Harness(backend)
        try await harness.router { client in
            let world = try await harness.world(client)
            let refreshed = try await client.call(.post, "/oauth2/v2.0/token", form: "grant_type=refresh_token&refresh_token=\(world.refreshToken)")
            #expect(refreshed.status == .ok)
            #expect(refreshed.string("token_type") == "Bearer")
            #expect(refreshed.headers[.cacheControl] == "no-store")
            let access = try #require(refreshed.string("access_token"))
            #expect(try await client.call(.get, "/v1/me", token: access).string("userName") == "alice")
            let reused = try await client.call(.post, "/oauth2/v2.0/token", form: "grant_type=refresh_token&refresh_token=\(world.refreshToken)")
            #expect(reused.status == .badRequest)
            #expect(reused.string("error") == "invalid_grant")
        }
    }

    @Test("OAuth errors follow RFC 6749", arguments: Backend.available)
    func oauthErrors(backend: Backend) async throws {
        let harness = try await Harness(backend)
        try await harness.router { client in
            let world = try await harness.world(client)
            let wrongPassword = try await client.call(.post, "/oauth2/v2.0/token", form: "grant_type=password&username=alice&password=nope")
            #expect(wrongPassword.status == .badRequest)
            #expect(wrongPassword.string("error") == "invalid_grant")
            let unknownUser = try await client.call(.post, "/oauth2/v2.0/token", form: "grant_type=password&username=zed&password=nope")
            #expect(unknownUser.string("error") == "invalid_grant")
            let wrongSecret = try await client.call(.post, "/contoso/oauth2/v2.0/token", form: "grant_type=client_credentials&client_id=\(world.clientId)&client_secret=bad")
            #expect(wrongSecret.status == .unauthorized)
            #expect(wrongSecret.string("error") == "invalid_client")
            let grant = try await client.call(.post, "/oauth2/v2.0/token", form: "grant_type=implicit")
            #expect(grant.string("error") == "unsupported_grant_type")
            let tenant = try await client.call(.post, "/contoso/oauth2/v2.0/token", form: "grant_type=client_credentials&client_id=\(world.clientId)&client_secret=\(world.clientSecret)")
            #expect(tenant.status == .ok)
            #expect(tenant["expires_in"] == .number(3600))
            #expect(tenant["refresh_token"] == nil)
        }
    }

    @Test("Expired and revoked access tokens get 401", arguments: Backend.available)
    func expiredAndRevoked(backend: Backend) async throws {
        let clock = ManualClock()
        let harness = try await Harness(backend, clock: clock)
        try await harness.router { client in
            let world = try await harness.world(client)
            #expect(try await client.call(.get, "/v1/me", token: world.userToken).status == .ok)
            clock.advance(by: 3601)
            let expired = try await client.call(.get, "/v1/me", token: world.userToken)
            #expect(expired.status == .unauthorized)
            #expect(expired.errorCode == "unauthenticated")
            // The refresh token still works and gives a working access token.
            let refreshed = try await client.call(.post, "/oauth2/v2.0/token", form: "grant_type=refresh_token&refresh_token=\(world.refreshToken)")
            let access = try #require(refreshed.string("access_token"))
            #expect(try await client.call(.get, "/v1/me", token: access).status == .ok)
            let revoked = try await client.call(.post, "/oauth2/v2.0/revoke", form: "token=\(access)")
            #expect(revoked.status == .ok)
            #expect(try await client.call(.get, "/v1/me", token: access).status == .unauthorized)
        }
    }

    @Test("Tokens and client secrets are stored only as hashes; passwords with bcrypt", arguments: Backend.available)
    func storedHashed(backend: Backend) async throws {
        let harness = try await Harness(backend)
        try await harness.router { client in
            let world = try await harness.world(client)
            #expect(try await harness.storage.token(hash: world.userToken) == nil)
            #expect(try await harness.storage.token(hash: Secrets.tokenHash(world.userToken)) != nil)
            let app = try #require(try await harness.storage.app(clientId: world.clientId))
            #expect(app.secretHash != world.clientSecret)
            let user = try #require(try await harness.storage.user(name: "alice"))
            #expect(user.passwordHash.hasPrefix("$2"))
        }
    }
}
