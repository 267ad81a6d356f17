import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import NottyCore
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
            return Response(
                status: .badRequest, headers: [.contentType: "application/json"], body: ResponseBody(byteBuffer: ByteBuffer(string: error.body)))
        }
        let answer =
            switch try await service.publishing.pagerDuty(event) {
            case .alert(let dedupKey): PagerDutyAnswer.alert(dedupKey: dedupKey)
            case .change: PagerDutyAnswer.change
            }
        return Response(status: .accepted, headers: [.contentType: "application/json"], body: ResponseBody(byteBuffer: ByteBuffer(string: answer)))
    }
}
