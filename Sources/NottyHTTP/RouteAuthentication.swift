import Foundation
import HTTPTypes
import Hummingbird
import NottyCore
import NottyRecords
import NottyService

// Who calls a route: the authentication middleware of each audience (``Routes/Audience``)
// and what a handler reads of its caller from the request context.

/// Authenticates app routes: the app behind the bearer token goes into the context.
struct AppAuthentication: RouterMiddleware {
    typealias Context = NottyRequestContext
    let service: NotificationService

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var context = context
        context.app = try await service.auth.authenticateApp(bearer: request.bearerToken)
        return try await next(request, context)
    }
}

/// Authenticates user routes: the user (and the device the token was issued to) go into the
/// context. A browser's session cookie (``WebSession``) does for a bearer token.
struct UserAuthentication: RouterMiddleware {
    typealias Context = NottyRequestContext
    let service: NotificationService

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var context = context
        let caller = try await service.auth.authenticateDevice(bearer: try WebSession.userToken(request, config: service.config))
        context.user = caller.userId
        context.deviceId = caller.deviceId
        return try await next(request, context)
    }
}

extension NottyRequestContext {
    /// The caller of a user route (set by ``UserAuthentication``).
    func requireUser() throws -> String {
        guard let user else { throw ServiceError.unauthenticated("missing bearer token: send Authorization: Bearer <token>") }
        return user
    }

    /// The caller of an app route (set by ``AppAuthentication``).
    func requireApp() throws -> AppRecord {
        guard let app else { throw ServiceError.unauthenticated("missing bearer token: send Authorization: Bearer <token>") }
        return app
    }

    /// The `{tenant}` of a discovery path: notty ignores it but writes it into the URLs it
    /// answers, so only a name, domain or GUID is one (`404` otherwise).
    func tenant() throws -> String {
        let tenant = try parameters.require("tenant")
        guard OpenIDConfiguration.isTenant(tenant) else { throw ServiceError.notFound("no tenant \(tenant.prefix(64))") }
        return tenant
    }

    /// A path parameter, percent-decoded (`%C2%AE` is `®`). No id, token or key holds U+0000
    /// (publishing refuses it, and PostgreSQL's text cannot store it), so `%00` is a `404` here
    /// rather than a query that PostgreSQL would refuse.
    func pathParameter(_ name: String) throws -> String {
        let raw = try parameters.require(name)
        let decoded = raw.removingPercentEncoding ?? raw
        guard !decoded.containsNUL else { throw ServiceError.notFound("no \(name) contains U+0000 (NUL)") }
        return decoded
    }
}
