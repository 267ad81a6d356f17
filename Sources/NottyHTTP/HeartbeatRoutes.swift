import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import NottyCore
import NottyService

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
