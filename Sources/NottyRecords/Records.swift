import Foundation
import NottyCore
import NottySecrets

/// A person who signs in (`notty admin user add`).
public struct UserRecord: Sendable, Equatable {
    public var id: String
    public var userName: String
    public var displayName: String
    public var passwordHash: String
    /// Disabled by the administrator (PROTOCOL.md §15): no token of theirs is taken, no sign-in; their
    /// notifications, teams and roles are kept.
    public var disabled: Bool
    /// When the account was made (nil: before notty kept it).
    public var created: Date?
    public init(id: String, userName: String, displayName: String, passwordHash: String, disabled: Bool = false, created: Date? = nil) {
        self.id = id
        self.userName = userName
        self.displayName = displayName
        self.passwordHash = passwordHash
        self.disabled = disabled
        self.created = created
    }

    /// Whether this row is a team's feed (`team/NAME`), which holds the team's notifications
    /// and is never a person: it cannot sign in, be added to a team or be given a password.
    public var isTeamFeed: Bool { FeedOwner(id: id).isTeam }
}

/// An app server allowed to publish (`notty admin app add HOSTNAME`).
public struct AppRecord: Sendable, Equatable {
    public var clientId: String
    public var hostName: String
    public var secretHash: String
    public init(clientId: String, hostName: String, secretHash: String) {
        self.clientId = clientId
        self.hostName = hostName
        self.secretHash = secretHash
    }
}

/// An issued token, stored only by its hash.
public struct TokenRecord: Sendable, Equatable {
    public enum Kind: String, Sendable {
        case userAccess, userRefresh, appAccess
        /// A one-time sign-in link for a browser (PROTOCOL.md §14): used once, within 60 s.
        case signInLink
    }
    public var hash: String
    public var kind: Kind
    /// The user id for user tokens, the client id for app tokens.
    public var subject: String
    public var expiresAt: Date
    public var revoked: Bool
    /// User tokens: the device they were issued to (one per password grant, carried through
    /// refreshes). Revoking that device's registration revokes them all.
    public var deviceId: String?
    /// Read with the token: its user is disabled (PROTOCOL.md §15), so it is refused like a revoked one.
    public var subjectDisabled: Bool
    public init(
        hash: String, kind: Kind, subject: String, expiresAt: Date, revoked: Bool = false, deviceId: String? = nil, subjectDisabled: Bool = false
    ) {
        self.hash = hash
        self.kind = kind
        self.subject = subject
        self.expiresAt = expiresAt
        self.revoked = revoked
        self.deviceId = deviceId
        self.subjectDisabled = subjectDisabled
    }
}

/// A `userNotificationSubscriptionId` and the device that asked for it.
public struct SubscriptionRecord: Sendable, Equatable {
    /// The expiry of what lives until it is revoked (a webhook's URL, an ntfy topic): the tools
    /// they are pasted into do not renew them.
    package static let never = Date(timeIntervalSince1970: 253_402_300_799)  // 9999-12-31T23:59:59Z

    /// What a row is (PROTOCOL.md §15): one table holds six kinds, told apart by their columns here
    /// alone, so that no rule reads `platform` or `targetHostName` on its own.
    public enum Kind: String, Sendable, CaseIterable {
        /// A device signed in with a password (`notty login`): its tokens carry its id.
        case device
        /// A browser signed in (`/v1/web/session`, platform `web`).
        case browser
        /// An ntfy topic that follows the inbox (platform `ntfy`): a read-only device whose URL
        /// token (hashed in `webhookHash`) is its credential.
        case topic
        /// An app's subscription (an X-UNS-ID), a user's or a team's.
        case app
        /// A webhook (platform `webhook`): the app's, its URL token hashed in `webhookHash`.
        case hook
        /// An on-call calendar feed (platform `ical`): its team's id in `deviceId`, its URL
        /// token hashed in `webhookHash`.
        case calendar

        /// What the per-user limits count it with.
        public var limited: Limited {
            switch self {
            case .device, .browser, .topic: .signedIn
            case .app, .hook: .apps
            case .calendar: .calendars
            }
        }
    }

    /// The per-user limits (PROTOCOL.md §15), each over some kinds.
    public enum Limited: String, Sendable {
        case signedIn, apps, calendars

        /// How many one user (or team) may hold.
        public var limit: Int {
            switch self {
            case .signedIn, .apps: 100
            case .calendars: 10
            }
        }

        package var noun: String {
            switch self {
            case .signedIn: "devices and browsers"
            case .apps: "app subscriptions and hooks"
            case .calendars: "calendar feeds"
            }
        }
    }

    public var kind: Kind {
        switch platform {
        case "ical": .calendar
        case "ntfy": .topic
        case "webhook": .hook
        case "web" where targetHostName == nil: .browser
        default: targetHostName == nil ? .device : .app
        }
    }

    /// The names the user gave their devices, by device id, as `notty devices` shows them (what
    /// "handled on laptop" says).
    public static func deviceNames(_ records: [SubscriptionRecord]) -> [String: String] {
        Dictionary(records.compactMap { s in s.deviceName.map { (s.deviceId, $0) } }, uniquingKeysWith: { first, _ in first })
    }

    /// A calendar feed's team (nil for any other kind).
    public var calendarTeamId: String? { kind == .calendar ? deviceId : nil }

    /// The one a re-registration renews (the same device, for the same app): counted once.
    package var countedAs: String { kind == .calendar ? "calendar|\(id)" : "\(kind.limited.rawValue)|\(deviceId)|\(targetHostName ?? "")" }

    public var id: String
    public var userId: String
    public var targetHostName: String?
    public var deviceId: String
    public var deviceName: String?
    public var platform: String?
    public var createdAt: Date
    public var expiresAt: Date
    public var revoked: Bool
    /// The last request made with the device's tokens (device registrations only).
    public var lastSeen: Date?
    /// A webhook's URL token, hashed (PROTOCOL.md §7.2): the URL itself is shown once.
    public var webhookHash: String?
    /// A webhook's secret: the key of GitHub's signature, GitLab's token, or a bearer token.
    public var webhookSecret: Sealed?
    /// An Alertmanager webhook's Alertmanager (PROTOCOL.md §12): its firing alerts get "Silence 1h".
    public var alertmanagerURL: Sealed?
    /// An ntfy topic's name at the ntfy upstream (`Inbox.upstreamTopic(publicURL:topic:)`).
    public var upstreamId: String?

    public init(
        id: String, userId: String, targetHostName: String?, deviceId: String, deviceName: String?, platform: String?, createdAt: Date,
        expiresAt: Date,
        revoked: Bool = false, lastSeen: Date? = nil, webhookHash: String? = nil, webhookSecret: Sealed? = nil, alertmanagerURL: Sealed? = nil,
        upstreamId: String? = nil
    ) {
        self.id = id
        self.userId = userId
        self.targetHostName = targetHostName
        self.deviceId = deviceId
        self.deviceName = deviceName
        self.platform = platform
        self.createdAt = createdAt
        self.expiresAt = expiresAt
        self.revoked = revoked
        self.lastSeen = lastSeen
        self.webhookHash = webhookHash
        self.webhookSecret = webhookSecret
        self.alertmanagerURL = alertmanagerURL
        self.upstreamId = upstreamId
    }

    public var info: SubscriptionInfo {
        SubscriptionInfo(
            userNotificationSubscriptionId: id, expirationDateTime: expiresAt, deviceId: deviceId, targetHostName: targetHostName,
            deviceName: deviceName, platform: platform, createdDateTime: createdAt, lastSeenDateTime: lastSeen,
            hasSecret: webhookHash == nil || targetHostName == nil ? nil : webhookSecret != nil)
    }
}

/// A notification as stored: the wire object plus its owner, its per-field clocks and its
/// place in the user's change feed.
public struct StoredNotification: Sendable, Equatable {
    public var userId: String
    public var notification: UserNotification
    public var readChangedAt: Int64
    public var actionChangedAt: Int64
    public var seq: Int64

    /// The actions' column as read (PROTOCOL.md §12), written back as it is when only the state
    /// changes: a row read and saved again never serialises its actions anew. Nil for a row
    /// made here (its actions are written from `notification.actions`).
    public var storedActions: String?

    public init(userId: String, notification: UserNotification, readChangedAt: Int64, actionChangedAt: Int64, seq: Int64) {
        self.userId = userId
        self.notification = notification
        self.readChangedAt = readChangedAt
        self.actionChangedAt = actionChangedAt
        self.seq = seq
    }

    public var userState: UserState {
        get {
            UserState(
                readState: notification.readState, readChangedAt: readChangedAt, userActionState: notification.userActionState,
                snoozedUntil: notification.snoozedUntil, actionChangedAt: actionChangedAt)
        }
        set {
            notification.readState = newValue.readState
            notification.userActionState = newValue.userActionState
            notification.snoozedUntil = newValue.snoozedUntil
            readChangedAt = newValue.readChangedAt
            actionChangedAt = newValue.actionChangedAt
        }
    }
}

/// One page of a user's change feed as storage reads it.
public struct ChangeFeedPage: Sendable {
    public var changes: [UserNotification]
    public var lastSeq: Int64
    public var hasMore: Bool
    /// The preferences changed after the page's `since`, up to `lastSeq`, in the feed's order.
    public var preferences: [PreferenceEntry]
    /// Where the user's history starts: a cursor before it is refused, unless it continues a
    /// resync begun at it (PROTOCOL.md §3).
    public var historyStart: Int64
    public init(changes: [UserNotification], lastSeq: Int64, hasMore: Bool, preferences: [PreferenceEntry] = [], historyStart: Int64 = 0) {
        self.changes = changes
        self.lastSeq = lastSeq
        self.hasMore = hasMore
        self.preferences = preferences
        self.historyStart = historyStart
    }
}

/// A publish held until it is due (ntfy's `X-Delay`, PROTOCOL.md §8.1): kept in storage, so a restart
/// does not lose it.
public struct DelayedRecord: Sendable, Equatable {
    public var id: String
    public var userId: String
    /// The webhook it came through: revoked by then, it is not published.
    public var subscriptionId: String
    public var hostName: String
    public var dueAt: Date
    /// The notification to publish then, as JSON (``DelayedPublish``).
    public var body: String
    public var createdAt: Date

    public init(id: String, userId: String, subscriptionId: String, hostName: String, dueAt: Date, body: String, createdAt: Date) {
        self.id = id
        self.userId = userId
        self.subscriptionId = subscriptionId
        self.hostName = hostName
        self.dueAt = dueAt
        self.body = body
        self.createdAt = createdAt
    }
}
