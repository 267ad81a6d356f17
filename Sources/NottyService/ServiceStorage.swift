import Foundation
import NottyCore
import NottyRecords
import NottySecrets

// Each method of these protocols is one transaction: it happens entirely or not at all.
// Implementations throw `StorageError.unavailable` when the database cannot be reached, and
// the service maps that to `503 serviceUnavailable`. The merge rules themselves live in
// `NotificationRules` so that every backend applies them the same way.

/// Where the service keeps accounts, tokens, subscriptions and every user's notifications:
/// every concern's protocol together. A backend conforms to this; a part of the service that
/// needs one concern asks for that protocol alone. A new concern (a new job's rows) is a new
/// protocol (here for the inbox's own rows, else in a file of its own beside this one:
/// `EscalationStorage`, `SecretStorage`, `TeamStorage`, `WebPushStorage`), added to this list,
/// and a file of its own in each backend.
public typealias ServiceStorage = StorageLifecycle & AccountStorage & TokenStorage & SubscriptionStorage
    & SignInGuessStorage & FeedStorage & DelayedPublishStorage & RetentionStorage & PreferenceStorage & EscalationRuleStorage & EscalationStorage
    & ActionStorage & SecretStorage & TeamStorage & OnCallStorage & WebPushStorage & HeartbeatStorage

/// Opening, checking and closing the storage, and what it tells the service of changes.
public protocol StorageLifecycle: Sendable {
    /// Creates or upgrades the schema.
    func migrate() async throws
    /// Throws when storage does not answer (`/healthz`).
    func ping() async throws
    /// Called after each commit that changed users' feeds, with each user's newest cursor.
    func setChangeHandler(_ handler: @escaping @Sendable ([String: Int64]) -> Void)
    /// Called when changes made elsewhere may have gone unannounced (another instance's, while
    /// this one was not listening): the service re-reads what it caches and rings every device.
    func setResyncHandler(_ handler: @escaping @Sendable () -> Void)
    /// Called when another instance (or `notty admin`) revoked or deleted credentials, or when
    /// such news may have been missed: the service forgets every credential it caches.
    func setCredentialsChangeHandler(_ handler: @escaping @Sendable () -> Void)
    /// A number that changes when any process revoked or deleted credentials in this storage
    /// and no handler can say so (SQLite: `notty admin` beside `notty serve`). Cheap: asked
    /// before every use of a cached credential.
    func credentialsStamp() -> Int64
    func close() async throws
}

extension StorageLifecycle {
    /// A backend that only this process writes never misses a change.
    public func setResyncHandler(_ handler: @escaping @Sendable () -> Void) {}
    /// A backend that only this process writes has no other instance to revoke credentials.
    public func setCredentialsChangeHandler(_ handler: @escaping @Sendable () -> Void) {}
    /// A backend whose instances tell each other (``setCredentialsChangeHandler(_:)``) needs no stamp.
    public func credentialsStamp() -> Int64 { 0 }
}

/// Users and apps (`notty admin`, sign-in, publishing's app check).
public protocol AccountStorage: Sendable {
    func createUser(_ user: UserRecord) async throws
    func deleteUser(name: String) async throws -> Bool
    func user(name: String) async throws -> UserRecord?
    func user(id: String) async throws -> UserRecord?
    func createApp(_ app: AppRecord) async throws
    func deleteApp(hostName: String) async throws -> Bool
    func app(clientId: String) async throws -> AppRecord?
    func app(hostName: String) async throws -> AppRecord?
    /// Every user (not the teams' feeds), by name.
    func allUsers() async throws -> [UserRecord]
    /// Changes a user's account in one transaction (PROTOCOL.md §15): a new password hash, disabled or
    /// enabled, and whom it signs out (their tokens revoked, their devices', browsers', topics'
    /// and calendars' registrations with them, their Web Push subscriptions gone), announced
    /// as a revocation. `false` when there is no such user.
    func updateAccount(userId: String, passwordHash: String?, disabled: Bool?, signOut: SignOut) async throws -> Bool
}

/// Whom an account change signs out.
public enum SignOut: Sendable, Equatable {
    case nobody
    case everywhere
    /// Every device but this one (the one that changed its password).
    case allBut(deviceId: String?)
}

/// Access and refresh tokens (stored as hashes).
public protocol TokenStorage: Sendable {
    func insertTokens(_ tokens: [TokenRecord]) async throws
    func token(hash: String) async throws -> TokenRecord?
    /// Revokes `oldHash` and stores `replacements`, atomically; `false` (and nothing stored)
    /// when `oldHash` is unknown, revoked or expired at `now`.
    func rotateToken(oldHash: String, replacements: [TokenRecord], now: Date) async throws -> Bool
    func revokeTokens(hashes: [String]) async throws
}

/// Subscriptions (an app's channel to a user, a webhook's secret URL) and devices.
public protocol SubscriptionStorage: Sendable {
    func insertSubscription(_ subscription: SubscriptionRecord) async throws
    func subscription(id: String) async throws -> SubscriptionRecord?
    /// The subscription (live or not) whose webhook URL token hashes to `hash`.
    func subscription(webhookHash hash: String) async throws -> SubscriptionRecord?
    func subscriptions(userId: String) async throws -> [SubscriptionRecord]
    /// Revokes one of the user's subscriptions; a device's own registration (no app) takes the
    /// tokens issued to that device with it, in the same transaction.
    func revokeSubscription(id: String, userId: String) async throws -> Bool
    /// Records that the device made a request at `at` (its registration's last seen).
    func touchDevice(deviceId: String, userId: String, at: Date) async throws
    /// Records an ntfy topic's name at the ntfy upstream (PROTOCOL.md §12: the SHA-256 of its URL),
    /// which only a request with the topic's token can tell.
    func setUpstreamId(subscriptionId: String, upstreamId: String) async throws
}

/// Failed sign-ins (``GuessLimiter``).
public protocol SignInGuessStorage: Sendable {
    /// The records of `keys` that exist.
    func guesses(keys: [String]) async throws -> [GuessRecord]
    /// Replaces the record of each key with what `update` makes of it (nil: none), in one
    /// transaction that no other instance interleaves with.
    func updateGuesses(keys: [String], _ update: @escaping @Sendable (String, GuessRecord?) -> GuessRecord?) async throws
    /// Every record, for `notty admin lockouts`.
    func allGuesses() async throws -> [GuessRecord]
    /// Forgets the records of `keys` (every record when nil); answers how many there were.
    func forgetGuesses(keys: [String]?) async throws -> Int
}

/// Every user's notifications and their change feed: publishing, devices' mutations, reads.
public protocol FeedStorage: Sendable {
    /// Publishes or re-publishes (same user, app and `appNotificationId`).
    func publish(_ input: PublishInput) async throws -> UserNotification
    /// Publishes several notifications of one user in one transaction (a webhook request):
    /// all or none.
    func publish(batch inputs: [PublishInput]) async throws -> [UserNotification]
    /// The active (not deleted) notification an app published with `appNotificationId`.
    func notification(userId: String, hostName: String, appNotificationId: String) async throws -> UserNotification?
    /// Changes the content of the app's active notification `appNotificationId` to what
    /// `change` makes of it (its payload, priority, group, link), keeping its state, in one
    /// write no other change interleaves with; a new `seq`, so every device gets it. Nil when
    /// there is none or `change` answers nil.
    func edit(
        userId: String, hostName: String, appNotificationId: String, now: Date,
        _ change: @escaping @Sendable (UserNotification) -> UserNotification?
    ) async throws -> UserNotification?
    /// The app-side delete; `false` when there is no such active notification.
    func deleteByApp(userId: String, hostName: String, appNotificationId: String, now: Date) async throws -> Bool
    /// Applies device mutations (PATCH, DELETE, batch) with idempotence by `mutationId`.
    func mutate(userId: String, mutations: [Mutation], now: Date) async throws -> [MutationResult]
    func notification(id: String, userId: String) async throws -> UserNotification?
    /// The team feeds that those of `ids` in a team's feed the user is in belong to, by id
    /// (PROTOCOL.md §13.1); the user's own notifications are not in it. A member's reads (``changes(userId:since:limit:)``,
    /// ``list(userId:view:top:skip:now:)``, ``counts(userId:now:)``, ``latestSeq(userId:)``,
    /// ``notification(id:userId:)``) take in the feeds of the user's teams.
    func teamOwners(ids: [String], userId: String) async throws -> [String: String]
    /// `nil` when `since` is older than the kept history (410).
    ///
    /// `historyFrom`: the page continues a resync that began when the history started there
    /// (``ChangeFeedPage/historyStart``): `since` may then be older than the history's start,
    /// and `nil` means only that the start moved again since (a resync must begin anew).
    func changes(userId: String, since: Int64, limit: Int, historyFrom: Int64?) async throws -> ChangeFeedPage?
    func latestSeq(userId: String) async throws -> Int64
    /// The newest cursor handed out to anyone (a larger one comes from another database).
    func highestSeq() async throws -> Int64
    /// A window of `view`, newest first; with `search`, of its notifications that match it
    /// (from the backend's full-text index, PROTOCOL.md §17).
    func list(userId: String, view: NotificationView, top: Int, skip: Int, search: SearchQuery?, now: Date) async throws -> [UserNotification]
    /// Every view's count; with `search`, of the notifications it finds (PROTOCOL.md §17).
    func counts(userId: String, now: Date, search: SearchQuery?) async throws -> ViewCounts
    /// An app's active notifications in this one feed (not the user's teams'), newest first
    /// (oldest first with `oldestFirst`): a window, as Opsgenie lists alerts (PROTOCOL.md §16.2).
    func appNotifications(userId: String, hostName: String, filter: AlertFilter, top: Int, skip: Int, oldestFirst: Bool, now: Date)
        async throws -> [UserNotification]
}

/// Which of an app's notifications an alert list shows (PROTOCOL.md §16.2).
public struct AlertFilter: Sendable, Equatable {
    /// Dismissed ones only (true), all others (false), or both (nil).
    public var closed: Bool?
    /// Read ones only (true), Unread ones only (false), or both (nil).
    public var acknowledged: Bool?
    /// Words they match (``NotificationSearch``).
    public var search: String?

    public init(closed: Bool? = nil, acknowledged: Bool? = nil, search: String? = nil) {
        self.closed = closed
        self.acknowledged = acknowledged
        self.search = search
    }
}

extension FeedStorage {
    /// The changes after `since` (`nil` when `since` is older than the kept history).
    public func changes(userId: String, since: Int64, limit: Int) async throws -> ChangeFeedPage? {
        try await changes(userId: userId, since: since, limit: limit, historyFrom: nil)
    }

    /// A window of `view`, newest first.
    public func list(userId: String, view: NotificationView, top: Int, skip: Int, now: Date) async throws -> [UserNotification] {
        try await list(userId: userId, view: view, top: top, skip: skip, search: nil, now: now)
    }

    /// Every view's count.
    public func counts(userId: String, now: Date) async throws -> ViewCounts {
        try await counts(userId: userId, now: now, search: nil)
    }
}

/// Publishes held until they are due (`deliveryDateTime`), claimed with a lease so that one
/// instance of several publishes each.
public protocol DelayedPublishStorage: Sendable {
    /// Holds a publish until it is due.
    func insertDelayed(_ record: DelayedRecord) async throws
    /// Claims up to `limit` held publishes due at `now` until `lease` (another sweep, of this
    /// instance or another, skips them until then), oldest due first.
    func claimDueDelayed(now: Date, lease: Date, limit: Int) async throws -> [DelayedRecord]
    /// Forgets held publishes once published.
    func deleteDelayed(ids: [String]) async throws
}

/// What the service forgets by the clock: expired notifications, old tombstones.
public protocol RetentionStorage: Sendable {
    /// Deletes every notification whose `expirationDateTime` has passed; returns how many.
    func expire(now: Date) async throws -> Int
    /// Forgets tombstones and mutation records older than `before`.
    func purgeHistory(before: Date) async throws
}

/// The user's preferences (PROTOCOL.md §9).
public protocol PreferenceStorage: Sendable {
    /// Every preference of the user, by key (unset ones with a `null` value).
    func preferences(userId: String) async throws -> [PreferenceEntry]
    /// Applies `entries` in one transaction by ``PreferenceRules``; each one applied moves the
    /// user's feed (and rings their devices). Answers every preference after it.
    func setPreferences(userId: String, _ entries: [PreferenceEntry]) async throws -> [PreferenceEntry]
}

/// What a publish stores, after the service has checked the app, subscription and limits.
public struct PublishInput: Sendable {
    public var userId: String
    public var hostName: String
    public var request: PublishRequest
    public var expiration: Date
    public var now: Date
    /// The sender says the matter is over (a webhook's resolved alert): the published
    /// notification is Dismissed, stamped with the service's clock (PROTOCOL.md §7.2).
    public var resolved: Bool
    /// The request's actions as stored (each `http` action's secret parts sealed), written here
    /// (on the request's thread), not by the storage's one writer.
    public let storedActions: String?
    /// The team whose feed `userId` is, by name (PROTOCOL.md §13.1); nil for a user's own.
    public var team: String?
    /// What a re-publish over the app's active notification with the same id writes instead of
    /// the request, given that one (an Opsgenie alert's count and notes, PROTOCOL.md §16.2):
    /// made in the publish's own transaction, so two at once both count.
    public var merge: Merge?

    public typealias Merge = @Sendable (_ active: UserNotification, _ request: PublishRequest) -> PublishRequest

    public init(
        userId: String, hostName: String, request: PublishRequest, expiration: Date, now: Date, resolved: Bool = false,
        secrets: SecretBox
    ) {
        self.userId = userId
        self.hostName = hostName
        self.request = request
        self.expiration = expiration
        self.now = now
        self.resolved = resolved
        storedActions = secrets.storedActions(request.actions)
    }
}
