import Foundation
import HTTPTypes
import Hummingbird
import NottyCore
import NottyService

/// The browser's session (PROTOCOL.md §14, PROTOCOL.md §15): a cookie holding a user token of the
/// browser's device, `HttpOnly`, `SameSite=Strict`; over https (TLS here, an https public URL,
/// or `X-Forwarded-Proto: https` from a `--trusted-proxy`) `Secure` and named
/// `__Host-notty_session`, which a browser keeps only from a secure page, for this host alone. A
/// request that changes something with the cookie (anything but GET and HEAD) must come from
/// this service's own pages: its `Origin` is this service's, else `403`, whatever the cookie says.
enum WebSession {
    static let cookieName = "notty_session"
    static let secureCookieName = "__Host-notty_session"

    /// The session cookie's token, when the request carries one: `__Host-notty_session` always,
    /// `notty_session` only where the service is not reached over https (else a page of another
    /// host of the domain could plant one).
    static func token(_ request: Request, config: ServiceConfig) -> String? {
        let names = config.servesHTTPS ? [secureCookieName] : [secureCookieName, cookieName]
        for name in names {
            for header in request.headers[values: .cookie] {
                for pair in header.split(separator: ";") {
                    let trimmed = pair.drop { $0 == " " }
                    guard trimmed.hasPrefix(name + "=") else { continue }
                    let value = trimmed.dropFirst(name.count + 1)
                    if !value.isEmpty { return String(value) }
                }
            }
        }
        return nil
    }

    /// Whether the request comes from a page of this service (its `Origin`, or a browser's
    /// `Sec-Fetch-Site: same-origin` when there is no `Origin`).
    static func isSameOrigin(_ request: Request) -> Bool {
        if let origin = request.headers[.origin] {
            guard let url = HTTPURL(origin) else { return false }
            return url.authority == request.head.authority?.lowercased()
        }
        if let site = request.headers[HTTPField.Name("Sec-Fetch-Site")!] { return site == "same-origin" || site == "none" }
        return false
    }

    /// The user token a request is made with: its bearer token, else (checked for where it
    /// comes from) its session cookie. The cookie of a change, or of a request that opens a
    /// WebSocket (`sameOriginOnly`), counts only from this service's own pages.
    static func userToken(_ request: Request, sameOriginOnly: Bool = false, config: ServiceConfig) throws -> String? {
        if let bearer = request.bearerToken { return bearer }
        guard let cookie = token(request, config: config) else { return nil }
        if (sameOriginOnly || (request.method != .get && request.method != .head)) && !isSameOrigin(request) {
            throw ServiceError.forbidden("a change made with the session cookie must come from this service's own pages (its Origin)")
        }
        return cookie
    }

    /// `Set-Cookie` for a session token, or (nil) one that ends it.
    static func setCookie(_ token: String?, maxAge: Int, secure: Bool) -> String {
        "\(secure ? secureCookieName : cookieName)=\(token ?? ""); Path=/; HttpOnly; SameSite=Strict; Max-Age=\(token == nil ? 0 : maxAge)"
            + (secure ? "; Secure" : "")
    }

    /// Whether this request's cookie is set `Secure`: the service is reached over https, or a
    /// trusted proxy says this request came over it.
    static func isSecure(_ context: NottyRequestContext, config: ServiceConfig) -> Bool {
        config.servesHTTPS || context.forwardedHTTPS
    }
}

extension Routes {
    /// `POST /v1/web/session` `{"username","password","deviceName"?}`: signs the browser in
    /// as a device of its own (in `notty devices`); `DELETE /v1/web/session` signs it out
    /// (the device is revoked, its token and the cookie ended; made with a bearer token, it
    /// signs that token's device out the same way).
    var webSessionRoutes: [Route] {
        [
            Route(method: .post, path: "/v1/web/session", audience: .anyone) { request, context in
                guard WebSession.isSameOrigin(request) else {
                    throw ServiceError.forbidden("sign in from this service's own pages (its Origin)")
                }
                var request = request
                let body = try await request.jsonBody(limit: self.limit)
                let name: String, password: String, deviceName: String
                do throws(ValidationError) {
                    let fields = try JSONFields(body: body)
                    guard let user = try fields.string("username", max: 256), let secret = try fields.string("password", max: 1024) else {
                        throw ValidationError("username and password are required")
                    }
                    (name, password) = (user, secret)
                    deviceName = try fields.string("deviceName", max: 64) ?? "browser"
                } catch {
                    throw ServiceError.badRequest(error.message)
                }
                let session = try await self.service.auth.webSession(name: name, password: password, address: context.remoteAddress)
                return try await self.startSession(session, name: name, deviceName: deviceName, context: context)
            },
            // A one-time sign-in link (PROTOCOL.md §14): made by a signed-in device for its
            // user, exchanged once by a browser, within 60 s, for a session of its own.
            Route(method: .post, path: "/v1/web/signin-links", audience: .user) { _, context in
                let user = try context.requireUser()
                let link = try await self.service.auth.signInLink(userId: user, deviceId: context.deviceId)
                struct Link: Encodable {
                    let token: String, path: String, expiresIn: Int
                }
                return try JSONResponse.make(
                    Link(token: link.token, path: "/#signin=" + link.token, expiresIn: Int(Authentication.signInLinkLifetime)), status: .created,
                    headers: [.cacheControl: "no-store"])
            },
            Route(method: .post, path: "/v1/web/session/link", audience: .anyone) { request, context in
                guard WebSession.isSameOrigin(request) else {
                    throw ServiceError.forbidden("sign in from this service's own pages (its Origin)")
                }
                var request = request
                let body = try await request.jsonBody(limit: self.limit)
                let link: String, deviceName: String
                do throws(ValidationError) {
                    let fields = try JSONFields(body: body)
                    guard let token = try fields.string("token", max: 256) else {
                        throw ValidationError("token (the link's, after #signin=) is required")
                    }
                    link = token
                    deviceName = try fields.string("deviceName", max: 64) ?? "browser"
                } catch {
                    throw ServiceError.badRequest(error.message)
                }
                let session = try await self.service.auth.webSession(link: link)
                return try await self.startSession(
                    (session.token, session.userId, session.deviceId, session.expires), name: session.userName, deviceName: deviceName,
                    context: context)
            },
            Route(method: .delete, path: "/v1/web/session", audience: .user) { request, context in
                let user = try context.requireUser()
                if let deviceId = context.deviceId,
                    let device = try await self.service.inbox.subscriptions(userId: user).first(where: {
                        $0.deviceId == deviceId && $0.targetHostName == nil
                    })
                {
                    try await self.service.inbox.revokeSubscription(userId: user, id: device.userNotificationSubscriptionId)
                }
                // The token it was made with ends too, whether or not its device had registered.
                if let token = try WebSession.userToken(request, config: self.service.config) { try await self.service.auth.revoke(tokens: [token]) }
                var headers = HTTPFields()
                headers[.setCookie] = WebSession.setCookie(nil, maxAge: 0, secure: WebSession.isSecure(context, config: self.service.config))
                return Response(status: .noContent, headers: headers)
            },
        ]
    }

    /// A browser's session begun: its device registered (platform `web`) and the cookie set.
    private func startSession(
        _ session: (token: String, userId: String, deviceId: String, expires: Date), name: String, deviceName: String,
        context: NottyRequestContext
    ) async throws -> Response {
        let registration = Data(JSONValue.object(["deviceName": .string(deviceName), "platform": .string("web")]).jsonText.utf8)
        let device: SubscriptionInfo
        do {
            device = try await self.service.inbox.createSubscription(userId: session.userId, deviceId: session.deviceId, body: registration)
        } catch {
            // Not registered (the user holds as many devices as they may): the session's token ends unused.
            try? await self.service.auth.revoke(tokens: [session.token])
            throw error
        }
        var headers = HTTPFields()
        headers[.setCookie] = WebSession.setCookie(
            session.token, maxAge: Int(session.expires.timeIntervalSince(Date())),
            secure: WebSession.isSecure(context, config: self.service.config))
        headers[.cacheControl] = "no-store"
        return try JSONResponse.make(
            ["user": name, "deviceId": session.deviceId, "subscriptionId": device.userNotificationSubscriptionId], status: .created,
            headers: headers)
    }
}
