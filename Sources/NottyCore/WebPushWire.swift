import Foundation

/// What a Web Push message says (PROTOCOL.md §14), encrypted for one browser: a notification to
/// show, or one handled elsewhere to close.
public struct WebPushMessage: Codable, Sendable, Equatable {
    /// `show` or `close`.
    public var type: String
    /// `show`: the notification (§1), trimmed when a push service would refuse its size.
    public var notification: UserNotification?
    /// `close`: which one, where it went (`read`, `activated`, `dismissed`, `snoozed`, `deleted`),
    /// and who did it.
    public var id: String?
    public var state: String?
    public var by: Handler?

    public struct Handler: Codable, Sendable, Equatable {
        public var user: String?
        public var device: String?
        public init(user: String?, device: String?) {
            self.user = user
            self.device = device
        }
    }

    public static func show(_ notification: UserNotification) -> WebPushMessage {
        WebPushMessage(type: "show", notification: notification)
    }

    public static func close(id: String, state: String, by: Handler?) -> WebPushMessage {
        WebPushMessage(type: "close", id: id, state: state, by: by)
    }

    init(type: String, notification: UserNotification? = nil, id: String? = nil, state: String? = nil, by: Handler? = nil) {
        self.type = type
        self.notification = notification
        self.id = id
        self.state = state
        self.by = by
    }
}

/// `POST /v1/me/webpush`: a browser's `PushSubscription.toJSON()`.
public struct WebPushSubscriptionRequest: Codable, Sendable, Equatable {
    public struct Keys: Codable, Sendable, Equatable {
        public var p256dh: String
        public var auth: String
        public init(p256dh: String, auth: String) {
            self.p256dh = p256dh
            self.auth = auth
        }
    }
    public var endpoint: String
    public var keys: Keys
    /// The browser's own end of it, when it says (milliseconds since 1970); not used.
    public var expirationTime: Double?

    public init(endpoint: String, keys: Keys, expirationTime: Double? = nil) {
        self.endpoint = endpoint
        self.keys = keys
        self.expirationTime = expirationTime
    }

    /// Reads a request's body: the endpoint and both keys required, each of a bounded length
    /// (what they are is the service's to check).
    public init(body: Data) throws(ValidationError) {
        let fields = try JSONFields(body: body)
        guard let endpoint = try fields.string("endpoint", max: 2048) else {
            throw ValidationError("endpoint is required: send the browser's PushSubscription.toJSON()")
        }
        guard let keys = try fields.nested("keys"), let p256dh = try keys.string("p256dh", max: 200),
            let auth = try keys.string("auth", max: 100)
        else { throw ValidationError("keys.p256dh and keys.auth are required: send the browser's PushSubscription.toJSON()") }
        self.init(endpoint: endpoint, keys: Keys(p256dh: p256dh, auth: auth))
    }
}
