import Foundation
import NottyCore
import NottySecrets

/// Web Push (PROTOCOL.md §14): the service's VAPID key, made once for every instance, and the
/// browsers' push subscriptions, each with the feed position it was pushed up to (the feed is
/// its queue: a push that fails is sent again from there, after a restart too).
public protocol WebPushStorage: Sendable {
    /// The VAPID key pair (private sealed, public base64url): the one stored, or `candidate`
    /// when there was none (two instances starting together keep one of theirs).
    func webPushKey(orInsert candidate: (privateKey: String, publicKey: String)) async throws -> (privateKey: String, publicKey: String)
    /// Adds a subscription, or renews the one of the user with that endpoint (its keys; it
    /// keeps its id and position), unless the user has `limit` already (nil then).
    func upsertWebPushSubscription(_ subscription: WebPushSubscription, limit: Int) async throws -> WebPushSubscription?
    func deleteWebPushSubscription(id: String, userId: String?) async throws -> Bool
    /// The user's subscriptions, oldest first.
    func webPushSubscriptions(userId: String) async throws -> [WebPushSubscription]
    /// Users with a subscription whose push failed and whose retry is due by `retryDue`; with
    /// nil, every user with a subscription. At most `limit`.
    func webPushUsers(retryDue: Date?, limit: Int) async throws -> [String]
    /// Records how far a subscription was pushed, its retry time and last error; false when
    /// another instance moved it first (its position was no longer `from`).
    func updateWebPushSubscription(id: String, from: Int64, to: Int64, retryAt: Date?, failures: Int, error: String?) async throws -> Bool
}

/// A browser's push subscription (PROTOCOL.md §14).
public struct WebPushSubscription: Sendable, Equatable {
    public var id: String
    public var userId: String
    /// The device whose session made it (a browser signed in): revoking the device ends it.
    public var deviceId: String?
    public var endpoint: String
    /// The browser's P-256 public key and auth secret, base64url (`auth` sealed at rest).
    public var p256dh: String
    public var auth: Sealed
    /// The feed position pushed up to.
    public var position: Int64
    public var created: Date
    /// When to try again after a failure (nil: whenever there is something to push).
    public var retryAt: Date?
    public var failures: Int
    public var lastError: String?

    public init(
        id: String, userId: String, deviceId: String? = nil, endpoint: String, p256dh: String, auth: Sealed, position: Int64, created: Date,
        retryAt: Date? = nil, failures: Int = 0, lastError: String? = nil
    ) {
        self.id = id
        self.userId = userId
        self.deviceId = deviceId
        self.endpoint = endpoint
        self.p256dh = p256dh
        self.auth = auth
        self.position = position
        self.created = created
        self.retryAt = retryAt
        self.failures = failures
        self.lastError = lastError
    }
}
