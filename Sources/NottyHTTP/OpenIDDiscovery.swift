import Foundation
import Hummingbird
import NottyCore
import NottyService
import NottyWebhooks

/// OpenID Connect discovery for the tenant authority (PROTOCOL.md §2.1 "Microsoft's own libraries").
///
/// MSAL and azure-identity read `/{tenant}/v2.0/.well-known/openid-configuration` before they
/// ask for a token; the document points them at notty's token endpoint. Tokens are opaque, so
/// the JWKS document has no keys, and nothing is signed.
struct OpenIDConfiguration: Codable, Sendable, Equatable {
    var issuer: String
    var authorizationEndpoint: String
    var tokenEndpoint: String
    var jwksURI: String
    var responseTypesSupported: [String]
    var responseModesSupported: [String]
    var subjectTypesSupported: [String]
    var idTokenSigningAlgValuesSupported: [String]
    var tokenEndpointAuthMethodsSupported: [String]
    var grantTypesSupported: [String]
    var scopesSupported: [String]
    var tenantRegionScope: String?
    var cloudInstanceName: String

    enum CodingKeys: String, CodingKey {
        case issuer
        case authorizationEndpoint = "authorization_endpoint"
        case tokenEndpoint = "token_endpoint"
        case jwksURI = "jwks_uri"
        case responseTypesSupported = "response_types_supported"
        case responseModesSupported = "response_modes_supported"
        case subjectTypesSupported = "subject_types_supported"
        case idTokenSigningAlgValuesSupported = "id_token_signing_alg_values_supported"
        case tokenEndpointAuthMethodsSupported = "token_endpoint_auth_methods_supported"
        case grantTypesSupported = "grant_types_supported"
        case scopesSupported = "scopes_supported"
        case tenantRegionScope = "tenant_region_scope"
        case cloudInstanceName = "cloud_instance_name"
    }

    /// The document for `tenant` (nil: the bare `/.well-known/…` form, whose endpoints use
    /// `common` as Microsoft's do) of a service reached at `base`.
    init(base: String, tenant: String?) {
        let authority = "\(base)/\(tenant ?? "common")"
        issuer = tenant == nil ? base : "\(authority)/v2.0"
        authorizationEndpoint = "\(authority)/oauth2/v2.0/authorize"
        tokenEndpoint = "\(authority)/oauth2/v2.0/token"
        jwksURI = "\(authority)/discovery/v2.0/keys"
        responseTypesSupported = ["code", "id_token", "code id_token", "id_token token"]
        responseModesSupported = ["query", "fragment", "form_post"]
        subjectTypesSupported = ["pairwise"]
        idTokenSigningAlgValuesSupported = ["RS256"]
        tokenEndpointAuthMethodsSupported = ["client_secret_post", "client_secret_basic"]
        grantTypesSupported = ["client_credentials", "password", "refresh_token"]
        scopesSupported = ["openid", "profile", "email", "offline_access"]
        tenantRegionScope = nil
        cloudInstanceName = URL(string: base)?.host ?? "notty"
    }

    /// A tenant as it may appear in a URL notty hands out: a name, a domain or a GUID
    /// (`contoso.onmicrosoft.com`, `common`, `72f988bf-…`). Anything else is not a tenant.
    static func isTenant(_ text: String) -> Bool {
        text.contains(where: { $0.isLetter || $0.isNumber }) && text.utf8.count <= 256
            && text.utf8.allSatisfy { byte in
                (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z")) || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
                    || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".")
                    || byte == UInt8(ascii: "_")
            }
    }
}

/// The signing keys' document at `jwks_uri`: none, because notty's tokens are opaque.
struct JSONWebKeySet: Codable, Sendable, Equatable {
    var keys: [[String: String]] = []
}

/// RFC 6749 §2.3.1: `Authorization: Basic base64(urlencode(client_id):urlencode(client_secret))`.
enum BasicCredentials {
    /// The client id and secret of a Basic `Authorization` value; nil when it is another scheme.
    /// Throws `invalid_client` for a Basic value that cannot be read.
    static func parse(_ header: String?) throws -> (clientId: String, secret: String)? {
        guard let header else { return nil }
        let trimmed = header.trimmingCharacters(in: .whitespaces)
        guard trimmed.count > 6, trimmed.prefix(6).lowercased() == "basic " else { return nil }
        let encoded = trimmed.dropFirst(6).trimmingCharacters(in: .whitespaces)
        guard let data = Data(base64Encoded: encoded), let text = String(data: data, encoding: .utf8),
            let colon = text.firstIndex(of: ":")
        else {
            throw ServiceError.oauth(.unauthenticated, "invalid_client", "the Basic Authorization header is not base64 of client_id:client_secret")
        }
        return (FormFields.decode(text[..<colon]), FormFields.decode(text[text.index(after: colon)...]))
    }

    /// The token request's form with the client credentials of `header` in it. A client that
    /// sends its credentials both ways must send the same ones (RFC 6749 allows only one way).
    static func merge(_ header: String?, into form: [String: String]) throws -> [String: String] {
        guard let (clientId, secret) = try parse(header) else { return form }
        if let formId = form["client_id"], formId != clientId {
            throw ServiceError.oauth(
                .badRequest, "invalid_request", "client_id differs between the form and the Basic Authorization header: send it one way")
        }
        if form["client_secret"] != nil {
            throw ServiceError.oauth(.badRequest, "invalid_request", "send client_secret in the form or in the Basic Authorization header, not both")
        }
        var merged = form
        merged["client_id"] = clientId
        merged["client_secret"] = secret
        return merged
    }
}
