import Foundation
import Logging
import NottyCore
import Synchronization

/// Everything the service does, independent of HTTP, one type per concern (eleven): `auth`
/// (tokens and sign-in, §2.1; passwords and the open streams a revocation ends, §15),
/// `publishing` (§2.2, webhooks, the ntfy and Gotify doors), `inbox` (the signed-in user's API,
/// §2.3; a team's subscriptions), `admin` (§2.4: users, apps, lockouts, accounts), `maintenance`
/// (expiry, history), `paging` (§11, §13.2: its engine is `NottyPaging`'s, whose
/// `NotificationService.init(storage:…)` composes the two), `actions` (§12), `teams` (§13.1),
/// `onCall` (§13.2: rotations, overrides, calendars, contacts), `ntfyUpstream` (§12) and
/// `webPush` (§14).
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
    public let onCall: OnCall
    /// Sends ntfy's poll requests to `--ntfy-upstream` (nil without it).
    public let ntfyUpstream: NtfyUpstream?
    public let webPush: WebPush

    /// The whole storage (its configuration, clock, hub, metrics, logger and secrets are
    /// ``ServicePart``'s, as each part's).
    public var storage: any ServiceStorage { core.storage }

    /// `outbound` makes the requests paging sends and actions make (nil: none are made, and
    /// they say so); `paging` makes the paging engine over the shared core.
    package init(
        storage: any ServiceStorage, config: ServiceConfig, clock: any ServiceClock, metrics: ServiceMetrics, logger: Logger,
        outbound: (any OutboundHTTP)?, secrets: SecretBox, paging makePaging: (ServiceCore) -> any Paging
    ) {
        let core = ServiceCore(storage: storage, config: config, clock: clock, metrics: metrics, logger: logger, secrets: secrets)
        SecretKeeping.install(secrets, storage: storage)
        self.core = core
        auth = Authentication(core: core)
        let paging = makePaging(core)
        self.paging = paging
        inbox = Inbox(core: core, paging: paging)
        publishing = Publishing(core: core, inbox: inbox)
        admin = Administration(core: core)
        teams = inbox.teams
        onCall = OnCall(core: core, inbox: inbox, paging: paging)
        maintenance = Maintenance(core: core)
        actions = Actions(core: core, inbox: inbox, outbound: outbound)
        let ntfyUpstream = NtfyUpstream(core: core, inbox: inbox, outbound: outbound)
        self.ntfyUpstream = ntfyUpstream
        let webPush = WebPush(core: core, inbox: inbox, paging: paging, outbound: outbound)
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
        storage.setResyncHandler { [hub = core.hub, latestCursors = core.latestCursors, errands = core.errands, storage, logger] in
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

/// What every concern of the service shares: storage and its failures as `503`s, the
/// configuration and clock, the doorbell hub, metrics, the credential caches, the cursors.
package final class ServiceCore: Sendable {
    package let storage: any ServiceStorage
    package let config: ServiceConfig
    package let clock: any ServiceClock
    package let hub = DoorbellHub()
    package let metrics: ServiceMetrics
    package let logger: Logger
    /// Seals and opens what users hand the service to act for them.
    package let secrets: SecretBox
    /// Work handed off to run in the background jobs' group.
    let errands = Errands()
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
    /// Contact and escalation tests, per user (SPEC §15): each sends a request where the user
    /// aims it, so they are no port scanner.
    let testLimiter = RateLimiter(rate: Double(testsPerMinute) / 60, burst: Double(testsPerMinute))
    package static let testsPerMinute = 10
    /// Each user's newest cursor, kept current by the storage's change handler (conditional polls).
    let latestCursors = CursorBook()

    init(
        storage: any ServiceStorage, config: ServiceConfig, clock: any ServiceClock, metrics: ServiceMetrics, logger: Logger,
        secrets: SecretBox
    ) {
        self.storage = storage
        self.secrets = secrets
        self.config = config
        self.clock = clock
        self.metrics = metrics
        self.logger = logger
        limiter = RateLimiter(rate: config.publishRate, burst: config.publishBurst)
    }

    /// `subscription` with its sealed webhook secret and Alertmanager URL opened beside it (what
    /// the hook caches hold). A secret that cannot be opened (sealed under a key this service
    /// does not have) is a check no request passes; such a URL is dropped, and both are logged.
    func opened(_ subscription: SubscriptionRecord?) async -> OpenedHook? {
        guard let s = subscription else { return nil }
        var hook = OpenedHook(subscription: s)
        // A disabled user's topics stop with their tokens (SPEC §15); a team's feed is never disabled.
        hook.ownerDisabled = (try? await storage.user(id: s.userId))?.disabled ?? false
        do throws(SecretBox.OpenError) {
            if let secret = s.webhookSecret { hook.secret = .clear(try await secrets.openFetching(secret)) }
        } catch {
            hook.secret = .unopenable
            logger.error("a webhook's secret cannot be opened: its requests are refused", metadata: ["subscription": "\(s.id)", "error": "\(error)"])
        }
        do throws(SecretBox.OpenError) {
            if let url = s.alertmanagerURL { hook.alertmanagerURL = try await secrets.openFetching(url) }
        } catch {
            logger.error(
                "a webhook's Alertmanager URL cannot be opened: its alerts get no Silence action",
                metadata: ["subscription": "\(s.id)", "error": "\(error)"])
        }
        return hook
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
        let stamp = storage.credentialsStamp()
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
