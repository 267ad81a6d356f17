import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import NottyCore
import NottyService
import NottyWebhooks

/// Heartbeats (PROTOCOL.md §16.3): the user's (or a team's, `?team=T`) under `/v1/me`, and the
/// ping URLs, whose token is the credential.
extension Routes {
    var heartbeatRoutes: [Route] {
        var routes = [
            Route(method: .get, path: "/v1/me/heartbeats", audience: .user) { request, context in
                try JSONResponse.make(
                    HeartbeatList(value: try await self.service.heartbeats.list(userId: context.requireUser(), team: Self.team(request))))
            },
            Route(method: .post, path: "/v1/me/heartbeats", audience: .user) { request, context in
                var request = request
                let body = try await request.jsonBody(limit: self.limit)
                let heartbeat = try ServiceError.decoding { () throws(ValidationError) in try HeartbeatRequest(body: body) }
                return try JSONResponse.make(
                    try await self.service.heartbeats.add(userId: context.requireUser(), heartbeat, baseURL: self.baseURL(request)), status: .created)
            },
            Route(method: .delete, path: "/v1/me/heartbeats/:name", audience: .user) { request, context in
                try await self.service.heartbeats.remove(userId: context.requireUser(), name: context.pathParameter("name"), team: Self.team(request))
                return JSONResponse.empty(.noContent)
            },
        ]
        for (verb, paused) in [("pause", true), ("resume", false)] {
            routes.append(
                Route(method: .post, path: "/v1/me/heartbeats/:name/\(verb)", audience: .user) { request, context in
                    try JSONResponse.make(
                        try await self.service.heartbeats.pause(
                            userId: context.requireUser(), name: context.pathParameter("name"), team: Self.team(request), paused: paused))
                })
        }
        // The ping URLs: what cron, a script or a monitor calls, in whichever method it has.
        for method in [HTTPRequest.Method.get, .head, .post] {
            routes.append(
                Route(method: method, path: "/v1/heartbeats/:token", audience: .webhook) { _, context in
                    try await self.service.heartbeats.ping(token: context.pathParameter("token"), failed: false)
                    return Self.pinged(method)
                })
            routes.append(
                Route(method: method, path: "/v1/heartbeats/:token/fail", audience: .webhook) { _, context in
                    try await self.service.heartbeats.ping(token: context.pathParameter("token"), failed: true)
                    return Self.pinged(method)
                })
        }
        return routes
    }

    /// Opsgenie's Heartbeat API on the same heartbeats (`Authorization: GenieKey TOKEN`: the
    /// hook's feed's), in Opsgenie's shapes.
    var opsgenieHeartbeatRoutes: [Route] {
        let heartbeats = service.heartbeats
        var routes = [
            Route(
                method: .post, path: "/v2/heartbeats", audience: .webhook,
                handle: speaking(.opsgenie) { request, _ in
                    switch try await self.opsgenieHeartbeat(request, creating: true) {
                    case .failure(let refusal): return try Self.unprocessable(refusal)
                    case .success(let body):
                        let made = try await heartbeats.opsgenieCreate(key: Self.genieKey(request), body)
                        return try JSONResponse.make(Opsgenie.data(Opsgenie.heartbeatSummary(made)), status: .created)
                    }
                }),
            Route(
                method: .get, path: "/v2/heartbeats", audience: .webhook,
                handle: speaking(.opsgenie) { request, _ in
                    let all = try await heartbeats.opsgenieList(key: Self.genieKey(request))
                    return try JSONResponse.make(Opsgenie.data(.object(["heartbeats": .array(all.map(Opsgenie.heartbeatObject))])))
                }),
            Route(
                method: .get, path: "/v2/heartbeats/:name", audience: .webhook,
                handle: speaking(.opsgenie) { request, context in
                    let found = try await heartbeats.opsgenieGet(key: Self.genieKey(request), name: context.pathParameter("name"))
                    return try JSONResponse.make(Opsgenie.data(Opsgenie.heartbeatObject(found)))
                }),
            Route(
                method: .patch, path: "/v2/heartbeats/:name", audience: .webhook,
                handle: speaking(.opsgenie) { request, context in
                    switch try await self.opsgenieHeartbeat(request, creating: false) {
                    case .failure(let refusal): return try Self.unprocessable(refusal)
                    case .success(let body):
                        let changed = try await heartbeats.opsgenieUpdate(key: Self.genieKey(request), name: context.pathParameter("name"), body)
                        return try JSONResponse.make(Opsgenie.data(Opsgenie.heartbeatSummary(changed)))
                    }
                }),
            Route(
                method: .delete, path: "/v2/heartbeats/:name", audience: .webhook,
                handle: speaking(.opsgenie) { request, context in
                    try await heartbeats.opsgenieDelete(key: Self.genieKey(request), name: context.pathParameter("name"))
                    return try JSONResponse.make(Opsgenie.result("Deleted"))
                }),
        ]
        for (verb, enabled) in [("enable", true), ("disable", false)] {
            routes.append(
                Route(
                    method: .post, path: "/v2/heartbeats/:name/\(verb)", audience: .webhook,
                    handle: speaking(.opsgenie) { request, context in
                        let changed = try await heartbeats.opsgenieEnable(
                            key: Self.genieKey(request), name: context.pathParameter("name"), enabled: enabled)
                        return try JSONResponse.make(Opsgenie.data(Opsgenie.heartbeatSummary(changed)))
                    }))
        }
        for method in [HTTPRequest.Method.get, .head, .post] {
            routes.append(
                Route(
                    method: method, path: "/v2/heartbeats/:name/ping", audience: .webhook,
                    handle: speaking(.opsgenie) { request, context in
                        try await heartbeats.opsgeniePing(key: Self.genieKey(request), name: context.pathParameter("name"))
                        if method == .head { return Response(status: .accepted) }
                        return try JSONResponse.make(Opsgenie.result("PONG - Heartbeat received"), status: .accepted)
                    }))
        }
        return routes
    }

    /// An Opsgenie heartbeat's create or update body, or why it cannot be processed.
    private func opsgenieHeartbeat(_ request: Request, creating: Bool) async throws -> Result<Opsgenie.Heartbeat, Opsgenie.Refusal> {
        var request = request
        let body = try await request.rawBody(limit: service.config.maxWebhookBodyBytes)
        do throws(Opsgenie.Refusal) {
            return .success(try Opsgenie.heartbeat(body, creating: creating))
        } catch {
            return .failure(error)
        }
    }

    private static func unprocessable(_ refusal: Opsgenie.Refusal) throws -> Response {
        try JSONResponse.make(
            Opsgenie.error("Request body is not processable. Please check the errors.", errors: refusal.errors), status: .unprocessableContent)
    }

    /// `?team=T`: a team's heartbeats rather than the user's own.
    private static func team(_ request: Request) -> String? {
        request.uri.queryParameters.get("team").flatMap { $0.isEmpty ? nil : $0 }
    }

    /// A ping's answer: `OK` (no body for `HEAD`).
    private static func pinged(_ method: HTTPRequest.Method) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "text/plain; charset=utf-8"
        headers[.cacheControl] = "no-store"
        return Response(status: .ok, headers: headers, body: method == .head ? .init() : .init(byteBuffer: ByteBuffer(string: "OK\n")))
    }
}
