import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import NottyCore
import NottyService

/// On call (PROTOCOL.md §13.2): a team's schedule and overrides, where the user is on call, the
/// calendar feed behind its secret URL, the user's contacts, and a team's escalation policy.
extension Routes {
    var onCallRoutes: [Route] {
        [
            Route(method: .get, path: "/v1/teams/:name/oncall", audience: .user) { _, context in
                try JSONResponse.make(try await self.service.onCall.view(team: context.pathParameter("name"), userId: context.requireUser()))
            },
            Route(method: .put, path: "/v1/teams/:name/oncall", audience: .user) { request, context in
                var request = request
                let body = try await request.jsonBody(limit: self.limit)
                let rotation = try ServiceError.decoding { () throws(ValidationError) in try RotationRequest(body: body) }
                return try JSONResponse.make(
                    try await self.service.onCall.setRotation(team: context.pathParameter("name"), by: context.requireUser(), rotation))
            },
            Route(method: .post, path: "/v1/teams/:name/oncall/overrides", audience: .user) { request, context in
                var request = request
                let body = try await request.jsonBody(limit: self.limit)
                let override = try ServiceError.decoding { () throws(ValidationError) in try OverrideRequest(body: body) }
                return try JSONResponse.make(
                    try await self.service.onCall.addOverride(team: context.pathParameter("name"), by: context.requireUser(), override),
                    status: .created)
            },
            Route(method: .delete, path: "/v1/teams/:name/oncall/overrides/:id", audience: .user) { _, context in
                try await self.service.onCall.removeOverride(
                    team: context.pathParameter("name"), by: context.requireUser(), id: context.pathParameter("id"))
                return JSONResponse.empty(.noContent)
            },
            Route(method: .post, path: "/v1/teams/:name/oncall/calendar", audience: .user) { request, context in
                try JSONResponse.make(
                    try await self.service.onCall.makeCalendar(
                        team: context.pathParameter("name"), userId: context.requireUser(), baseURL: self.baseURL(request)),
                    status: .created)
            },
            Route(method: .get, path: "/v1/me/oncall", audience: .user) { _, context in
                try JSONResponse.make(try await self.service.onCall.mine(userId: context.requireUser()))
            },
            // The feed: its URL is the credential, as an ntfy topic's is.
            Route(method: .get, path: "/v1/calendars/:token", audience: .webhook) { _, context in
                let feed = try await self.service.onCall.calendarFeed(token: context.pathParameter("token"))
                var headers = HTTPFields()
                headers[.contentType] = ICalendar.mediaType
                headers[.cacheControl] = "private, max-age=300"
                return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: feed)))
            },
            Route(method: .get, path: "/v1/me/contacts", audience: .user) { _, context in
                try JSONResponse.make(try await self.service.onCall.contacts(userId: context.requireUser()))
            },
            Route(method: .post, path: "/v1/me/contacts", audience: .user) { request, context in
                var request = request
                let body = try await request.jsonBody(limit: self.limit)
                let contact = try ServiceError.decoding { () throws(ValidationError) in try ContactRequest(body: body) }
                return try JSONResponse.make(try await self.service.onCall.addContact(userId: context.requireUser(), contact), status: .created)
            },
            Route(method: .delete, path: "/v1/me/contacts/:id", audience: .user) { _, context in
                try await self.service.onCall.removeContact(userId: context.requireUser(), id: context.pathParameter("id"))
                return JSONResponse.empty(.noContent)
            },
            Route(method: .post, path: "/v1/me/contacts/:id/test", audience: .user) { _, context in
                try JSONResponse.make(try await self.service.onCall.testContact(userId: context.requireUser(), id: context.pathParameter("id")))
            },
            Route(method: .get, path: "/v1/teams/:name/escalations", audience: .user) { _, context in
                try JSONResponse.make(
                    try await self.service.inbox.teamEscalationRules(team: context.pathParameter("name"), userId: context.requireUser()))
            },
            Route(method: .post, path: "/v1/teams/:name/escalations", audience: .user) { request, context in
                var request = request
                let body = try await request.jsonBody(limit: self.limit)
                let rule = try ServiceError.decoding { () throws(ValidationError) in try EscalationRuleRequest(body: body) }
                return try JSONResponse.make(
                    try await self.service.inbox.addTeamEscalationRule(team: context.pathParameter("name"), userId: context.requireUser(), rule),
                    status: .created)
            },
            Route(method: .delete, path: "/v1/teams/:name/escalations/:id", audience: .user) { _, context in
                try await self.service.inbox.removeTeamEscalationRule(
                    team: context.pathParameter("name"), userId: context.requireUser(), id: context.pathParameter("id"))
                return JSONResponse.empty(.noContent)
            },
        ]
    }
}
