import Foundation
import HTTPTypes
import NottyCore
import Testing

@testable import NottyHTTP
@testable import NottySecrets
@testable import NottyService
@testable import NottyServicePostgres
@testable import NottyServiceSQLite

@Suite("Tokens (PROTOCOL.md §2.1)", .timeLimit(.minutes(5)))
struct TokenTests {
    @Test("Refresh rotates: the new pair works, the old refresh token stops working", arguments: Backend.available)
    func refreshRotation(backend: Backend) async throws {
        let harness = try await ServiceHarness(backend)
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
        let harness = try await ServiceHarness(backend)
        try await harness.router { client in
            let world = try await harness.world(client)
            let wrongPassword = try await client.call(.post, "/oauth2/v2.0/token", form: "grant_type=password&username=alice&password=nope")
            #expect(wrongPassword.status == .badRequest)
            #expect(wrongPassword.string("error") == "invalid_grant")
            let unknownUser = try await client.call(.post, "/oauth2/v2.0/token", form: "grant_type=password&username=zed&password=nope")
            #expect(unknownUser.string("error") == "invalid_grant")
            let wrongSecret = try await client.call(
                .post, "/contoso/oauth2/v2.0/token", form: "grant_type=client_credentials&client_id=\(world.clientId)&client_secret=bad")
            #expect(wrongSecret.status == .unauthorized)
            #expect(wrongSecret.string("error") == "invalid_client")
            // A name holding U+0000 is refused (a store would read it up to there: alice).
            let nul = try await client.call(.post, "/oauth2/v2.0/token", form: "grant_type=password&username=alice%00zz&password=s3cret-alice")
            #expect(nul.status == .badRequest && nul.string("error") == "invalid_request", "\(nul.text)")
            let grant = try await client.call(.post, "/oauth2/v2.0/token", form: "grant_type=implicit")
            #expect(grant.string("error") == "unsupported_grant_type")
            let tenant = try await client.call(
                .post, "/contoso/oauth2/v2.0/token",
                form: "grant_type=client_credentials&client_id=\(world.clientId)&client_secret=\(world.clientSecret)")
            #expect(tenant.status == .ok)
            #expect(tenant["expires_in"] == .number(3600))
            #expect(tenant["refresh_token"] == nil)
        }
    }

    @Test("Expired and revoked access tokens get 401", arguments: Backend.available)
    func expiredAndRevoked(backend: Backend) async throws {
        let clock = ManualClock()
        let harness = try await ServiceHarness(backend, clock: clock)
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
        let harness = try await ServiceHarness(backend)
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

@Suite("Password and secret guessing (failed sign-ins limited)", .timeLimit(.minutes(5)))
struct GuessingTests {
    static func hashes(_ service: NotificationService) -> Int {
        let text = service.metrics.render()
        guard let match = text.firstMatch(of: /notty_password_hashes_total (\d+)/) else { return -1 }
        return Int(match.1) ?? -1
    }

    @Test(
        "10 wrong passwords lock the user name: 429 with Retry-After and no hash computed; other users and refresh grants go on; the lock ends, and failing again doubles it",
        arguments: Backend.available)
    func passwordLockout(backend: Backend) async throws {
        let clock = ManualClock()
        let harness = try await ServiceHarness(backend, clock: clock)
        try await harness.router { client in
            let world = try await harness.world(client)
            try await harness.service.admin.addUser(name: "bob", password: "s3cret-bob")
            for n in 1...10 {
                let wrong = try await client.call(.post, "/oauth2/v2.0/token", form: "grant_type=password&username=alice&password=guess\(n)")
                #expect(wrong.status == .badRequest && wrong.string("error") == "invalid_grant", "guess \(n): \(wrong.text)")
            }
            let hashes = Self.hashes(harness.service)
            for password in ["guess11", "s3cret-alice"] {  // even the right one, while locked
                let refused = try await client.call(.post, "/oauth2/v2.0/token", form: "grant_type=password&username=Alice&password=\(password)")
                #expect(refused.status == .tooManyRequests && refused.string("error") == "temporarily_unavailable", "\(refused.text)")
                #expect(refused.headers[HTTPField.Name("Retry-After")!] == "60")
            }
            #expect(Self.hashes(harness.service) == hashes, "a refused guess computed a hash")
            // Others are not locked out: another user, and alice's own refresh grant.
            #expect(try await client.call(.post, "/oauth2/v2.0/token", form: "grant_type=password&username=bob&password=s3cret-bob").status == .ok)
            #expect(
                try await client.call(.post, "/oauth2/v2.0/token", form: "grant_type=refresh_token&refresh_token=\(world.refreshToken)").status == .ok
            )
            #expect(try await harness.service.admin.lockouts().map(\.key) == ["user:alice"])

            // After the minute, the right password works (and the failures are forgotten).
            clock.advance(by: 61)
            #expect(
                try await client.call(.post, "/oauth2/v2.0/token", form: "grant_type=password&username=alice&password=s3cret-alice").status == .ok)
            #expect(try await harness.service.admin.lockouts().isEmpty)

            // Failing on after a lockout: locked again at once, for twice as long.
            for n in 1...10 { _ = try await client.call(.post, "/oauth2/v2.0/token", form: "grant_type=password&username=alice&password=again\(n)") }
            clock.advance(by: 61)
            let once = try await client.call(.post, "/oauth2/v2.0/token", form: "grant_type=password&username=alice&password=wrong-again")
            #expect(once.status == .badRequest)
            let doubled = try await client.call(.post, "/oauth2/v2.0/token", form: "grant_type=password&username=alice&password=s3cret-alice")
            #expect(
                doubled.status == .tooManyRequests && doubled.headers[HTTPField.Name("Retry-After")!] == "120", "\(doubled.headers) \(doubled.text)")
            #expect(try await harness.service.admin.clearLockouts(keys: ["user:alice"]) == 1)
            #expect(
                try await client.call(.post, "/oauth2/v2.0/token", form: "grant_type=password&username=alice&password=s3cret-alice").status == .ok)
        }
    }

    @Test("10 wrong client secrets lock that client_id (429), not another app's", arguments: Backend.available)
    func secretLockout(backend: Backend) async throws {
        let harness = try await ServiceHarness(backend, clock: ManualClock())
        try await harness.router { client in
            let world = try await harness.world(client)
            let other = try await harness.service.admin.addApp(hostName: "other.example.com")
            for n in 1...10 {
                let wrong = try await client.call(
                    .post, "/oauth2/v2.0/token", form: "grant_type=client_credentials&client_id=\(world.clientId)&client_secret=bad\(n)")
                #expect(wrong.status == .unauthorized && wrong.string("error") == "invalid_client")
            }
            let locked = try await client.call(
                .post, "/oauth2/v2.0/token", form: "grant_type=client_credentials&client_id=\(world.clientId)&client_secret=\(world.clientSecret)")
            #expect(locked.status == .tooManyRequests && locked.headers[HTTPField.Name("Retry-After")!] != nil, "\(locked.text)")
            let fine = try await client.call(
                .post, "/oauth2/v2.0/token", form: "grant_type=client_credentials&client_id=\(other.clientId)&client_secret=\(other.clientSecret)")
            #expect(fine.status == .ok)
        }
    }
}
