import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import NIOCore
import NottyCore
import NottyDialects
import NottyService
import NottyWebhooks
import ServiceLifecycle

/// The ntfy and Gotify doors (PROTOCOL.md §8.1): routes whose answers and errors are in that
/// dialect's JSON, so the tools that speak it read them as they would from ntfy or Gotify.
extension Routes {
    /// The dialects' error bodies.
    enum Dialect {
        case ntfy, gotify
        /// PagerDuty's Events API v2 (PROTOCOL.md §16.1).
        case pagerDuty
        /// Opsgenie's Alert API v2 (PROTOCOL.md §16.2).
        case opsgenie

        /// `error` as this dialect writes it, with its status and headers (`Retry-After`).
        func response(for answer: ErrorAnswer) -> Response {
            var headers = answer.headers
            headers[.wwwAuthenticate] = nil
            let status = answer.status
            let body: JSONValue =
                switch self {
                case .ntfy:
                    .object([
                        "code": .number(Double(status.code * 100 + 1)), "http": .number(Double(status.code)), "error": .string(answer.error.message),
                    ])
                case .gotify:
                    .object([
                        "error": .string(status.reasonPhrase), "errorCode": .number(Double(status.code)),
                        "errorDescription": .string(answer.error.message),
                    ])
                case .pagerDuty:
                    switch status.code {
                    case 400: PagerDutyRefusal(errors: [answer.error.message]).json
                    case 429: PagerDutyAnswer.throttled
                    default: .object(["status": .string(status.reasonPhrase.lowercased()), "message": .string(answer.error.message)])
                    }
                case .opsgenie: Opsgenie.error(answer.error.message)
                }
            return (try? JSONResponse.make(body, status: status, headers: headers)) ?? Response(status: status)
        }
    }

    /// A handler whose errors are answered in `dialect`'s JSON.
    func speaking(_ dialect: Dialect, _ handle: @escaping @Sendable (Request, NottyRequestContext) async throws -> Response)
        -> @Sendable (Request, NottyRequestContext) async throws -> Response
    {
        let limit = service.config.maxWebhookBodyBytes
        return { request, context in
            do {
                return try await handle(request, context)
            } catch {
                let answer = ErrorAnswer(for: error, maxBodyBytes: limit)
                if answer.isUnexpected {
                    context.logger.error("unexpected error", metadata: ["error": "\(error)", "request_id": "\(context.requestId)"])
                }
                return dialect.response(for: answer)
            }
        }
    }

    /// The ntfy and Gotify routes (the topic is the first segment, named `tenant` as on the
    /// token routes: Hummingbird's router takes one parameter name per position). They are not in ``table``: `/:tenant` matches any one
    /// segment, and a wrong method there is ntfy's `404`, not a `405` for every unknown path.
    var dialectRoutes: [Route] {
        let ntfyPublish = speaking(.ntfy) { request, context in try await self.ntfyPublish(request, topic: context.topic(), withBody: true) }
        let ntfyTrigger = speaking(.ntfy) { request, context in try await self.ntfyPublish(request, topic: context.topic(), withBody: false) }
        let ntfyJSON = speaking(.ntfy) { request, _ in try await self.ntfyJSONPublish(request) }
        let ntfyClear = speaking(.ntfy) { request, context in
            try await self.ntfyEnd(request, topic: context.topic(), sequenceId: context.pathParameter("sequence"), delete: false)
        }
        let ntfyDelete = speaking(.ntfy) { request, context in
            try await self.ntfyEnd(request, topic: context.topic(), sequenceId: context.pathParameter("sequence"), delete: true)
        }
        var routes: [Route] = [
            Route(method: .post, path: "/", audience: .webhook, handle: ntfyJSON),
            Route(method: .put, path: "/", audience: .webhook, handle: ntfyJSON),
            Route(method: .post, path: "/:tenant", audience: .webhook, handle: ntfyPublish),
            Route(method: .put, path: "/:tenant", audience: .webhook, handle: ntfyPublish),
            Route(method: .put, path: "/:tenant/:sequence/clear", audience: .webhook, handle: ntfyClear),
            // A phone's buttons (PROTOCOL.md §12): under the topic's secret URL, as the ntfy app sends them.
            Route(
                method: .post, path: "/:tenant/notty/:id/dismiss", audience: .webhook,
                handle: speaking(.ntfy) { _, context in
                    try await self.phoneDismiss(topic: context.topic(), id: context.pathParameter("id"))
                }),
            Route(
                method: .post, path: "/:tenant/notty/:id/act/:n", audience: .webhook,
                handle: speaking(.ntfy) { _, context in
                    try await self.phoneAct(topic: context.topic(), id: context.pathParameter("id"), n: context.pathParameter("n"))
                }),
            Route(method: .put, path: "/:tenant/:sequence/read", audience: .webhook, handle: ntfyClear),
            Route(method: .delete, path: "/:tenant/:sequence", audience: .webhook, handle: ntfyDelete),
            Route(
                method: .post, path: "/message", audience: .webhook, handle: speaking(.gotify) { request, _ in try await self.gotifyPublish(request) }
            ),
        ]
        // §8.2: following the inbox (a topic made by notty subscribe --ntfy).
        let ntfyStream = speaking(.ntfy) { request, context in try await self.ntfySubscribe(request, topic: context.topic()) }
        routes += [
            Route(method: .get, path: "/:tenant/json", audience: .webhook, handle: ntfyStream),
            Route(method: .get, path: "/:tenant/sse", audience: .webhook, handle: ntfyStream),
            Route(
                method: .get, path: "/:tenant/auth", audience: .webhook,
                handle: speaking(.ntfy) { _, context in
                    _ = try await self.service.inbox.topic(token: context.topic())
                    return try JSONResponse.make(["success": true])
                }),
            // A plain GET of the WebSocket (no upgrade, or a topic the upgrade refused).
            Route(
                method: .get, path: "/:tenant/ws", audience: .webhook,
                handle: speaking(.ntfy) { _, context in
                    _ = try await self.service.inbox.topic(token: context.topic())
                    throw ServiceError.upgradeRequired
                }),
        ]
        for word in ["publish", "send", "trigger"] {
            routes.append(Route(method: .get, path: "/:tenant/\(word)", audience: .webhook, handle: ntfyTrigger))
            routes.append(Route(method: .post, path: "/:tenant/\(word)", audience: .webhook, handle: ntfyTrigger))
            routes.append(Route(method: .put, path: "/:tenant/\(word)", audience: .webhook, handle: ntfyTrigger))
        }
        return routes
    }

    /// "Dismiss" on a phone: dismissed (and read) everywhere, by the topic's device.
    private func phoneDismiss(topic: String, id: String) async throws -> Response {
        let subscription = try await service.inbox.topic(token: topic)
        let device = subscription.deviceName ?? "ntfy"
        let result = try await service.inbox.mutate(
            userId: subscription.userId, device: device,
            [Mutation(id: id, change: StateChange(readState: .read, userActionState: .dismissed))])[0]
        guard result.status < 300 else { throw ServiceError.notFound("no such notification: it was deleted or has expired") }
        return try JSONResponse.make(JSONValue.object(["id": .string(id), "status": .string("dismissed")]))
    }

    /// A publisher's http action pressed on a phone: the service runs it (PROTOCOL.md §12).
    private func phoneAct(topic: String, id: String, n: String) async throws -> Response {
        let subscription = try await service.inbox.topic(token: topic)
        let number = try Self.integer(n, name: "the action number", default: 1, range: 1...NotificationAction.maxPerNotification)
        let result = try await service.actions.press(userId: subscription.userId, device: subscription.deviceName ?? "ntfy", id: id, action: number)
        // The ntfy app says a button failed when it is not answered 2xx.
        return try JSONResponse.make(result, status: result.status == .failed ? .badGateway : result.status == .running ? .accepted : .ok)
    }

    /// The request as the parsers see it: its body (within the webhook limit), headers and
    /// query (names in lower case).
    func webhookRequest(_ request: Request, withBody: Bool = true) async throws -> WebhookRequest {
        var request = request
        let body = withBody ? try await request.rawBody(limit: service.config.maxWebhookBodyBytes) : Data()
        var headers: [String: String] = [:]
        for field in request.headers { headers[field.name.canonicalName] = field.value }
        return WebhookRequest(body: body, headers: headers, query: Self.query(request.uri))
    }

    /// A request's query parameters by lower-case name (the last of repeated ones).
    static func query(_ uri: HummingbirdCore.URI) -> [String: String] {
        var query: [String: String] = [:]
        for (key, value) in uri.form { query[key.lowercased()] = value }
        return query
    }

    private func ntfyPublish(_ request: Request, topic: String, withBody: Bool) async throws -> Response {
        let parsed = try await webhookRequest(request, withBody: withBody)
        let message: NtfyMessage
        do {
            message = try Ntfy.message(parsed, withBody: withBody)
        } catch {
            throw ServiceError.badRequest(error.message)
        }
        return try JSONResponse.make(try await service.publishing.ntfyPublish(token: topic, message, bearer: parsed.bearerToken))
    }

    private func ntfyJSONPublish(_ request: Request) async throws -> Response {
        let parsed = try await webhookRequest(request)
        let topic: String, message: NtfyMessage
        do {
            (topic, message) = try Ntfy.jsonMessage(parsed)
        } catch {
            throw ServiceError.badRequest(error.message)
        }
        return try JSONResponse.make(try await service.publishing.ntfyPublish(token: topic, message, bearer: parsed.bearerToken))
    }

    private func ntfyEnd(_ request: Request, topic: String, sequenceId: String, delete: Bool) async throws -> Response {
        let parsed = try await webhookRequest(request, withBody: false)
        return try JSONResponse.make(
            try await service.publishing.ntfyEnd(token: topic, sequenceId: sequenceId, delete: delete, bearer: parsed.bearerToken))
    }

    private func gotifyPublish(_ request: Request) async throws -> Response {
        let parsed = try await webhookRequest(request)
        return try JSONResponse.make(try await service.publishing.gotifyPublish(token: Gotify.token(parsed), parsed))
    }
}

extension NottyRequestContext {
    /// The ntfy topic of a dialect route: its first path segment.
    func topic() throws -> String { try pathParameter("tenant") }
}

// MARK: - ntfy subscribers (PROTOCOL.md §8.2)

extension Routes {
    /// How an ntfy stream is written.
    enum StreamFormat {
        case json, sse

        func frame(_ event: NtfyAnswer) -> ByteBuffer { ByteBuffer(string: text(event)) }

        func text(_ event: NtfyAnswer) -> String {
            let json = String(decoding: event.jsonBytes(), as: UTF8.self)
            switch self {
            case .json:
                return json + "\n"
            case .sse:
                let head = event.event == "message" ? "id: \(event.id)\n" : "id: \(event.id)\nevent: \(event.event)\n"
                return head + "data: \(json)\n\n"
            }
        }

        var contentType: String { self == .json ? "application/x-ndjson; charset=utf-8" : "text/event-stream; charset=utf-8" }
    }

    /// `GET <base>/<topic>/json|sse`: `open`, the replay `poll`/`since` ask for, then the
    /// inbox's events as they happen, until the subscriber goes, the topic is revoked or the
    /// service stops. With `poll=1`, the replay alone.
    ///
    /// A stream is served here only where ``NtfyStreamHandler`` does not take it (behind another
    /// request on its connection, or under the in-process test router); both read the same
    /// plan (``Routes/ntfyStreamPlan(for:)``).
    private func ntfySubscribe(_ request: Request, topic: String) async throws -> Response {
        var headers = HTTPFields()
        headers[.cacheControl] = "no-cache"
        // The feed position and the replay are read here, where a failure is still an answer.
        guard let plan = try await ntfyStreamPlan(for: request) else {
            let subscription = try await service.inbox.topic(token: topic)
            let follower = NtfyFollower(inbox: service.inbox, userId: subscription.userId, topic: topic, baseURL: baseURL(request))
            let replay = try await follower.start(replay: NtfyFollower.Replay(query: Self.query(request.uri)))
            headers[.contentType] = StreamFormat.json.contentType
            var body = ByteBuffer()
            for event in replay { body.writeImmutableBuffer(StreamFormat.json.frame(event)) }
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: body))
        }
        headers[.contentType] = plan.contentType
        return Response(
            status: .ok, headers: headers,
            body: ResponseBody { writer in
                // Joined to the hub only here, where the stream is sure to end it (a subscriber gone
                // before the answer's head is written never runs this).
                let (connection, rings) = plan.hub.connect(userId: plan.userId, ticks: true)
                defer { plan.hub.disconnect(userId: plan.userId, id: connection) }
                do {
                    try await writer.write(ByteBuffer(string: plan.opening.joined()))
                    // A graceful shutdown waits for requests in progress, which a stream always is: it
                    // ends the stream (as WebSockets are closed) instead of waiting out its timeout.
                    try await withGracefulShutdownHandler {
                        // First what changed between reading the opening and joining the hub (any
                        // cursor reads the feed), then each wake; nil: the topic was revoked.
                        var wake: Int64? = 0
                        var next = rings.makeAsyncIterator()
                        while let value = wake, let frames = try await plan.feed.frames(after: value) {
                            if !frames.isEmpty { try await writer.write(ByteBuffer(string: frames.joined())) }
                            wake = await next.next()
                        }
                    } onGracefulShutdown: {
                        plan.hub.disconnect(userId: plan.userId, id: connection)
                    }
                    try await writer.finish(nil)
                } catch {
                    // The subscriber went away (or the storage did, mid-stream): nothing left to answer.
                }
            })
    }
}
