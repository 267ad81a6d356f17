import Foundation
import NottyCore

// Each method of these protocols is one transaction: it happens entirely or not at all.
// Implementations throw `StorageError.unavailable` when the database cannot be reached, and
// the service maps that to `503 serviceUnavailable`. The merge rules themselves live in
// `NotificationRules` so that every backend applies them the same way.

/// Where the service keeps accounts, tokens, subscriptions and every user's notifications:
/// every concern's protocol together. A backend conforms to this; a part of the service that
/// needs one concern asks for that protocol alone. A new concern (a new job's rows) is a new
/// protocol here, added to this list, and a file of its own in each backend.
public typealias ServiceStorage = StorageLifecycle & AccountStorage & TokenStorage & SubscriptionStorage
    & SignInGuessStorage & FeedStorage & DelayedPublishStorage & RetentionStorage & PreferenceStorage & EscalationRuleStorage & EscalationStorage
    & ActionStorage & SecretStorage & TeamStorage & OnCallStorage & WebPushStorage

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
    /// (``NotificationSearch``).
    func list(userId: String, view: NotificationView, top: Int, skip: Int, search: String?, now: Date) async throws -> [UserNotification]
    func counts(userId: String, now: Date) async throws -> ViewCounts
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
    /// A window of `view`, newest first.
    public func list(userId: String, view: NotificationView, top: Int, skip: Int, now: Date) async throws -> [UserNotification] {
        try await list(userId: userId, view: view, top: top, skip: skip, search: nil, now: now)
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

/// The user's escalation rules (PROTOCOL.md §11).
public protocol EscalationRuleStorage: Sendable {
    /// The user's rules, oldest first.
    func escalationRules(userId: String) async throws -> [EscalationRule]
    /// Stores a new rule; `false` (nothing stored) when the user has a rule of that name, or
    /// `limit` rules already.
    func insertEscalationRule(_ rule: EscalationRule, userId: String, limit: Int) async throws -> Bool
    /// Deletes one of the user's rules; `false` when there is none with that id.
    func deleteEscalationRule(id: String, userId: String) async throws -> Bool
}

/// What escalation keeps (PROTOCOL.md §11): tracks, deliveries, what each target was sent, each
/// target's last delivery and error. Deciding is ``EscalationPlanner``'s; a backend reads and
/// writes in one transaction around it, so that instances never decide the same thing twice.
public protocol EscalationStorage: Sendable {
    /// The users who have escalation rules.
    func escalationUserIds() async throws -> [String]
    /// For each of `userIds`, in one transaction: hands `plan` the user's notifications that
    /// changed since the last plan (at most `limit`, in feed order) with what is kept about
    /// them, writes what it decides and moves the user's escalation cursor past them. A user
    /// with rules and no cursor yet starts at their newest. Answers how many deliveries were
    /// made, and the users with more changes waiting.
    func planEscalations(
        userIds: [String], limit: Int, now: Date,
        _ plan: @escaping @Sendable (EscalationPlanInput) -> EscalationPlan
    ) async throws -> (deliveries: Int, more: [String])
    /// Hands `fire` each track due at `now` (at most `limit`, soonest first, each to one
    /// instance) and writes what it makes of it; answers how many deliveries were made.
    func fireDueEscalations(now: Date, limit: Int, _ fire: @escaping @Sendable (EscalationDue) -> EscalationFiring) async throws -> Int
    /// Claims up to `limit` deliveries due at `now` until `lease`, soonest first; one to a
    /// target about a notification waits until the earlier ones to it are done.
    func claimEscalationDeliveries(now: Date, lease: Date, limit: Int) async throws -> [EscalationDelivery]
    /// Records how claimed deliveries went, in one transaction: delivered (what the target was
    /// sent is kept), retried later, or given up; each target's last delivery or error either
    /// way. A `log` is kept on its notification, which moves in the feed so that every device
    /// shows it (escalation's own cursor moves past it when it had seen everything before).
    func finishEscalationDeliveries(_ finished: [FinishedDelivery], now: Date) async throws
    /// The escalations logged on these notifications of the user's, by notification id.
    func escalationLog(userId: String, notificationIds: [String]) async throws -> [String: [EscalationRecord]]
    /// Records a test message's outcome as the target's last delivery or error.
    func recordEscalationTest(ruleId: String, target: String, error: String?, now: Date) async throws
    /// Each target's last delivery and error, and deliveries waiting, of the user's rules, by rule id.
    func escalationStatus(userId: String) async throws -> [String: [EscalationTargetState]]
    /// Deliveries waiting, and of them those that failed at least once (`/metrics`).
    func escalationBacklog() async throws -> (pending: Int, failing: Int)
}

/// Runs of actions (PROTOCOL.md §12): each action's latest run of a notification as published, claimed
/// by one press at a time across every instance.
public protocol ActionStorage: Sendable {
    /// Makes `claim`'s press the one that runs the action, unless a run of the same
    /// publication is in flight (its lease not over) or succeeded: then answers that run.
    /// A failed run, a run of an earlier publication, or one whose lease ended is taken over.
    /// Nil: claimed, the caller runs it.
    func claimActionRun(_ claim: ActionClaim) async throws -> ActionResult?
    /// Records a claimed run's outcome; the notification, when still active, moves in the feed
    /// so that every device shows the outcome.
    func finishActionRun(_ claim: ActionClaim, result: ActionResult) async throws
    /// The latest done or failed run of each action of these notifications of the user's, of
    /// each one's current publication (`published`: its `createdDateTime`, in ms), by id.
    func actionResults(userId: String, published: [String: Int64]) async throws -> [String: [ActionResult]]
}

/// A press of an action, as ``ActionStorage`` claims and records it.
public struct ActionClaim: Sendable, Equatable {
    public var userId: String
    public var notificationId: String
    /// Which action, from 1.
    public var index: Int
    /// The notification's `createdDateTime` (ms): a re-publish makes its actions new.
    public var published: Int64
    public var label: String
    public var device: String?
    public var at: Date
    /// Until when the run holds its claim (a press after it, the run died with its process).
    public var leaseUntil: Date

    public init(userId: String, notificationId: String, index: Int, published: Int64, label: String, device: String?, at: Date, leaseUntil: Date) {
        self.userId = userId
        self.notificationId = notificationId
        self.index = index
        self.published = published
        self.label = label
        self.device = device
        self.at = at
        self.leaseUntil = leaseUntil
    }
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

/// What the store keeps of the secret keys (`secret_keys`), and the sweep that seals stored
/// secrets anew (docs/GUIDE.md, "Secrets at rest").
public protocol SecretStorage: Sendable {
    /// A record of `secret_keys`: `check` (a value sealed under the key the store expects), or
    /// `key:ID` (a new key sealed under the one before it, while a rotation hands it over).
    func secretKeyRecord(_ name: String) async throws -> String?
    /// Sets (nil: removes) a record of `secret_keys`.
    func setSecretKeyRecord(_ name: String, value: String?) async throws
    /// Goes through up to `limit` stored secrets of `column` after `position` (nil: from the
    /// start) in the store's order, and writes each that `reseal` changes (unless it changed
    /// meanwhile). Answers the position reached (nil: the end) and how many were written.
    func resealSecrets(
        _ column: SecretColumn, after position: String?, limit: Int,
        _ reseal: @escaping @Sendable (String) -> String?
    ) async throws -> (position: String?, written: Int)
}

/// A stored column that holds secrets: the whole value is one (`.value`), or a list of actions
/// whose `http` actions carry one (`.actions`), or a JSON array of them (`.list`).
public enum SecretColumn: String, Sendable, CaseIterable {
    case notificationActions, ruleTargets, deliveryTargets, sentTargets, statusTargets, webhookSecrets, alertmanagerURLs, contactTargets, webPushKeys,
        webPushAuth

    /// The table and column.
    public var place: (table: String, column: String) {
        switch self {
        case .notificationActions: ("notifications", "actions")
        case .ruleTargets: ("escalation_rules", "targets")
        case .deliveryTargets: ("escalation_deliveries", "target")
        case .sentTargets: ("escalation_sent", "target")
        case .statusTargets: ("escalation_status", "target")
        case .webhookSecrets: ("subscriptions", "webhook_secret")
        case .alertmanagerURLs: ("subscriptions", "alertmanager_url")
        case .contactTargets: ("contacts", "target")
        case .webPushKeys: ("webpush_keys", "private_key")
        case .webPushAuth: ("webpush_subscriptions", "auth")
        }
    }
}

/// Teams and their members (PROTOCOL.md §13.1). Members are users' ids; what is read back
/// names them. Each method is one transaction, so that a team keeps an owner and its limits
/// whatever two owners do at once.
public protocol TeamStorage: Sendable {
    /// Makes a team whose only member is `ownerId`, an owner; ``StorageError/conflict(_:)``
    /// when a team has that name.
    func createTeam(id: String, name: String, ownerId: String, at: Date) async throws
    /// Removes a team and its memberships; `false` when there is none of that name.
    func deleteTeam(name: String) async throws -> Bool
    /// The team and its members, nil when there is none of that name.
    func team(name: String) async throws -> Team?
    /// The teams `userId` is a member of, by name.
    func teams(userId: String) async throws -> [Team]
    /// Every team, by name.
    func allTeams() async throws -> [Team]
    /// The teams of these ids (those that still exist), by name.
    func teams(ids: [String]) async throws -> [Team]
    /// Makes `userId` a member of the team with `role` (or changes their role), unless that
    /// would leave the team without an owner or over a limit.
    func setTeamMember(team: String, userId: String, role: TeamRole, at: Date, limits: TeamLimits) async throws -> TeamChange
    /// Takes `userId` out of the team, unless they are its last owner.
    func removeTeamMember(team: String, userId: String) async throws -> TeamChange
}

/// On call (PROTOCOL.md §13.2): each team's schedule (a JSON document of ``OnCallSchedule``,
/// rewritten whole in one transaction) and each user's contacts (targets sealed as given).
public protocol OnCallStorage: Sendable {
    /// The team's schedule as stored, nil when it has none.
    func onCallSchedule(teamId: String) async throws -> String?
    /// These teams' schedules, by team id (what the pager resolves `oncall` with); a team
    /// without one is left out.
    func onCallSchedules(teamIds: [String]) async throws -> [String: String]
    /// Reads the team's schedule and writes what `update` makes of it (nil: unchanged), in one
    /// transaction; what `update` throws is thrown and nothing is written.
    func updateOnCallSchedule(teamId: String, at: Date, _ update: @escaping @Sendable (String?) throws -> String?) async throws
    /// The user's contacts, oldest first.
    func contacts(userId: String) async throws -> [Contact]
    /// These users' contacts, by user name, oldest first (what the pager reaches a team's
    /// members with); a user without any is left out.
    func contacts(userNames: [String]) async throws -> [String: [Contact]]
    /// Adds a contact unless the user has `limit` already (false then).
    func insertContact(_ contact: Contact, userId: String, limit: Int) async throws -> Bool
    func deleteContact(id: String, userId: String) async throws -> Bool
}

/// How many teams a user may be in and how many members a team may have.
public struct TeamLimits: Sendable, Equatable {
    public var teamsPerUser: Int
    public var membersPerTeam: Int
    public init(teamsPerUser: Int = Team.maxTeamsPerUser, membersPerTeam: Int = Team.maxMembers) {
        self.teamsPerUser = teamsPerUser
        self.membersPerTeam = membersPerTeam
    }
}

/// What a change of membership came to (nothing is written unless ``done``).
public enum TeamChange: Sendable, Equatable {
    case done
    /// No team of that name.
    case noTeam
    /// The user was not a member (a removal).
    case notMember
    /// It would leave the team without an owner.
    case lastOwner
    /// The team has as many members as it may.
    case teamFull
    /// The user is in as many teams as they may be.
    case tooManyTeams
}

/// Membership rules written once for every backend: given the members as they are, what a
/// change comes to.
public enum TeamRules {
    /// Whether `userId` may become (or stay) a member with `role`, given `members` (user id → role)
    /// and how many teams the user is in now.
    public static func setting(
        _ userId: String, role: TeamRole, members: [String: TeamRole], teamsOfUser: Int, limits: TeamLimits
    ) -> TeamChange {
        if let current = members[userId] {
            if current == .owner, role == .member, !members.contains(where: { $0.key != userId && $0.value == .owner }) { return .lastOwner }
            return .done
        }
        if members.count >= limits.membersPerTeam { return .teamFull }
        if teamsOfUser >= limits.teamsPerUser { return .tooManyTeams }
        return .done
    }

    /// Whether `userId` may leave (or be taken out of) a team with `members`.
    public static func removing(_ userId: String, members: [String: TeamRole]) -> TeamChange {
        guard let current = members[userId] else { return .notMember }
        if current == .owner, !members.contains(where: { $0.key != userId && $0.value == .owner }) { return .lastOwner }
        return .done
    }
}

extension FeedStorage {
    /// The changes after `since` (`nil` when `since` is older than the kept history).
    public func changes(userId: String, since: Int64, limit: Int) async throws -> ChangeFeedPage? {
        try await changes(userId: userId, since: since, limit: limit, historyFrom: nil)
    }
}

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
