import Foundation
import NottyCore

/// Web Push (PROTOCOL.md §14) as the rest of the service sees it. The engine is `NottyWebPush`'s
/// `WebPushDelivery`, a module of its own over this module's storage protocols, the way paging's
/// is; `NotificationService` is composed with it. The routes subscribe and unsubscribe browsers;
/// the service tells it of every change; a background job runs its retries.
public protocol WebPush: Sendable {
    /// `GET /v1/webpush/key`: the service's VAPID public key, base64url (the browser's
    /// `applicationServerKey`).
    func publicKey() async throws -> String
    /// `POST /v1/me/webpush` with `PushSubscription.toJSON()`: the browser is pushed what
    /// arrives from now on. The same endpoint again renews its keys.
    func subscribe(userId: String, deviceId: String?, request: WebPushSubscriptionRequest) async throws -> WebPushSubscription
    /// `DELETE /v1/me/webpush/{id}`.
    func unsubscribe(userId: String, id: String) async throws
    /// The storage committed changes for these users (their newest cursors).
    func changed(_ cursors: [String: Int64])
    /// What a stopped instance left unsent, then what failed for now, tried again: a loop
    /// that returns when cancelled (a background job).
    func runRetries() async
}
