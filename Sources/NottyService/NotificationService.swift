import Foundation
import Logging
import NottyCore
import NottyRecords
import NottySecrets
import Synchronization

/// Everything the service does, independent of HTTP, one type per concern (twelve): `auth`
/// (tokens and sign-in, §2.1; passwords and the open streams a revocation ends, §15),
/// `publishing` (§2.2, webhooks, the ntfy and Gotify doors), `inbox` (the signed-in user's API,
/// §2.3; a team's subscriptions), `admin` (§2.4: users, apps, lockouts, accounts), `maintenance`
/// (expiry, history), `paging` (§11, §13.2: its engine is `NottyPaging`'s), `actions` (§12),
/// `teams` (§13.1), `onCall` (§13.2: rotations, overrides, calendars, contacts; its engine is
/// `NottyOnCall`'s), `heartbeats` (§16.3: its engine is `NottyIncidents`'), `ntfyUpstream`
/// (§12: its engine is `NottyDialects`') and `webPush` (§14: its engine is `NottyWebPush`'s).
/// `NottyComposition`'s `NotificationService.init(storage:…)` composes the service with its engines.
/// Routes translate requests into calls on them; errors are ``ServiceError``s that say what
/// the client should do.
public final class NotificationService: ServicePart {
    package let core: ServiceCore
    public let auth: Authentication
    public let publishing: Publishing
    public let inbox: Inbox
    public let admin: Administration
    public let maintenance: Maintenance
    /// Escalation and on-call pages: told of every change.
    public let paging: any Paging
    public let actions: Actions
    public let teams: Teams
    /// Rotations, overrides, calendars and contacts (its engine is `NottyOnCall`'s).
    public let onCall: any OnCallService
    /// Heartbeats and their pings (its engine is `NottyIncidents`').
    public let heartbeats: any HeartbeatService
    /// Sends ntfy's poll requests to `--ntfy-upstream` (nil without it).
    public let ntfyUpstream: (any NtfyUpstreaming)?
    /// Pushes to the users' browsers (its engine is `NottyWebPush`'s).
    public let webPush: any WebPush

    /// The whole storage, which only this composition holds: each part is given its own
    /// concerns of it (its configuration, clock, hub, metrics, logger and secrets are
    /// ``ServicePart``'s, as each part's).
    public let storage: any ServiceStorage

    /// `outbound` makes the requests paging sends and actions make (nil: none are made, and
    /// they say so); `paging` makes the paging engine over the shared core, `webPush` the Web
    /// Push engine over it and the inbox, `onCall` on call over them and paging, `heartbeats` the
    /// heartbeats over the teams, publishing and the inbox, `ntfyUpstream` the ntfy upstream's
    /// sender over the inbox (nil without `--ntfy-upstream`).
    package init(
        storage: any ServiceStorage, config: ServiceConfig, clock: any ServiceClock, metrics: ServiceMetrics, logger: Logger,
        outbound: (any OutboundHTTP)?, secrets: SecretBox, paging makePaging: (ServiceCore) -> any Paging,
        webPush makeWebPush: (ServiceCore, Inbox) -> any WebPush, onCall makeOnCall: (ServiceCore, Inbox, any Paging) -> any OnCallService,
        heartbeats makeHeartbeats: (ServiceCore, Teams, Publishing, Inbox) -> any HeartbeatService,
        ntfyUpstream makeNtfyUpstream: (ServiceCore, Inbox) -> (any NtfyUpstreaming)?
    ) {
        let core = ServiceCore(
            credentialsStamp: { storage.credentialsStamp() }, config: config, clock: clock, metrics: metrics, logger: logger, secrets: secrets)
        SecretKeeping.install(secrets, storage: storage)
        self.core = core
        self.storage = storage
        auth = Authentication(core: core, storage: storage)
        let paging = makePaging(core)
        self.paging = paging
        let teams = Teams(core: core, storage: storage)
        self.teams = teams
        inbox = Inbox(core: core, storage: storage, paging: paging, teams: teams, outbound: outbound)
        publishing = Publishing(core: core, storage: storage, inbox: inbox, teams: teams)
        heartbeats = makeHeartbeats(core, teams, publishing, inbox)
        admin = Administration(core: core, storage: storage)
        onCall = makeOnCall(core, inbox, paging)
        maintenance = Maintenance(core: core, storage: storage)
        actions = Actions(core: core, storage: storage, inbox: inbox, outbound: outbound)
        let ntfyUpstream = makeNtfyUpstream(core, inbox)
        self.ntfyUpstream = ntfyUpstream
        let webPush = makeWebPush(core, inbox)
        self.webPush = webPush
        // A change: what conditional polls compare with, a frame to every connected device, and
        // paging's plan (clocks started and stopped, retractions made at once).
        let changed: @Sendable ([String: Int64]) -> Void = { [hub = core.hub, latestCursors = core.latestCursors] cursors in
            latestCursors.advance(cursors)
            hub.ring(cursors)
            paging.changed(cursors)
            ntfyUpstream?.changed(cursors)
            webPush.changed(cursors)
        }
        storage.setChangeHandler(changed)
        // Another instance revoked something: forget what is cached, and wake the ntfy streams
        // (a tick) so that those of a revoked topic see it and end at once.
        storage.setCredentialsChangeHandler { [weak core] in
            core?.forgetCachedCredentials()
            core?.hub.tick()
        }
        storage.setResyncHandler { [hub = core.hub, latestCursors = core.latestCursors, errands = core.errands, logger] in
            latestCursors.removeAll()
            let users = hub.connectedUserIds
            errands.run {
                for userId in users {
                    do {
                        changed([userId: try await storage.latestSeq(userId: userId)])
                    } catch {
                        logger.warning("cannot re-check a connected user after a resync", metadata: ["error": "\(error)"])
                    }
                }
            }
        }
    }
}

/// What every concern of the service shares: storage's failures as `503`s (each part holds
/// its own concerns of the storage), the configuration and clock, the doorbell hub, metrics,
/// the credential caches, the cursors.
package final class ServiceCore: Sendable {
    /// The storage's credentials stamp (``StorageLifecycle/credentialsStamp()``).
    private let credentialsStamp: @Sendable () -> Int64
    package let config: ServiceConfig
    package let clock: any ServiceClock
    package let hub = DoorbellHub()
    package let metrics: ServiceMetrics
    package let logger: Logger
    /// Seals and opens what users hand the service to act for them.
    package let secrets: SecretBox
    /// Work handed off to run in the background jobs' group.
    package let errands = Errands()
    let limiter: RateLimiter
    /// What every publish looks up: app tokens, apps and subscriptions (user tokens are read
    /// from storage on every request, so a revoked device or a deleted user is refused at once
    /// on every instance).
    let tokens = TTLCache<String, TokenRecord>(ttl: .seconds(5))
    let apps = TTLCache<String, AppRecord>(ttl: .seconds(5))
    let subscriptionsCache = TTLCache<String, SubscriptionRecord>(ttl: .seconds(5))
    /// Hooks and topics by their token's hash, their secrets opened.
    let hooksCache = TTLCache<String, OpenedHook>(ttl: .seconds(5))
    /// The storage's credentials stamp the caches were filled under.
    private let cachedUnderStamp = Atomic<Int64>(0)
    /// Contact and escalation tests, per user (PROTOCOL.md §15): each sends a request where the user
    /// aims it, so they are no port scanner.
    let testLimiter = RateLimiter(rate: Double(testsPerMinute) / 60, burst: Double(testsPerMinute))
    package static let testsPerMinute = 10
    /// Who handled what lately, as this instance saw it.
    package let handlers = HandlerBook()
    /// Each user's newest cursor, kept current by the storage's change handler (conditional polls).
    let latestCursors = CursorBook()

    init(
        credentialsStamp: @escaping @Sendable () -> Int64, config: ServiceConfig, clock: any ServiceClock, metrics: ServiceMetrics, logger: Logger,
        secrets: SecretBox
    ) {
        self.credentialsStamp = credentialsStamp
        self.secrets = secrets
        self.config = config
        self.clock = clock
        self.metrics = metrics
        self.logger = logger
        limiter = RateLimiter(rate: config.publishRate, burst: config.publishBurst)
    }

    /// Takes one of the user's contact and escalation tests, or refuses with `429`.
    package func takeTest(userId: String) throws {
        guard let wait = testLimiter.take(userId, now: clock.nowMillis()) else { return }
        metrics.rateLimited.increment()
        throw ServiceError(
            .tooManyRequests, "tooManyRequests",
            "at most \(Self.testsPerMinute) contact and escalation tests a minute: try again in \(wait) s", retryAfter: wait)
    }

    /// Runs a storage call, turning its failures into the client's `503`.
    package func db<T>(_ operation: () async throws -> T) async throws -> T {
        do {
            return try await operation()
        } catch let error as StorageError {
            switch error {
            case .unavailable(let detail):
                metrics.storageErrors.increment()
                logger.error("storage unavailable", metadata: ["error": "\(detail)"])
                throw ServiceError.serviceUnavailable()
            case .conflict(let detail):
                throw ServiceError.badRequest("already exists (\(detail))")
            }
        }
    }

    /// Counts revocations and deletions of credentials seen here (a change of it makes the
    /// open streams be checked again: ``Authentication/closeEndedStreams()``).
    let credentialsGeneration = Atomic<Int>(0)

    /// Empties every credential cache (after a revocation or deletion anywhere).
    func forgetCachedCredentials() {
        credentialsGeneration.add(1, ordering: .releasing)
        tokens.removeAll()
        apps.removeAll()
        subscriptionsCache.removeAll()
        hooksCache.removeAll()
    }

    /// Empties the caches when another process revoked or deleted credentials (SQLite's stamp).
    func forgetCredentialsIfRevokedElsewhere() {
        let stamp = credentialsStamp()
        guard cachedUnderStamp.exchange(stamp, ordering: .acquiringAndReleasing) != stamp else { return }
        forgetCachedCredentials()
    }
}

/// One concern of the service: it reads what they share through ``ServiceCore``.
package protocol ServicePart: Sendable {
    var core: ServiceCore { get }
}

extension ServicePart {
    package var config: ServiceConfig { core.config }
    package var clock: any ServiceClock { core.clock }
    package var hub: DoorbellHub { core.hub }
    package var metrics: ServiceMetrics { core.metrics }
    package var logger: Logger { core.logger }
    package var secrets: SecretBox { core.secrets }

    package func db<T>(_ operation: () async throws -> T) async throws -> T { try await core.db(operation) }
}

/// Each user's newest known cursor; only ever moves forward.
final class CursorBook: Sendable {
    private let cursors = Mutex<[String: Int64]>([:])

    subscript(userId: String) -> Int64? { cursors.withLock { $0[userId] } }

    func advance(_ newer: [String: Int64]) {
        cursors.withLock { known in
            for (user, cursor) in newer where cursor > known[user] ?? 0 { known[user] = cursor }
        }
    }

    /// Forgets every cursor (they are read again from storage when asked for).
    func removeAll() {
        cursors.withLock { $0 = [:] }
    }
}

/// A hook's (or a topic's) subscription as the hook caches hold it: its sealed parts opened
/// beside it, so the clear text is never in a field that is stored.
struct OpenedHook: Sendable {
    /// What a request to a hook must prove.
    enum Secret: Sendable {
        /// The subscription has none.
        case none
        case clear(String)
        /// Sealed under a key this service does not have: no request proves it.
        case unopenable
    }

    let subscription: SubscriptionRecord
    var secret = Secret.none
    /// Alertmanager's address, opened (nil: none, or one that could not be opened).
    var alertmanagerURL: String?
    /// Its user is disabled: a topic of theirs is as revoked.
    var ownerDisabled = false
}
