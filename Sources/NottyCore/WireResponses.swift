import Foundation

// The bodies the service writes (PROTOCOL.md §2), encoded with `NottyJSON` or `JSONWriter`; a page
// of the change feed is read back without `JSONDecoder` (`WireReading.swift`).

/// `GET /v1/me/notifications/changes`: the notifications and (PROTOCOL.md §9) the preferences
/// changed after `since`, up to `cursor`. `preferences` is left out when none changed.
public struct ChangesPage: Codable, Sendable, Equatable {
    public var changes: [UserNotification]
    public var cursor: String
    public var hasMore: Bool
    public var preferences: [PreferenceEntry]?
    public init(changes: [UserNotification], cursor: String, hasMore: Bool, preferences: [PreferenceEntry]? = nil) {
        self.changes = changes
        self.cursor = cursor
        self.hasMore = hasMore
        self.preferences = preferences
    }
}

/// One of the user's preferences (PROTOCOL.md §9): a key, its value (any JSON; `null` unsets it and
/// is kept, so an older value set offline cannot come back) and when a device set it, by the
/// hybrid clock of §1: the last writer wins, per key.
public struct PreferenceEntry: Codable, Sendable, Equatable {
    public var key: String
    public var value: JSONValue
    public var changedAt: Date

    public init(key: String, value: JSONValue, changedAt: Date) {
        self.key = key
        self.value = value
        self.changedAt = changedAt
    }
}

/// `GET`/`PATCH /v1/me/preferences`: every preference the user has (unset ones as `null`).
public struct PreferenceList: Codable, Sendable, Equatable {
    public var preferences: [PreferenceEntry]
    public init(preferences: [PreferenceEntry]) { self.preferences = preferences }
}

/// `GET /v1/me/notifications?view=`.
public struct NotificationList: Codable, Sendable, Equatable {
    public var value: [UserNotification]
    public init(value: [UserNotification]) { self.value = value }
}

/// One result of `POST /v1/me/notifications/batch`.
public struct MutationResult: Codable, Sendable, Equatable {
    public var id: String
    public var mutationId: String?
    public var status: Int
    public var notification: UserNotification?
    public var error: ErrorBody?

    public init(id: String, mutationId: String?, status: Int, notification: UserNotification? = nil, error: ErrorBody? = nil) {
        self.id = id
        self.mutationId = mutationId
        self.status = status
        self.notification = notification
        self.error = error
    }
}

public struct BatchResponse: Codable, Sendable, Equatable {
    public var results: [MutationResult]
    public init(results: [MutationResult]) { self.results = results }
}

/// Graph's error envelope: `{"error":{"code","message","innerError":{"request-id","date"}}}`.
public struct ErrorEnvelope: Codable, Sendable, Equatable {
    public var error: ErrorBody
    public init(error: ErrorBody) { self.error = error }
}

public struct ErrorBody: Codable, Sendable, Equatable {
    public struct Inner: Codable, Sendable, Equatable {
        public var requestId: String
        public var date: String
        enum CodingKeys: String, CodingKey {
            case requestId = "request-id"
            case date
        }
        public init(requestId: String, date: String) {
            self.requestId = requestId
            self.date = date
        }
    }

    public var code: String
    public var message: String
    public var innerError: Inner?
    public init(code: String, message: String, innerError: Inner? = nil) {
        self.code = code
        self.message = message
        self.innerError = innerError
    }
}

/// `POST /v1/me/subscriptions` answer.
public struct SubscriptionInfo: Codable, Sendable, Equatable {
    public var userNotificationSubscriptionId: String
    public var expirationDateTime: Date
    public var deviceId: String
    public var targetHostName: String?
    public var deviceName: String?
    public var platform: String?
    /// When it was made (absent from services before devices were listed).
    public var createdDateTime: Date?
    /// The last request made with the device's tokens, to the minute; `null` before its first.
    public var lastSeenDateTime: Date?
    /// A webhook's URL (PROTOCOL.md §7.2): only in the answer that made it (the service keeps a hash).
    public var webhookUrl: String?
    /// Whether a webhook checks a secret (webhooks only).
    public var hasSecret: Bool?
    /// An ntfy topic's URL (PROTOCOL.md §8.2, platform `ntfy`): only in the answer that made it.
    public var topicUrl: String?
    /// An on-call calendar's feed URL (PROTOCOL.md §13.2, platform `ical`): only in the answer that made it.
    public var calendarUrl: String?
    public init(
        userNotificationSubscriptionId: String, expirationDateTime: Date, deviceId: String, targetHostName: String?, deviceName: String?,
        platform: String?, createdDateTime: Date? = nil, lastSeenDateTime: Date? = nil, webhookUrl: String? = nil, hasSecret: Bool? = nil,
        topicUrl: String? = nil
    ) {
        self.userNotificationSubscriptionId = userNotificationSubscriptionId
        self.expirationDateTime = expirationDateTime
        self.deviceId = deviceId
        self.targetHostName = targetHostName
        self.deviceName = deviceName
        self.platform = platform
        self.createdDateTime = createdDateTime
        self.lastSeenDateTime = lastSeenDateTime
        self.webhookUrl = webhookUrl
        self.hasSecret = hasSecret
        self.topicUrl = topicUrl
    }

    /// A device's own registration (no app): what `notty devices` lists as a device.
    public var isDevice: Bool { targetHostName == nil }
    /// A webhook (PROTOCOL.md §7.2).
    public var isWebhook: Bool { platform == "webhook" }
}

/// `POST /v1/hooks/{token}`'s answer: the notifications created or updated, in order.
public struct WebhookAnswer: Codable, Sendable, Equatable {
    public var ids: [String]
    public init(ids: [String]) { self.ids = ids }
}

public struct SubscriptionList: Codable, Sendable, Equatable {
    public var value: [SubscriptionInfo]
    public init(value: [SubscriptionInfo]) { self.value = value }
}

/// `GET /v1/me`.
public struct Me: Codable, Sendable, Equatable {
    public var id: String
    public var userName: String
    public var displayName: String
    public init(id: String, userName: String, displayName: String) {
        self.id = id
        self.userName = userName
        self.displayName = displayName
    }
}

// swift-format-ignore: AlwaysUseLowerCamelCase
/// The OAuth 2.0 token answer (RFC 6749 §5.1).
public struct TokenResponse: Codable, Sendable, Equatable {
    public var token_type: String
    public var expires_in: Int
    public var access_token: String
    public var refresh_token: String?
    public init(expiresIn: Int, accessToken: String, refreshToken: String?) {
        token_type = "Bearer"
        expires_in = expiresIn
        access_token = accessToken
        refresh_token = refreshToken
    }
}

/// A doorbell frame (PROTOCOL.md §3).
public struct DoorbellFrame: Codable, Sendable, Equatable {
    public var type: String
    public var cursor: String
    public var previousCursor: String?
    public var changes: [UserNotification]?
    /// The preferences changed between the two cursors (PROTOCOL.md §9), as in a page of the feed.
    public var preferences: [PreferenceEntry]?

    public static func changed(cursor: String) -> DoorbellFrame {
        DoorbellFrame(type: "changed", cursor: cursor, previousCursor: nil, changes: nil)
    }

    public init(type: String, cursor: String, previousCursor: String?, changes: [UserNotification]?, preferences: [PreferenceEntry]? = nil) {
        self.type = type
        self.cursor = cursor
        self.previousCursor = previousCursor
        self.changes = changes
        self.preferences = preferences
    }
}
