import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import NottyCore
import NottyDialects
import NottyRecords
import NottyService
import NottyWebhooks

/// Every HTTP route of PROTOCOL.md §2 on a Hummingbird router.
public struct Routes: Sendable {
    let service: NotificationService

    public init(service: NotificationService) { self.service = service }

    var limit: Int { service.config.maxBodyBytes }
    private var pollHeader: HTTPFields {
        var fields = HTTPFields()
        fields[HTTPField.Name("X-Poll-Interval")!] = String(service.config.pollInterval)
        return fields
    }

    /// Who a route is for: each audience has one authentication middleware, so a handler
    /// finds its caller in the context (`context.user`, `context.app`) and never checks a token.
    enum Audience {
        /// No authentication (health, metrics, the token routes).
        case anyone
        /// An app access token (PROTOCOL.md §2.2).
        case app
        /// A user access token (PROTOCOL.md §2.3).
        case user
        /// The URL itself is the credential (PROTOCOL.md §7.2): checked by the service.
        case webhook
    }

    /// One route: a method, a path, who may call it and what answers it.
    struct Route: Sendable {
        let method: HTTPRequest.Method
        let path: String
        let audience: Audience
        let handle: @Sendable (Request, NottyRequestContext) async throws -> Response
    }

    /// Every route of the plain HTTP router, once: the router and the `405` answers (with
    /// `Allow`) are both made from it.
    var table: [Route] {
        var routes: [Route] = [
            // §2.4 operations
            Route(method: .get, path: "/healthz", audience: .anyone) { _, _ in try await self.health() },
            Route(method: .get, path: "/metrics", audience: .anyone) { _, _ in self.metrics() },
            // §2.1 tokens
            Route(method: .post, path: "/oauth2/v2.0/token", audience: .anyone) { request, context in try await self.token(request, context) },
            Route(method: .post, path: "/:tenant/oauth2/v2.0/token", audience: .anyone) { request, context in try await self.token(request, context)
            },
            Route(method: .post, path: "/oauth2/v2.0/revoke", audience: .anyone) { request, _ in try await self.revoke(request) },
            // §2.1 OpenID discovery of the tenant authority (MSAL, azure-identity)
            Route(method: .get, path: "/.well-known/openid-configuration", audience: .anyone) { request, _ in
                try JSONResponse.make(OpenIDConfiguration(base: self.baseURL(request), tenant: nil))
            },
            Route(method: .get, path: "/:tenant/.well-known/openid-configuration", audience: .anyone) { request, context in
                try JSONResponse.make(OpenIDConfiguration(base: self.baseURL(request), tenant: try context.tenant()))
            },
            Route(method: .get, path: "/:tenant/v2.0/.well-known/openid-configuration", audience: .anyone) { request, context in
                try JSONResponse.make(OpenIDConfiguration(base: self.baseURL(request), tenant: try context.tenant()))
            },
            Route(method: .get, path: "/:tenant/discovery/v2.0/keys", audience: .anyone) { _, context in
                _ = try context.tenant()
                return try JSONResponse.make(JSONWebKeySet())
            },
            Route(method: .get, path: "/:tenant/oauth2/v2.0/authorize", audience: .anyone) { _, context in
                _ = try context.tenant()
                throw ServiceError.oauth(
                    .badRequest, "unsupported_response_type",
                    "notty signs nobody in through a browser: apps get tokens with client_credentials at the token endpoint, users with notty login")
            },
        ]
        // §2.2 publishing, on Graph's two paths
        for prefix in ["/beta/me/notifications", "/v1.0/me/notifications"] {
            routes += [
                Route(method: .post, path: prefix, audience: .app) { request, context in try await self.publish(request, app: context.requireApp()) },
                Route(method: .delete, path: prefix + "/:appNotificationId", audience: .app) { request, context in
                    try await self.deleteByApp(request, app: context.requireApp(), appNotificationId: context.pathParameter("appNotificationId"))
                },
            ]
        }
        // §2.3 the signed-in user
        routes += [
            Route(method: .get, path: "/v1/me", audience: .user) { _, context in
                try JSONResponse.make(try await self.service.inbox.me(userId: context.requireUser()))
            },
            Route(method: .post, path: "/v1/me/subscriptions", audience: .user) { request, context in
                var request = request
                let body = try await request.jsonBody(limit: self.limit)
                return try JSONResponse.make(
                    try await self.service.inbox.createSubscription(
                        userId: context.requireUser(), deviceId: context.deviceId, body: body, baseURL: self.baseURL(request)),
                    status: .created)
            },
            Route(method: .get, path: "/v1/me/subscriptions", audience: .user) { _, context in
                try JSONResponse.make(SubscriptionList(value: try await self.service.inbox.subscriptions(userId: context.requireUser())))
            },
            Route(method: .delete, path: "/v1/me/subscriptions/:id", audience: .user) { _, context in
                try await self.service.inbox.revokeSubscription(userId: context.requireUser(), id: context.pathParameter("id"))
                return JSONResponse.empty(.noContent)
            },
            // PROTOCOL.md §15: a user changes their own password.
            Route(method: .post, path: "/v1/me/password", audience: .user) { request, context in
                var request = request
                let body = try await request.jsonBody(limit: self.limit)
                try await self.service.auth.changePassword(
                    userId: context.requireUser(), deviceId: context.deviceId, body: body, address: context.remoteAddress)
                return JSONResponse.empty(.noContent)
            },
            Route(method: .get, path: "/v1/me/preferences", audience: .user) { _, context in
                try JSONResponse.make(try await self.service.inbox.preferences(userId: context.requireUser()))
            },
            Route(method: .patch, path: "/v1/me/preferences", audience: .user) { request, context in
                var request = request
                let body = try await request.jsonBody(limit: self.limit)
                return try JSONResponse.make(try await self.service.inbox.setPreferences(userId: context.requireUser(), body: body))
            },
            // §16.4 a team's mutes and maintenance windows
            Route(method: .get, path: "/v1/teams/:name/preferences", audience: .user) { _, context in
                try JSONResponse.make(
                    try await self.service.inbox.teamPreferences(team: context.pathParameter("name"), userId: context.requireUser()))
            },
            Route(method: .patch, path: "/v1/teams/:name/preferences", audience: .user) { request, context in
                var request = request
                let body = try await request.jsonBody(limit: self.limit)
                return try JSONResponse.make(
                    try await self.service.inbox.setTeamPreferences(team: context.pathParameter("name"), userId: context.requireUser(), body: body))
            },
            // §11 escalation rules
            Route(method: .get, path: "/v1/me/escalations", audience: .user) { _, context in
                try JSONResponse.make(try await self.service.inbox.escalationRules(userId: context.requireUser()))
            },
            Route(method: .post, path: "/v1/me/escalations", audience: .user) { request, context in
                var request = request
                let body = try await request.jsonBody(limit: self.limit)
                let rule = try ServiceError.decoding { () throws(ValidationError) in try EscalationRuleRequest(body: body) }
                return try JSONResponse.make(try await self.service.inbox.addEscalationRule(userId: context.requireUser(), rule), status: .created)
            },
            Route(method: .post, path: "/v1/me/escalations/:id/test", audience: .user) { _, context in
                let outcomes = try await self.service.inbox.testEscalationRule(userId: context.requireUser(), id: context.pathParameter("id"))
                return try JSONResponse.make(EscalationTestReport(value: outcomes))
            },
            Route(method: .delete, path: "/v1/me/escalations/:id", audience: .user) { _, context in
                try await self.service.inbox.removeEscalationRule(userId: context.requireUser(), id: context.pathParameter("id"))
                return JSONResponse.empty(.noContent)
            },
            // §13.1 teams
            Route(method: .get, path: "/v1/me/teams", audience: .user) { _, context in
                let teams = try await self.service.teams.teams(userId: context.requireUser()).value
                return try JSONResponse.make(TeamList(value: try await self.service.onCall.withOnCall(teams)))
            },
            Route(method: .get, path: "/v1/teams/:name", audience: .user) { _, context in
                let team = try await self.service.teams.team(name: context.pathParameter("name"), userId: context.requireUser())
                return try JSONResponse.make(try await self.service.onCall.withOnCall([team])[0])
            },
            Route(method: .post, path: "/v1/teams/:name/members", audience: .user) { request, context in
                var request = request
                let body = try await request.jsonBody(limit: self.limit)
                return try JSONResponse.make(
                    try await self.service.teams.setMember(team: context.pathParameter("name"), by: context.requireUser(), body: body))
            },
            Route(method: .delete, path: "/v1/teams/:name/members/:user", audience: .user) { _, context in
                try await self.service.teams.removeMember(
                    team: context.pathParameter("name"), by: context.requireUser(), user: context.pathParameter("user"))
                return JSONResponse.empty(.noContent)
            },
            // PROTOCOL.md §15: a team's apps and hooks are the team's, its owners' to list and revoke.
            Route(method: .get, path: "/v1/teams/:name/subscriptions", audience: .user) { _, context in
                try JSONResponse.make(
                    SubscriptionList(
                        value: try await self.service.inbox.teamSubscriptions(team: context.pathParameter("name"), userId: context.requireUser())))
            },
            Route(method: .delete, path: "/v1/teams/:name/subscriptions/:id", audience: .user) { _, context in
                try await self.service.inbox.revokeTeamSubscription(
                    team: context.pathParameter("name"), userId: context.requireUser(), id: context.pathParameter("id"))
                return JSONResponse.empty(.noContent)
            },
            Route(method: .get, path: "/v1/me/notifications/changes", audience: .user) { request, context in
                try await self.changes(request, user: context.requireUser())
            },
            Route(method: .get, path: "/v1/me/notifications/counts", audience: .user) { request, context in
                let form = request.uri.form
                return try JSONResponse.make(
                    try await self.service.inbox.counts(userId: context.requireUser(), search: form["search"] ?? form["$search"]),
                    headers: self.pollHeader)
            },
            Route(method: .get, path: "/v1/me/notifications", audience: .user) { request, context in
                try await self.list(request, user: context.requireUser())
            },
            Route(method: .post, path: "/v1/me/notifications/batch", audience: .user) { request, context in
                try await self.batch(request, user: context.requireUser(), device: context.deviceId)
            },
            Route(method: .get, path: "/v1/me/notifications/:id", audience: .user) { _, context in
                try JSONResponse.make(try await self.service.inbox.notification(userId: context.requireUser(), id: context.pathParameter("id")))
            },
            Route(method: .patch, path: "/v1/me/notifications/:id", audience: .user) { request, context in
                try await self.patch(request, user: context.requireUser(), device: context.deviceId, id: context.pathParameter("id"))
            },
            Route(method: .delete, path: "/v1/me/notifications/:id", audience: .user) { _, context in
                let result = try await self.service.inbox.mutate(
                    userId: context.requireUser(), device: context.deviceId, [Mutation(id: try context.pathParameter("id"), operation: .delete)])[0]
                guard result.status == 204 else { throw ServiceError.notFound() }
                return JSONResponse.empty(.noContent)
            },
            // Actions (PROTOCOL.md §12): run by the service, once.
            Route(method: .post, path: "/v1/me/notifications/:id/actions/:n", audience: .user) { _, context in
                let user = try context.requireUser()
                let device = try await self.service.actions.deviceName(userId: user, deviceId: context.deviceId)
                let result = try await self.service.actions.press(
                    userId: user, device: device, id: try context.pathParameter("id"),
                    action: try Self.integer(
                        try context.pathParameter("n"), name: "the action number", default: 1, range: 1...NotificationAction.maxPerNotification))
                return try JSONResponse.make(result, status: result.status == .running ? .accepted : .ok)
            },
            // A plain GET of the doorbell (no upgrade): authenticated, then told how to connect.
            Route(method: .get, path: "/v1/me/push", audience: .user) { _, _ in
                throw ServiceError.upgradeRequired
            },
            // §7.2 webhooks
            Route(method: .post, path: "/v1/hooks/:token", audience: .webhook) { request, context in
                try await self.webhook(request, token: context.pathParameter("token"))
            },
        ]
        routes += onCallRoutes
        routes += incidentRoutes
        routes += opsgenieRoutes
        routes += webPushRoutes
        routes += heartbeatRoutes
        routes += opsgenieHeartbeatRoutes
        routes += webSessionRoutes
        routes += webAppRoutes
        return routes
    }

    /// The router for plain HTTP requests.
    public func router() -> Router<NottyRequestContext> {
        let router = Router(context: NottyRequestContext.self)
        router.add(
            middleware: EnvelopeMiddleware(
                metrics: service.metrics, clock: service.clock, maxBodyBytes: service.config.maxBodyBytes,
                strictTransport: service.config.servesHTTPS, trustedProxies: TrustedProxies(service.config.trustedProxies)))
        let anyone = router.group()
        let apps = router.group().add(middleware: AppAuthentication(service: service))
        let users = router.group().add(middleware: UserAuthentication(service: service))
        for route in table {
            let group =
                switch route.audience {
                case .anyone, .webhook: anyone
                case .app: apps
                case .user: users
                }
            group.on(RouterPath(route.path), method: route.method, use: route.handle)
        }
        let dialects = dialectRoutes
        // The web inbox's `GET /` shares its path with ntfy's `POST /` and `PUT /`: those are not 405s.
        Self.answerOtherMethods(on: router, methodsByPath: methodsByPath, except: Set(dialects.map { "\($0.method.rawValue) \($0.path)" }))
        for route in dialects { anyone.on(RouterPath(route.path), method: route.method, use: route.handle) }
        return router
    }

    /// Every path and the methods it serves, in the table's order; any other method gets `405`
    /// with `Allow` (before authentication: the method is wrong whoever asks).
    var methodsByPath: [(String, [HTTPRequest.Method])] {
        var result: [(String, [HTTPRequest.Method])] = []
        for route in table {
            if let index = result.firstIndex(where: { $0.0 == route.path }) {
                result[index].1.append(route.method)
            } else {
                result.append((route.path, [route.method]))
            }
        }
        return result
    }

    private static func answerOtherMethods(
        on router: Router<NottyRequestContext>, methodsByPath: [(String, [HTTPRequest.Method])], except: Set<String> = []
    ) {
        let every: [HTTPRequest.Method] = [.get, .head, .post, .put, .patch, .delete, .options, .trace, HTTPRequest.Method("QUERY")!]
        for (path, allowed) in methodsByPath {
            let allow = allowed.map(\.rawValue).joined(separator: ", ")
            for method in every where !allowed.contains(method) && !except.contains("\(method.rawValue) \(path)") {
                router.on(RouterPath(path), method: method) { _, _ -> Response in
                    throw MethodNotAllowed(allow: allow)
                }
            }
        }
    }

    private func metrics() -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "text/plain; version=0.0.4; charset=utf-8"
        service.metrics.doorbellConnections.record(Int64(service.hub.connectionCount))
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: service.metrics.render())))
    }

    /// Which bell a WebSocket upgrade rings: the doorbell (`/v1/me/push`, PROTOCOL.md §3) or an ntfy
    /// topic's `ws` (PROTOCOL.md §8.2); nil for any other path. Throws when the credentials are wrong.
    func bellPlan(for request: Request) async throws -> BellPlan? {
        let segments = request.uri.path.split(separator: "/")
        let counted: @Sendable () -> Void = { [metrics = service.metrics] in metrics.doorbellFrames.increment() }
        if segments == ["v1", "me", "push"] {
            // A browser's WebSocket carries its session cookie, and its Origin says whose page opened it.
            let (user, credential) = try await service.auth.authenticateStream(
                bearer: try WebSession.userToken(request, sameOriginOnly: true, config: service.config))
            let full = request.uri.form["payload"] == "full"
            return BellPlan(
                hub: service.hub, userId: user, kind: full ? .feed(FullDoorbellFeed(inbox: service.inbox, userId: user)) : .doorbell,
                ticks: false, counted: counted, credential: credential)
        }
        if segments.count == 2, segments[1] == "ws" {
            let (userId, feed) = try await ntfyFeed(topic: segments[0], query: Self.query(request.uri), base: baseURL(request)) { event in
                String(decoding: event.jsonBytes(), as: UTF8.self)
            }
            return BellPlan(hub: service.hub, userId: userId, kind: .feed(feed), ticks: true, counted: nil)
        }
        return nil
    }

    /// The inbox's events for the ntfy topic in a path's `segment` (percent-encoded), each as
    /// `encode` writes it, with the replay `query` asks for (`since`, `poll`); throws as the
    /// routes answer an unknown topic.
    private func ntfyFeed(
        topic segment: Substring, query: [String: String], base: String, encode: @escaping @Sendable (NtfyAnswer) -> String
    ) async throws -> (userId: String, feed: NtfyBellFeed) {
        let topic = String(segment).removingPercentEncoding ?? String(segment)
        let subscription = try await service.inbox.topic(token: topic)
        let follower = NtfyFollower(inbox: service.inbox, userId: subscription.userId, topic: topic, baseURL: base)
        return (subscription.userId, NtfyBellFeed(follower: follower, replay: NtfyFollower.Replay(query: query), encode: encode))
    }

    /// The ntfy subscription a `GET /TOPIC/json|sse` opens (PROTOCOL.md §8.2), with its `open` and
    /// replay read; nil when it is not one (or `poll=1`, a plain answer). Throws as the route
    /// would (an unknown topic), which then answers it.
    func ntfyStreamPlan(for request: Request) async throws -> NtfyStreamPlan? {
        let segments = request.uri.path.split(separator: "/")
        guard segments.count == 2, let format = ["json": StreamFormat.json, "sse": .sse][String(segments[1])] else { return nil }
        let query = Self.query(request.uri)
        guard !NtfyFollower.Replay.isPoll(query["poll"]) else { return nil }
        let (userId, feed) = try await ntfyFeed(topic: segments[0], query: query, base: baseURL(request), encode: format.text)
        return NtfyStreamPlan(hub: service.hub, userId: userId, feed: feed, opening: try await feed.opening(), contentType: format.contentType)
    }

    // MARK: - Handlers

    private func health() async throws -> Response {
        do {
            try await service.storage.ping()
            return try JSONResponse.make(["status": "ok"])
        } catch {
            throw ServiceError.serviceUnavailable("storage does not answer")
        }
    }

    private func token(_ request: Request, _ context: NottyRequestContext) async throws -> Response {
        var request = request
        let type = request.headers[.contentType]?.lowercased() ?? ""
        guard type.hasPrefix("application/x-www-form-urlencoded") else {
            throw ServiceError.oauth(.badRequest, "invalid_request", "send the token request form-encoded (application/x-www-form-urlencoded)")
        }
        // The client's credentials come in the form (client_secret_post) or as HTTP Basic
        // (client_secret_basic), as the discovery document says.
        let form = try BasicCredentials.merge(
            request.headers[.authorization], into: FormFields.urlencoded(String(decoding: try await request.rawBody(limit: limit), as: UTF8.self)))
        var headers = HTTPFields()
        headers[.cacheControl] = "no-store"
        return try JSONResponse.make(try await service.auth.token(form: form, address: context.remoteAddress), headers: headers)
    }

    private func revoke(_ request: Request) async throws -> Response {
        var request = request
        let form = FormFields.urlencoded(String(decoding: try await request.rawBody(limit: limit), as: UTF8.self))
        guard let token = form["token"] else { throw ServiceError.oauth(.badRequest, "invalid_request", "token is required") }
        try await service.auth.revoke(tokens: [token])
        return JSONResponse.empty(.ok)
    }

    private func publish(_ request: Request, app: AppRecord) async throws -> Response {
        var request = request
        let body = try await request.jsonBody(limit: limit)
        let notification = try await service.publishing.publish(app: app, unsId: request.headers[HTTPField.Name("X-UNS-ID")!], body: body)
        var headers = HTTPFields()
        let base = request.uri.path.hasPrefix("/v1.0") ? "/v1.0" : "/beta"
        headers[.location] = "\(base)/me/notifications/\(notification.id)"
        return try JSONResponse.make(notification, status: .created, headers: headers)
    }

    private func webhook(_ request: Request, token: String) async throws -> Response {
        let ids = try await service.publishing.webhook(token: token, try await webhookRequest(request))
        return try JSONResponse.make(WebhookAnswer(ids: ids))
    }

    /// Where this service is reached, for URLs it hands out: `--public-url`, else the request's
    /// `Host` (with `https` when it came over TLS).
    func baseURL(_ request: Request) -> String {
        if let url = service.config.publicURL { return url }
        let scheme = service.config.tlsCertPath == nil ? "http" : "https"
        let host = request.head.authority ?? "\(service.config.host):\(service.config.port)"
        return "\(scheme)://\(host)"
    }

    private func deleteByApp(_ request: Request, app: AppRecord, appNotificationId: String) async throws -> Response {
        try await service.publishing.deleteByApp(app: app, unsId: request.headers[HTTPField.Name("X-UNS-ID")!], appNotificationId: appNotificationId)
        return JSONResponse.empty(.noContent)
    }

    private func changes(_ request: Request, user: String) async throws -> Response {
        let query = request.uri.form
        let since = try service.inbox.parseFeedCursor(query["since"])
        let limit = try Self.integer(query["limit"], name: "limit", default: 500, range: 1...5000)
        var headers = pollHeader
        if let tag = request.headers[.ifNoneMatch] {
            let wanted = tag.replacingOccurrences(of: "W/", with: "").trimmingCharacters(in: CharacterSet(charactersIn: "\" "))
            let latest = try await service.inbox.latestCursor(userId: user)
            if wanted == String(latest) {
                headers[.eTag] = "\"\(latest)\""
                return JSONResponse.empty(.notModified, headers: headers)
            }
        }
        let page = try await service.inbox.changes(userId: user, cursor: since, limit: limit)
        headers[.eTag] = "\"\(page.cursor)\""
        return try JSONResponse.make(page, headers: headers)
    }

    private func list(_ request: Request, user: String) async throws -> Response {
        let query = request.uri.form
        var view = NotificationView.all
        if let name = query["view"] {
            guard let parsed = NotificationView(name: name) else {
                throw ServiceError.badRequest("view must be one of \(NotificationView.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            view = parsed
        }
        let top = try Self.integer(query["top"], name: "top", default: 100, range: 1...1000)
        let skip = try Self.integer(query["skip"], name: "skip", default: 0, range: 0...Int(Int32.max))
        let items = try await service.inbox.list(userId: user, view: view, top: top, skip: skip, search: query["search"] ?? query["$search"])
        return try JSONResponse.make(NotificationList(value: items), headers: pollHeader)
    }

    private func patch(_ request: Request, user: String, device: String?, id: String) async throws -> Response {
        var request = request
        let body = try await request.jsonBody(limit: limit)
        let mutation: Mutation
        do {
            mutation = try Mutation(fields: try JSONFields(body: body), id: id)
        } catch {
            throw ServiceError.badRequest(error.message)
        }
        guard mutation.operation == .patch else { throw ServiceError.badRequest("op delete goes with DELETE or the batch route") }
        let result = try await service.inbox.mutate(userId: user, device: device, [mutation])[0]
        guard result.status == 200, let notification = result.notification else {
            throw ServiceError.notFound(result.error?.message ?? "no such notification")
        }
        return try JSONResponse.make(notification)
    }

    private func batch(_ request: Request, user: String, device: String?) async throws -> Response {
        var request = request
        let body = try await request.jsonBody(limit: limit)
        let items: [JSONValue]
        do {
            items = try JSONFields(body: body).array("mutations", required: true)!
        } catch {
            throw ServiceError.badRequest(error.message)
        }
        guard items.count <= 1000 else { throw ServiceError.badRequest("at most 1000 mutations per batch") }
        // Parse each item on its own: one bad item gets its own 400 and does not fail the others.
        var parsed: [Int: Mutation] = [:]
        var results = [MutationResult?](repeating: nil, count: items.count)
        for (index, item) in items.enumerated() {
            do {
                parsed[index] = try Mutation(fields: try JSONFields(value: item, what: "mutations[\(index)]"), id: nil)
            } catch {
                var itemId = ""
                if case .object(let object) = item, case .string(let id)? = object["id"] { itemId = id }
                var mutationId: String?
                if case .object(let object) = item, case .string(let mid)? = object["mutationId"] { mutationId = mid }
                results[index] = MutationResult(
                    id: itemId, mutationId: mutationId, status: 400, error: ErrorBody(code: "badRequest", message: error.message))
            }
        }
        let order = parsed.keys.sorted()
        let applied = try await service.inbox.mutate(userId: user, device: device, order.map { parsed[$0]! })
        for (index, result) in zip(order, applied) { results[index] = result }
        return try JSONResponse.make(BatchResponse(results: results.map { $0! }))
    }

    static func integer(_ text: String?, name: String, default value: Int, range: ClosedRange<Int>) throws -> Int {
        guard let text else { return value }
        guard let number = Int(text) else { throw ServiceError.badRequest("\(name) must be a whole number") }
        guard range.contains(number) else { throw ServiceError.badRequest("\(name) must be between \(range.lowerBound) and \(range.upperBound)") }
        return number
    }
}
