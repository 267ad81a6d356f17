import Foundation
import HTTPTypes
import Hummingbird
import NottyCore
import NottyService

/// Web Push (PROTOCOL.md §14): the service's VAPID public key, and a browser's subscription.
extension Routes {
    var webPushRoutes: [Route] {
        [
            // Public by nature: the browser's applicationServerKey.
            Route(method: .get, path: "/v1/webpush/key", audience: .anyone) { _, _ in
                try JSONResponse.make(["publicKey": try await self.service.webPush.publicKey()])
            },
            Route(method: .post, path: "/v1/me/webpush", audience: .user) { request, context in
                var request = request
                let body = try await request.jsonBody(limit: self.limit)
                let subscription = try ServiceError.decoding { () throws(ValidationError) in try WebPushSubscriptionRequest(body: body) }
                let made = try await self.service.webPush.subscribe(userId: context.requireUser(), deviceId: context.deviceId, request: subscription)
                return try JSONResponse.make(["id": made.id], status: .created)
            },
            Route(method: .delete, path: "/v1/me/webpush/:id", audience: .user) { _, context in
                try await self.service.webPush.unsubscribe(userId: context.requireUser(), id: context.pathParameter("id"))
                return JSONResponse.empty(.noContent)
            },
        ]
    }
}
