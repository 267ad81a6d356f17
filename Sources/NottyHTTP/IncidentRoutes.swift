import Foundation
import HTTPTypes
import Hummingbird
import NottyCore
import NottyIncidents
import NottyService
import NottyWebhooks

/// The incident doors (PROTOCOL.md §16): what monitoring tools send PagerDuty, answered as
/// PagerDuty answers. The key is in the body; each is a hook's token.
extension Routes {
    var incidentRoutes: [Route] {
        [
            Route(
                method: .post, path: "/v2/enqueue", audience: .webhook,
                handle: speaking(.pagerDuty) { request, _ in
                    try await self.pagerDuty(request) { body throws(PagerDutyRefusal) in try PagerDutyEvent.alert(body) }
                }),
            Route(
                method: .post, path: "/v2/change/enqueue", audience: .webhook,
                handle: speaking(.pagerDuty) { request, _ in
                    try await self.pagerDuty(request) { body throws(PagerDutyRefusal) in try PagerDutyEvent.change(body) }
                }),
        ]
    }

    /// Reads a PagerDuty event with `parse`, hands it to the service and answers `202` as
    /// PagerDuty does (a refused event: `400 invalid event` with every problem found).
    private func pagerDuty(_ request: Request, parse: (Data) throws(PagerDutyRefusal) -> PagerDutyEvent) async throws -> Response {
        var request = request
        let body = try await request.rawBody(limit: service.config.maxWebhookBodyBytes)
        let event: PagerDutyEvent
        do throws(PagerDutyRefusal) {
            event = try parse(body)
        } catch {
            return try JSONResponse.make(error.json, status: .badRequest)
        }
        let answer =
            switch try await service.publishing.pagerDuty(event) {
            case .alert(let dedupKey): PagerDutyAnswer.alert(dedupKey: dedupKey)
            case .change: PagerDutyAnswer.change
            }
        return try JSONResponse.make(answer, status: .accepted)
    }
}

// MARK: - Opsgenie's Alert API (PROTOCOL.md §16.2)

extension Routes {
    var opsgenieRoutes: [Route] {
        var routes = [
            Route(
                method: .post, path: "/v2/alerts", audience: .webhook,
                handle: speaking(.opsgenie) { request, _ in
                    var request = request
                    let body = try await request.rawBody(limit: self.service.config.maxWebhookBodyBytes)
                    let alert: Opsgenie.Alert
                    do throws(Opsgenie.Refusal) {
                        alert = try Opsgenie.alert(body)
                    } catch {
                        return try Self.opsgenieRefused(error)
                    }
                    do {
                        let requestId = try await self.service.publishing.opsgenieCreate(key: Self.genieKey(request), alert)
                        return try JSONResponse.make(Opsgenie.accepted(requestId), status: .accepted)
                    } catch let refusal as Opsgenie.Refusal {
                        return try Self.opsgenieRefused(refusal)
                    }
                }),
            opsgenieListRoute,
            Route(
                method: .get, path: "/v2/alerts/requests/:requestId", audience: .webhook,
                handle: speaking(.opsgenie) { request, context in
                    let data = try await self.service.publishing.opsgenieRequest(
                        key: Self.genieKey(request), requestId: context.pathParameter("requestId"))
                    return try JSONResponse.make(Opsgenie.data(data), status: .ok)
                }),
            Route(
                method: .get, path: "/v2/alerts/:identifier", audience: .webhook,
                handle: speaking(.opsgenie) { request, context in
                    let identifier = try Publishing.OpsgenieIdentifier(
                        context.pathParameter("identifier"), type: request.uri.queryParameters.get("identifierType"))
                    let alert = try await self.service.publishing.opsgenieGet(key: Self.genieKey(request), identifier)
                    return try JSONResponse.make(Opsgenie.data(alert), status: .ok)
                }),
            Route(
                method: .delete, path: "/v2/alerts/:identifier", audience: .webhook,
                handle: speaking(.opsgenie) { request, context in
                    try await self.opsgenieChange(request, context, .delete)
                }),
        ]
        for action in Publishing.OpsgenieAction.allCases where action != .delete {
            routes.append(
                Route(
                    method: .post, path: "/v2/alerts/:identifier/\(action.rawValue.lowercased())", audience: .webhook,
                    handle: speaking(.opsgenie) { request, context in try await self.opsgenieChange(request, context, action) }))
        }
        for field in Opsgenie.EditField.allCases {
            let methods: [HTTPRequest.Method] =
                switch field {
                case .notes: [.post]
                case .tags, .details: [.post, .delete]
                case .message, .description, .priority: [.put]
                }
            for method in methods {
                routes.append(
                    Route(
                        method: method, path: "/v2/alerts/:identifier/\(field.rawValue)", audience: .webhook,
                        handle: speaking(.opsgenie) { request, context in try await self.opsgenieEdit(request, context, field) }))
            }
        }
        routes.append(opsgenieNotesRoute)
        return routes
    }

    /// An edit: its body, and for a `DELETE` the list in the query (`tags=`, `keys=`).
    private func opsgenieEdit(_ request: Request, _ context: NottyRequestContext, _ field: Opsgenie.EditField) async throws -> Response {
        var request = request
        let body = try await request.rawBody(limit: service.config.maxWebhookBodyBytes)
        let parameters = request.uri.queryParameters
        let removing: String? =
            request.method == .delete ? (parameters.get(field == .tags ? "tags" : "keys") ?? "") : nil
        let edit: Opsgenie.Edit
        do throws(Opsgenie.Refusal) {
            edit = try Opsgenie.edit(field, body: body, removing: removing) { parameters.get($0) }
        } catch {
            return try Self.opsgenieRefused(error)
        }
        let identifier = try Publishing.OpsgenieIdentifier(context.pathParameter("identifier"), type: parameters.get("identifierType"))
        do {
            let requestId = try await service.publishing.opsgenieEdit(key: Self.genieKey(request), identifier, edit)
            return try JSONResponse.make(Opsgenie.accepted(requestId), status: .accepted)
        } catch let refusal as Opsgenie.Refusal {
            return try Self.opsgenieRefused(refusal)
        }
    }

    /// Opsgenie's `422` with each field's problem.
    static func opsgenieRefused(_ refusal: Opsgenie.Refusal) throws -> Response {
        try JSONResponse.make(
            Opsgenie.error("Request body is not processable. Please check the errors.", errors: refusal.errors), status: .unprocessableContent)
    }

    /// A state request: its body's `user` (who did it) and, for a snooze, `endTime`.
    private func opsgenieChange(_ request: Request, _ context: NottyRequestContext, _ action: Publishing.OpsgenieAction) async throws -> Response {
        var request = request
        let body = try await request.rawBody(limit: service.config.maxWebhookBodyBytes)
        let json = body.isEmpty ? nil : JSONParser.parse(body)
        func text(_ key: String) -> String? { if case .object(let object)? = json, case .string(let value)? = object[key] { value } else { nil } }
        var until: Date?
        if let end = text("endTime") {
            guard let parsed = ISOTime.parse(end) else { throw ServiceError.badRequest("endTime must be an ISO 8601 time") }
            until = parsed
        }
        let identifier = try Publishing.OpsgenieIdentifier(
            context.pathParameter("identifier"), type: request.uri.queryParameters.get("identifierType"))
        let requestId = try await service.publishing.opsgenieChange(
            key: Self.genieKey(request), identifier, action, user: text("user"), note: text("note"), until: until)
        return try JSONResponse.make(Opsgenie.accepted(requestId), status: .accepted)
    }

    /// The key of `Authorization: GenieKey KEY`.
    static func genieKey(_ request: Request) -> String? {
        guard let header = request.headers[.authorization] else { return nil }
        // The scheme in any case, then the key without the spaces around it (compared as bytes).
        let bytes = Array(header.utf8), scheme = Array("geniekey ".utf8)
        guard bytes.count > scheme.count, zip(bytes, scheme).allSatisfy({ $0 | 0x20 == $1 }) else { return nil }
        let key = bytes[scheme.count...].drop { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }
        return String(decoding: key.reversed().drop { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }.reversed(), as: UTF8.self)
    }
}

extension Routes {
    /// `GET /v2/alerts/{identifier}/notes`: the alert's notes, Opsgenie's list.
    var opsgenieNotesRoute: Route {
        Route(
            method: .get, path: "/v2/alerts/:identifier/notes", audience: .webhook,
            handle: speaking(.opsgenie) { request, context in
                let parameters = request.uri.queryParameters
                let limit = try Self.wholeNumber(parameters.get("limit"), "limit")
                let identifier = try Publishing.OpsgenieIdentifier(context.pathParameter("identifier"), type: parameters.get("identifierType"))
                let page = try await self.service.publishing.opsgenieNotes(
                    key: Self.genieKey(request), identifier, limit: limit, order: parameters.get("order"), offset: parameters.get("offset"),
                    direction: parameters.get("direction"))
                let answer: [String: JSONValue] = [
                    "data": .array(page.notes), "paging": .object(page.next.map { ["next": .string($0)] } ?? [:]), "took": .number(0),
                    "requestId": .string(UUID().uuidString.lowercased()),
                ]
                return try JSONResponse.make(JSONValue.object(answer), status: .ok)
            })
    }

    /// A query parameter `name` that is a whole number when given (`422` with words when not).
    static func wholeNumber(_ text: String?, _ name: String) throws -> Int? {
        guard let text else { return nil }
        guard let value = Int(text) else { throw ServiceError.unprocessable("\(name) must be a whole number") }
        return value
    }

    /// `GET /v2/alerts`: the key's alerts, Opsgenie's list.
    var opsgenieListRoute: Route {
        Route(
            method: .get, path: "/v2/alerts", audience: .webhook,
            handle: speaking(.opsgenie) { request, _ in
                let parameters = request.uri.queryParameters
                let alerts = try await self.service.publishing.opsgenieList(
                    key: Self.genieKey(request), query: parameters.get("query"), limit: Self.wholeNumber(parameters.get("limit"), "limit"),
                    offset: Self.wholeNumber(parameters.get("offset"), "offset"),
                    sort: parameters.get("sort"), order: parameters.get("order"))
                return try JSONResponse.make(Opsgenie.data(.array(alerts)), status: .ok)
            })
    }
}
