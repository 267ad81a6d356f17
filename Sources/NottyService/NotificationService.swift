import Foundation
import Logging
import NottyCore
import Synchronization

/// Everything the service does, independent of HTTP: tokens, publishing, the user's API,
/// administration and maintenance. Routes translate requests into calls here; errors are
/// ``ServiceError``s that say what the client should do.
public final class NotificationService: Sendable {
    public let storage: any NotificationStorage
    public let config: ServiceConfig
    public let clock: any ServiceClock
    public let hub = DoorbellHub()
    /// The HTTP connections open now, doorbells included (``GuardedChannel``).
    public let metrics: ServiceMetrics
    package let logger: Logger
    let limiter: RateLimiter
    /// What every publish looks up: app tokens, apps and subscriptions (user tokens are read
    /// from storage on every request, so a revoked device or a deleted user is refused at once
    /// on every instance).
    private let tokens = TTLCache<String, TokenRecord>(ttl: .seconds(5))
    let apps = TTLCache<String, AppRecord>(ttl: .seconds(5))
    let subscriptionsCache = TTLCache<String, SubscriptionRecord>(ttl: .seconds(5))
    /// The storage's credentials stamp the caches were filled under.
    private let cachedUnderStamp = Atomic<Int64>(0)
    /// When each device was last recorded as seen (written at most once a minute per device).
    private let lastSeenWritten = Mutex<[String: Date]>([:])
    /// Each user's newest cursor, kept current by the storage's change handler (conditional polls).
    private let latestCursors = CursorBook()
    private let timingEqualiser = DummyPasswordHash()

    public init(storage: any NotificationStorage, config: ServiceConfig = ServiceConfig(), clock: any ServiceClock = SystemClock(),
                metrics: ServiceMetrics = ServiceMetrics(), logger: Logger = Logger(label: "notty.serve")) {
        self.storage = storage
        self.config = config
        self.clock = clock
        self.metrics = metrics
        self.logger = logger
        self.limiter = RateLimiter(rate: config.publishRate, burst: config.publishBurst)
        // A change: what conditional polls compare with, and a frame to every connected device.
        let changed: @Sendable ([String: Int64]) -> Void = { [hub, latestCursors] cursors in
            latestCursors.advance(cursors)
            hub.ring(cursors)
        }
        storage.setChangeHandler(changed)
        // Another instance revoked something: forget what is cached, and wake the ntfy streams
        // (a tick) so that those of a revoked topic see it and end at once.
        storage.setCredentialsChangeHandler { [weak self] in
            self?.forgetCachedCredentials()
            self?.hub.tick()
        }
        storage.setResyncHandler { [hub, latestCursors, storage, logger] in
            latestCursors.removeAll()
            let users = hub.connectedUserIds
            Task {
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

    /// Runs a storage call, turning its failures into the client's `503`.
    func db<T>(_ operation: () async throws -> T) async throws -> T {
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

    // MARK: - Tokens (§2.1)

    /// Answers `POST /oauth2/v2.0/token` for a parsed form.
    /// `address`: the client's IP address, when known (failed guesses are also counted per address).
    public func token(form: [String: String], address: String? = nil) async throws -> TokenResponse {
        let now = clock.nowMillis()
        let addressKeys = address.map { [GuessKeys.address($0)] } ?? []
        switch form["grant_type"] {
        case "client_credentials":
            guard let clientId = form["client_id"], let secret = form["client_secret"] else {
                throw ServiceError.oauth(.badRequest, "invalid_request", "client_credentials needs client_id and client_secret")
            }
            let keys = [GuessKeys.client(clientId)] + addressKeys
            _ = try await refuseLockedOut(keys, now: now, what: "client_id")
            guard let app = try await db({ try await storage.app(clientId: clientId) }),
                  Secrets.constantTimeEqual(app.secretHash, Secrets.tokenHash(secret))
            else {
                try await countFailure(keys, now: now)
                throw ServiceError.oauth(.unauthenticated, "invalid_client", "unknown client_id or wrong client_secret")
            }
            let access = Secrets.newToken()
            try await db { try await storage.insertTokens([accessRecord(access, kind: .appAccess, subject: app.clientId, now: now)]) }
            return TokenResponse(expiresIn: config.accessTokenLifetime, accessToken: access, refreshToken: nil)
        case "password":
            guard let name = form["username"], let password = form["password"] else {
                throw ServiceError.oauth(.badRequest, "invalid_request", "password grant needs username and password")
            }
            // A user name (or address) that failed too often is refused before any hash is
            // computed; guesses are counted whether the name exists or not.
            let keys = [GuessKeys.user(name)] + addressKeys
            let known = try await refuseLockedOut(keys, now: now, what: "user name")
            let user = try await db { try await storage.user(name: name) }
            let cost = config.bcryptCost
            // Verify even for unknown users so that timing does not reveal which names exist.
            let hash = user?.passwordHash ?? timingEqualiser.hash(cost: cost)
            metrics.passwordHashes.increment()
            let valid = await Self.offload { Secrets.verifyPassword(password, hash: hash) }
            guard let user, valid else {
                try await countFailure(keys, now: now)
                throw ServiceError.oauth(.badRequest, "invalid_grant", "wrong user name or password")
            }
            // Signed in: the name's failures are forgotten (the address's are not).
            if known.contains(where: { $0.key == keys[0] }) { _ = try? await db { try await storage.forgetGuesses(keys: [keys[0]]) } }
            // Each sign-in is a device: its tokens, and the ones refreshed from them, carry its id.
            return try await issueUserTokens(userId: user.id, deviceId: UUID().uuidString.lowercased(), now: now, replacing: nil)
        case "refresh_token":
            guard let refresh = form["refresh_token"] else {
                throw ServiceError.oauth(.badRequest, "invalid_request", "refresh_token grant needs refresh_token")
            }
            let hash = Secrets.tokenHash(refresh)
            guard let record = try await db({ try await storage.token(hash: hash) }), record.kind == .userRefresh else {
                throw ServiceError.oauth(.badRequest, "invalid_grant", "unknown refresh token: sign in again")
            }
            // A revoked one is refused by the rotation (it only rotates a token not yet revoked).
            return try await issueUserTokens(userId: record.subject, deviceId: record.deviceId, now: now, replacing: hash)
        case nil:
            throw ServiceError.oauth(.badRequest, "invalid_request", "grant_type is required")
        case let other?:
            throw ServiceError.oauth(.badRequest, "unsupported_grant_type", "grant_type \(other) is not supported: use client_credentials, password or refresh_token")
        }
    }

    /// Throws `429` (with `Retry-After`) when one of `keys` is locked out; answers the records
    /// of `keys` that exist.
    private func refuseLockedOut(_ keys: [String], now: Date, what: String) async throws -> [GuessRecord] {
        let records = try await db { try await storage.guesses(keys: keys) }
        let waits = records.compactMap { GuessKeys.policy(for: $0.key).refusal($0, now: now) }
        if let wait = waits.max() {
            metrics.lockedOut.increment()
            throw ServiceError.oauth(.tooManyRequests, "temporarily_unavailable",
                                     "too many failed sign-ins for this \(what) or address: try again in \(wait) s", retryAfter: wait)
        }
        return records
    }

    /// Counts one failed guess against each of `keys` (a lockout when one has had too many).
    private func countFailure(_ keys: [String], now: Date) async throws {
        try await db {
            try await storage.updateGuesses(keys: keys) { key, record in GuessKeys.policy(for: key).failed(record, key: key, now: now) }
        }
    }

    /// Every lockout and count of failed sign-ins (`notty admin lockouts`).
    public func lockouts() async throws -> [GuessRecord] {
        try await db { try await storage.allGuesses() }
    }

    /// Forgets the failed sign-ins of `keys` (all when nil): unlocks them at once.
    public func clearLockouts(keys: [String]?) async throws -> Int {
        try await db { try await storage.forgetGuesses(keys: keys) }
    }

    private func accessRecord(_ token: String, kind: TokenRecord.Kind, subject: String, now: Date) -> TokenRecord {
        TokenRecord(hash: Secrets.tokenHash(token), kind: kind, subject: subject, expiresAt: now + TimeInterval(config.accessTokenLifetime))
    }

    private func issueUserTokens(userId: String, deviceId: String?, now: Date, replacing oldHash: String?) async throws -> TokenResponse {
        let access = Secrets.newToken(), refresh = Secrets.newToken()
        var accessToken = accessRecord(access, kind: .userAccess, subject: userId, now: now)
        accessToken.deviceId = deviceId
        let records = [
            accessToken,
            TokenRecord(
                hash: Secrets.tokenHash(refresh), kind: .userRefresh, subject: userId, expiresAt: now + TimeInterval(config.refreshTokenLifetime),
                deviceId: deviceId),
        ]
        if let oldHash {
            let rotated = try await db { try await storage.rotateToken(oldHash: oldHash, replacements: records, now: now) }
            tokens.remove(oldHash)
            guard rotated else { throw ServiceError.oauth(.badRequest, "invalid_grant", "this refresh token was already used, revoked or has expired: sign in again") }
        } else {
            try await db { try await storage.insertTokens(records) }
        }
        return TokenResponse(expiresIn: config.accessTokenLifetime, accessToken: access, refreshToken: refresh)
    }

    /// Revokes tokens (sign-out).
    public func revoke(tokens raw: [String]) async throws {
        let hashes = raw.map(Secrets.tokenHash)
        try await db { try await storage.revokeTokens(hashes: hashes) }
        for hash in hashes { tokens.remove(hash) }
    }

    /// Runs CPU-heavy work (bcrypt) on a Dispatch thread, off Swift's cooperative pool (where
    /// route handlers run: a bcrypt there holds one of its threads, 2 on 2 cores).
    static func offload<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(returning: work()) }
        }
    }

    /// Empties every credential cache (after a revocation or deletion anywhere).
    private func forgetCachedCredentials() {
        tokens.removeAll()
        apps.removeAll()
        subscriptionsCache.removeAll()
    }

    /// Empties the caches when another process revoked or deleted credentials (SQLite's stamp).
    func forgetCredentialsIfRevokedElsewhere() {
        let stamp = storage.credentialsStamp()
        guard cachedUnderStamp.exchange(stamp, ordering: .acquiringAndReleasing) != stamp else { return }
        forgetCachedCredentials()
    }

    private func validToken(_ bearer: String?, kinds: Set<TokenRecord.Kind>) async throws -> TokenRecord {
        guard let bearer, !bearer.isEmpty else { throw ServiceError.unauthenticated("missing bearer token: send Authorization: Bearer <token>") }
        forgetCredentialsIfRevokedElsewhere()
        let hash = Secrets.tokenHash(bearer)
        let cached = kinds == [.appAccess]
        var record = cached ? tokens.get(hash) : nil
        if record == nil {
            let generation = tokens.generation
            record = try await db { try await storage.token(hash: hash) }
            if cached, let record { tokens.set(hash, record, generation: generation) }
        }
        guard let record, kinds.contains(record.kind) else { throw ServiceError.unauthenticated("unknown token") }
        guard !record.revoked else { throw ServiceError.unauthenticated("this token was revoked: sign in again") }
        guard record.expiresAt > clock.nowMillis() else { throw ServiceError.unauthenticated("this token has expired: get a new one") }
        return record
    }

    /// The user id a user access token belongs to.
    public func authenticateUser(bearer: String?) async throws -> String {
        try await authenticateDevice(bearer: bearer).userId
    }

    /// The user and the device (when the token was issued to one) behind a user access token.
    /// Read from storage on every request: a revoked device is refused at once everywhere.
    /// Records the device as seen, at most once a minute.
    public func authenticateDevice(bearer: String?) async throws -> (userId: String, deviceId: String?) {
        let record = try await validToken(bearer, kinds: [.userAccess])
        if let deviceId = record.deviceId { noteSeen(deviceId: deviceId, userId: record.subject) }
        return (record.subject, record.deviceId)
    }

    private func noteSeen(deviceId: String, userId: String) {
        let now = clock.nowMillis()
        let due = lastSeenWritten.withLock { written -> Bool in
            if let last = written[deviceId], now.timeIntervalSince(last) < 60 { return false }
            if written.count >= 100_000 { written.removeAll(keepingCapacity: true) }
            written[deviceId] = now
            return true
        }
        guard due else { return }
        Task { [storage, logger] in
            do {
                try await storage.touchDevice(deviceId: deviceId, userId: userId, at: now)
            } catch {
                logger.debug("cannot record when a device was last seen", metadata: ["error": "\(error)"])
            }
        }
    }

    /// The app an app access token belongs to.
    public func authenticateApp(bearer: String?) async throws -> AppRecord {
        let record = try await validToken(bearer, kinds: [.appAccess])
        guard let app = try await apps.value(record.subject, load: { try await db { try await storage.app(clientId: record.subject) } }) else {
            throw ServiceError.unauthenticated("this app was removed")
        }
        return app
    }

    // MARK: - Publishing (§2.2)

    private func subscription(for app: AppRecord, unsId: String?) async throws -> SubscriptionRecord {
        guard let unsId, !unsId.isEmpty else { throw ServiceError.badRequest("the X-UNS-ID header is required: the user's userNotificationSubscriptionId") }
        let subscription = try await subscriptionsCache.value(unsId) { try await db { try await storage.subscription(id: unsId) } }
        guard let subscription, !subscription.revoked, subscription.expiresAt > clock.nowMillis(),
              let host = subscription.targetHostName, host.equalsIgnoringASCIICase(app.hostName)
        else { throw ServiceError.forbidden("this X-UNS-ID is unknown, revoked, expired or belongs to another app") }
        return subscription
    }

    /// Publishes (or re-publishes) a notification for the user behind `unsId`.
    public func publish(app: AppRecord, unsId: String?, body: Data) async throws -> UserNotification {
        let subscription = try await subscription(for: app, unsId: unsId)
        let now = clock.nowMillis()
        if let wait = limiter.take(app.clientId, now: now) {
            metrics.rateLimited.increment()
            throw ServiceError.tooManyRequests(retryAfter: wait)
        }
        let request: PublishRequest
        do {
            request = try PublishRequest(body: body, limits: config.limits)
        } catch {
            throw ServiceError.badRequest(error.message)
        }
        if let host = request.targetHostName, !host.equalsIgnoringASCIICase(app.hostName) {
            throw ServiceError.badRequest("targetHostName \(host) is not this subscription's app (\(app.hostName))")
        }
        let input = PublishInput(userId: subscription.userId, hostName: app.hostName, request: request,
                                 expiration: try expiration(request.expirationDateTime, now: now), now: now)
        let stored = try await db { try await storage.publish(input) }
        metrics.publishes.increment()
        return stored
    }

    /// When a notification published at `now` expires: as asked (in the future, within the
    /// service's maximum), else after the default lifetime.
    func expiration(_ requested: Date?, now: Date) throws -> Date {
        guard let requested else { return now + TimeInterval(config.defaultTTL) }
        guard requested > now else { throw ServiceError.badRequest("expirationDateTime must be in the future") }
        guard requested <= now + TimeInterval(config.maxTTL) else {
            throw ServiceError.badRequest("expirationDateTime is more than the service's maximum of \(config.maxTTL / 86_400) days ahead")
        }
        return requested
    }

    /// The app-side delete extension.
    public func deleteByApp(app: AppRecord, unsId: String?, appNotificationId: String) async throws {
        let subscription = try await subscription(for: app, unsId: unsId)
        let deleted = try await db {
            try await storage.deleteByApp(userId: subscription.userId, hostName: app.hostName, appNotificationId: appNotificationId, now: clock.nowMillis())
        }
        guard deleted else { throw ServiceError.notFound("no active notification with appNotificationId \(appNotificationId)") }
    }

    // MARK: - The signed-in user (§2.3)

    public func me(userId: String) async throws -> Me {
        guard let user = try await db({ try await storage.user(id: userId) }) else { throw ServiceError.unauthenticated("this user was removed") }
        return Me(id: user.id, userName: user.userName, displayName: user.displayName)
    }

    /// Registers a device (no `targetHostName`), subscribes the user to an app, or makes a
    /// webhook (`platform` `webhook`: its URL, under `baseURL`, is in the answer this once).
    /// The app must be registered (else `404`). A device signed in since devices were listed keeps one id:
    /// the one its tokens carry.
    public func createSubscription(userId: String, deviceId callerDevice: String? = nil, body: Data, baseURL: String? = nil) async throws -> SubscriptionInfo {
        let fields: JSONFields
        let host: String?, deviceName: String?, platform: String?
        do {
            fields = try JSONFields(body: body)
            host = try fields.string("targetHostName", max: 253)
            deviceName = try fields.string("deviceName", max: 256)
            platform = try fields.string("platform", max: 32)
        } catch {
            throw ServiceError.badRequest(error.message)
        }
        if let platform, !["websocket", "polling", "webhook", "ntfy"].contains(platform.lowercased()) {
            throw ServiceError.badRequest("platform must be websocket, polling, webhook or ntfy")
        }
        let webhook = platform?.lowercased() == "webhook"
        // An ntfy topic (SPEC §8.2): a read-only device whose URL is its credential.
        let topic = platform?.lowercased() == "ntfy"
        if topic && host != nil { throw ServiceError.badRequest("an ntfy topic follows the whole inbox: leave out targetHostName") }
        let secret: String?
        do {
            secret = try fields.string("secret", max: 256)
        } catch {
            throw ServiceError.badRequest(error.message)
        }
        if webhook && host == nil { throw ServiceError.badRequest("a webhook needs targetHostName: the registered app it publishes as") }
        if secret != nil && !webhook { throw ServiceError.badRequest("secret is for webhooks (platform webhook)") }
        if let host, try await db({ try await storage.app(hostName: host) }) == nil {
            throw ServiceError.notFound("no app \(host) is registered on this service: check the name, or ask its administrator to run notty admin app add \(host)")
        }
        let now = clock.nowMillis()
        let token = webhook || topic ? Secrets.newToken() : nil
        let record = SubscriptionRecord(
            id: UUID().uuidString.lowercased(), userId: userId, targetHostName: host,
            deviceId: topic ? UUID().uuidString.lowercased() : callerDevice ?? UUID().uuidString.lowercased(),
            deviceName: deviceName, platform: platform?.lowercased(), createdAt: now,
            // A webhook's URL lives until it is revoked: the tools it is pasted into do not renew it.
            expiresAt: webhook || topic ? Self.never : now + TimeInterval(config.subscriptionLifetime),
            lastSeen: host == nil && !topic ? now : nil,  // a device registering is a device seen
            webhookHash: token.map(Secrets.tokenHash), webhookSecret: secret)
        try await db { try await storage.insertSubscription(record) }
        var info = record.info
        if let token, webhook { info.webhookUrl = "\(baseURL ?? "")/v1/hooks/\(token)" }
        if let token, topic { info.topicUrl = "\(baseURL ?? "")/\(token)" }
        return info
    }

    public func subscriptions(userId: String) async throws -> [SubscriptionInfo] {
        try await db { try await storage.subscriptions(userId: userId) }.map(\.info)
    }

    public func revokeSubscription(userId: String, id: String) async throws {
        let revoked = try await db { try await storage.revokeSubscription(id: id, userId: userId) }
        forgetCachedCredentials()  // a webhook's URL is cached by its hash, not by this id
        guard revoked else { throw ServiceError.notFound("no such subscription") }
        await wakeStreams(userId: userId)  // a revoked ntfy topic's streams end at once
    }

    /// Parses a cursor; `since` absent means "from the start".
    public func parseCursor(_ text: String?) throws -> Int64 {
        guard let text else { return 0 }
        guard !text.isEmpty, text.utf8.count <= 18, text.allSatisfy(\.isASCIIDigit), let value = Int64(text) else { throw ServiceError.badRequest("since must be a cursor returned by this service") }
        return value
    }

    /// The user's newest cursor as this instance knows it without asking storage (nil: not known).
    func knownLatestCursor(userId: String) -> Int64? { latestCursors[userId] }

    /// The user's newest cursor (what a device that is up to date holds).
    public func latestCursor(userId: String) async throws -> Int64 {
        if let known = latestCursors[userId] { return known }
        let latest = try await db { try await storage.latestSeq(userId: userId) }
        latestCursors.advance([userId: latest])
        return latestCursors[userId] ?? latest
    }

    public func changes(userId: String, since: Int64, limit: Int) async throws -> ChangesPage {
        let highest = try await db { try await storage.highestSeq() }
        if since > highest { throw ServiceError.cursorExpired }
        guard let page = try await db({ try await storage.changes(userId: userId, since: since, limit: limit) }) else {
            throw ServiceError.cursorExpired
        }
        return ChangesPage(changes: page.changes, cursor: String(page.lastSeq), hasMore: page.hasMore)
    }

    public func list(userId: String, view: NotificationView, top: Int, skip: Int) async throws -> [UserNotification] {
        try await db { try await storage.list(userId: userId, view: view, top: top, skip: skip, now: clock.nowMillis()) }
    }

    public func counts(userId: String) async throws -> ViewCounts {
        try await db { try await storage.counts(userId: userId, now: clock.nowMillis()) }
    }

    /// One notification. Tombstones and expired ones are gone: 404.
    public func notification(userId: String, id: String) async throws -> UserNotification {
        guard let found = try await db({ try await storage.notification(id: id, userId: userId) }), found.isLive(at: clock.nowMillis()) else {
            throw ServiceError.notFound()
        }
        return found
    }

    /// Applies device mutations; one result per mutation, in order.
    public func mutate(userId: String, _ mutations: [Mutation]) async throws -> [MutationResult] {
        let results = try await db { try await storage.mutate(userId: userId, mutations: mutations, now: clock.nowMillis()) }
        metrics.mutations.increment(by: Int64(mutations.count))
        return results
    }

    // MARK: - Administration (§2.4)

    public static func validateName(_ name: String, what: String) throws {
        guard !name.isEmpty, name.count <= 253,
              !name.contains(where: { $0.isWhitespace || $0 == "/" || $0.unicodeScalars.contains { CharacterSet.controlCharacters.contains($0) } })
        else { throw ServiceError.badRequest("\(what) must be 1–253 characters with no spaces or slashes") }
    }

    @discardableResult
    public func addUser(name: String, password: String, displayName: String? = nil) async throws -> UserRecord {
        try Self.validateName(name, what: "a user name")
        guard !password.isEmpty else { throw ServiceError.badRequest("the password must not be empty") }
        let cost = config.bcryptCost
        let hash = await Self.offload { Secrets.hashPassword(password, cost: cost) }
        let user = UserRecord(id: UUID().uuidString.lowercased(), userName: name, displayName: displayName ?? name, passwordHash: hash)
        do {
            try await storage.createUser(user)
        } catch StorageError.conflict {
            throw ServiceError.badRequest("a user named \(name) already exists")
        }
        return user
    }

    public func removeUser(name: String) async throws -> Bool {
        defer { forgetCachedCredentials() }
        return try await db { try await storage.deleteUser(name: name) }
    }

    /// Registers an app; returns its client id and secret (the secret is not kept).
    public func addApp(hostName: String) async throws -> (clientId: String, clientSecret: String) {
        try Self.validateName(hostName, what: "an app host name")
        let secret = Secrets.newToken()
        let app = AppRecord(clientId: UUID().uuidString.lowercased(), hostName: hostName, secretHash: Secrets.tokenHash(secret))
        do {
            try await storage.createApp(app)
        } catch StorageError.conflict {
            throw ServiceError.badRequest("an app with host name \(hostName) already exists")
        }
        return (app.clientId, secret)
    }

    public func removeApp(hostName: String) async throws -> Bool {
        defer { forgetCachedCredentials() }
        return try await db { try await storage.deleteApp(hostName: hostName) }
    }

    // MARK: - Maintenance

    /// Deletes expired notifications and forgets history older than the retention period.
    public func expireDue() async throws -> Int {
        try await db { try await storage.expire(now: clock.nowMillis()) }
    }

    public func purgeHistory() async throws {
        let now = clock.nowMillis()
        let cutoff = now - TimeInterval(config.historyRetention)
        try await db { try await storage.purgeHistory(before: cutoff) }
        // Failed sign-ins long past (names that failed once, lockouts over): forgotten.
        let old = try await db { try await storage.allGuesses() }.filter { GuessKeys.policy(for: $0.key).forgettable($0, now: now) }
        if !old.isEmpty { _ = try await db { try await storage.forgetGuesses(keys: old.map(\.key)) } }
    }
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

/// A bcrypt hash checked against when the user does not exist, so a wrong name costs as much
/// time as a wrong password. Made once.
final class DummyPasswordHash: Sendable {
    private let stored = Mutex<String?>(nil)

    func hash(cost: UInt8) -> String {
        if let hash = stored.withLock({ $0 }) { return hash }
        let hash = Secrets.hashPassword("notty-timing-equaliser", cost: cost)
        stored.withLock { $0 = hash }
        return hash
    }
}
