import Foundation
import HTTPTypes
import NottyCore
import Testing

@testable import NottyHTTP
@testable import NottyService
@testable import NottyServicePostgres
@testable import NottyServiceSQLite

@Suite("OpenID discovery of the tenant authority and HTTP Basic client credentials (PROTOCOL.md §2.1)", .timeLimit(.minutes(5)))
struct DiscoveryTests {
    static let fields = [
        "issuer", "authorization_endpoint", "token_endpoint", "jwks_uri", "response_types_supported", "subject_types_supported",
        "id_token_signing_alg_values_supported", "token_endpoint_auth_methods_supported", "grant_types_supported",
    ]

    @Test("the three discovery paths answer the document MSAL reads; every URL in it is under the public URL and answers")
    func discoveryDocument() async throws {
        let base = "https://notty.example.org:8443/notifications"
        let harness = try await ServiceHarness { $0.publicURL = base }
        try await harness.router { client in
            let world = try await harness.world(client)
            for (path, tenant) in [
                ("/contoso.onmicrosoft.com/v2.0/.well-known/openid-configuration", "contoso.onmicrosoft.com"),
                ("/72f988bf-86f1-41af-91ab-2d7cd011db47/.well-known/openid-configuration", "72f988bf-86f1-41af-91ab-2d7cd011db47"),
                ("/.well-known/openid-configuration", "common"),
            ] {
                let reply = try await client.call(.get, path)
                #expect(reply.status == .ok, "\(path): \(reply.text)")
                #expect(reply.headers[.contentType]?.hasPrefix("application/json") == true)
                guard case .object(let document)? = reply.json else { Issue.record("\(path): not a JSON object: \(reply.text)"); continue }
                for field in Self.fields { #expect(document[field] != nil, "\(path) has no \(field)") }
                #expect(reply.string("token_endpoint") == "\(base)/\(tenant)/oauth2/v2.0/token")
                #expect(reply.string("authorization_endpoint") == "\(base)/\(tenant)/oauth2/v2.0/authorize")
                #expect(reply["token_endpoint_auth_methods_supported"] == .array([.string("client_secret_post"), .string("client_secret_basic")]))
                guard case .array(let grants)? = reply["grant_types_supported"] else { Issue.record("no grant types"); continue }
                #expect(grants.contains(.string("client_credentials")))
                // Every URL in the document is absolute, under the public URL, and answers.
                for (field, value) in document {
                    guard case .string(let url) = value, url.contains("://") else { continue }
                    #expect(url.hasPrefix(base + "/") || url == base, "\(field) = \(url) is not under \(base)")
                    let path = String(url.dropFirst(base.count))
                    if field == "issuer" { continue }  // an identifier, not an endpoint
                    if field == "token_endpoint" {
                        let token = try await client.call(
                            .post, path, form: "grant_type=client_credentials&client_id=\(world.clientId)&client_secret=\(world.clientSecret)")
                        #expect(token.status == .ok && token.string("access_token") != nil, "\(url): \(token.text)")
                    } else {
                        let answer = try await client.call(.get, path)
                        #expect(answer.status != .notFound && answer.status.code < 500, "\(field) \(url) answers \(answer.status)")
                    }
                }
            }
            let keys = try await client.call(.get, "/contoso.onmicrosoft.com/discovery/v2.0/keys")
            #expect(keys.status == .ok && keys["keys"] == .array([]), "\(keys.text)")
            let authorize = try await client.call(.get, "/contoso.onmicrosoft.com/oauth2/v2.0/authorize")
            #expect(authorize.status == .badRequest && authorize.string("error") == "unsupported_response_type", "\(authorize.text)")
        }
    }

    @Test("without a public URL the document is built from the request's Host; a tenant that is no name, domain or GUID is 404")
    func hostAndBadTenant() async throws {
        let harness = try await ServiceHarness()
        try await harness.router { client in
            // The test router's requests carry the authority "localhost".
            let reply = try await client.call(.get, "/common/v2.0/.well-known/openid-configuration")
            #expect(reply.string("token_endpoint") == "http://localhost/common/oauth2/v2.0/token", "\(reply.text)")
            #expect(reply.string("issuer") == "http://localhost/common/v2.0")
            for tenant in ["a%3Cb", "x%22y", "%F0%9F%98%80"] {
                let bad = try await client.call(.get, "/\(tenant)/v2.0/.well-known/openid-configuration")
                #expect(bad.status == .notFound, "\(tenant): \(bad.status) \(bad.text)")
                #expect(!bad.text.contains("<"), "the tenant is echoed unescaped: \(bad.text)")
            }
            let post = try await client.call(.post, "/common/v2.0/.well-known/openid-configuration")
            #expect(post.status == .methodNotAllowed && post.headers[HTTPField.Name("Allow")!] == "GET")
        }
    }

    @Test("client credentials as HTTP Basic (RFC 6749 §2.3.1): right ones give a token, wrong ones invalid_client, both ways at once invalid_request")
    func basicCredentials() async throws {
        let harness = try await ServiceHarness()
        try await harness.router { client in
            let world = try await harness.world(client)
            func basic(_ id: String, _ secret: String) -> String {
                func encode(_ text: String) -> String { text.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? text }
                return "Basic " + Data("\(encode(id)):\(encode(secret))".utf8).base64EncodedString()
            }
            let good = try await client.call(
                .post, "/contoso/oauth2/v2.0/token", form: "grant_type=client_credentials&scope=https%3A%2F%2Fgraph.microsoft.com%2F.default",
                headers: ["Authorization": basic(world.clientId, world.clientSecret)])
            #expect(good.status == .ok, "\(good.text)")
            let token = try #require(good.string("access_token"))
            let published = try await client.call(
                .post, "/beta/me/notifications", token: token,
                json: #"{"appNotificationId":"basic","payload":{"visualContent":{"title":"Via Basic","body":"b"}}}"#,
                headers: ["X-UNS-ID": world.unsId])
            #expect(published.status == .created, "\(published.text)")
            let wrong = try await client.call(
                .post, "/contoso/oauth2/v2.0/token", form: "grant_type=client_credentials",
                headers: ["Authorization": basic(world.clientId, "nope")])
            #expect(wrong.status == .unauthorized && wrong.string("error") == "invalid_client", "\(wrong.text)")
            #expect(wrong.headers[HTTPField.Name("WWW-Authenticate")!] == "Basic")
            let garbled = try await client.call(
                .post, "/contoso/oauth2/v2.0/token", form: "grant_type=client_credentials",
                headers: ["Authorization": "Basic !!!not-base64"])
            #expect(garbled.status == .unauthorized && garbled.string("error") == "invalid_client", "\(garbled.text)")
            let twice = try await client.call(
                .post, "/contoso/oauth2/v2.0/token",
                form: "grant_type=client_credentials&client_id=\(world.clientId)&client_secret=\(world.clientSecret)",
                headers: ["Authorization": basic(world.clientId, world.clientSecret)])
            #expect(twice.status == .badRequest && twice.string("error") == "invalid_request", "\(twice.text)")
            let otherId = try await client.call(
                .post, "/contoso/oauth2/v2.0/token", form: "grant_type=client_credentials&client_id=someone-else",
                headers: ["Authorization": basic(world.clientId, world.clientSecret)])
            #expect(otherId.status == .badRequest && otherId.string("error") == "invalid_request", "\(otherId.text)")
        }
    }

    @Test("BasicCredentials reads percent-encoded ids and secrets and leaves other schemes alone")
    func basicParsing() throws {
        let value = "Basic " + Data("my%20app:s%3Ac%2Bret+x".utf8).base64EncodedString()
        let parsed = try #require(try BasicCredentials.parse(value))
        #expect(parsed.clientId == "my app" && parsed.secret == "s:c+ret x")
        #expect(try BasicCredentials.parse("Bearer abc") == nil)
        #expect(try BasicCredentials.parse(nil) == nil)
        #expect(throws: ServiceError.self) { try BasicCredentials.parse("Basic " + Data("no-colon".utf8).base64EncodedString()) }
    }
}
