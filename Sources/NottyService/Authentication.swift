import Foundation
import Logging
import NottyCore
import NottyPOSIX
import NottyRecords
import NottySecrets
import Synchronization

/// Signing in and proving who calls (PROTOCOL.md §2.1): the token endpoint's grants, failed sign-ins
/// counted and locked out, the bearer tokens of apps and devices checked, sign-out.
public final class Authentication: ServicePart {
    package let core: ServiceCore
    /// The storage this part uses: its concerns alone.
    let storage: any AuthenticationStorage
    /// When each device was last recorded as seen (written at most once a minute per device).
    private let lastSeenWritten = Mutex<[String: Date]>([:])
    private let timingEqualiser = DummyPasswordHash()

    init(core: ServiceCore, storage: any AuthenticationStorage) {
        self.core = core
        self.storage = storage
    }

    /// Answers `POST /oauth2/v2.0/token` for a parsed form.
    /// `address`: the client's IP address, when known (failed guesses are also counted per address).
    public func token(form: [String: String], address: String? = nil) async throws -> TokenResponse {
        // A store reads a name only up to U+0000 (SQLite's text ends there): `alice%00x` is not alice.
        if let field = form.first(where: { $0.value.containsNUL })?.key {
            throw ServiceError.oauth(.badRequest, "invalid_request", "\(field) must not contain the character U+0000 (NUL)")
        }
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
            let user = try await verifiedUser(name: name, password: password, address: address, now: now)
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
            // A disabled account's device gets no new token (and keeps its refresh token for when
            // it is enabled again, PROTOCOL.md §15).
            guard !record.subjectDisabled else {
                throw ServiceError.oauth(.badRequest, "invalid_grant", "this account is disabled: ask the service's administrator")
            }
            // A revoked one is refused by the rotation (it only rotates a token not yet revoked).
            return try await issueUserTokens(userId: record.subject, deviceId: record.deviceId, now: now, replacing: hash)
        case nil:
            throw ServiceError.oauth(.badRequest, "invalid_request", "grant_type is required")
        case let other?:
            throw ServiceError.oauth(
                .badRequest, "unsupported_grant_type", "grant_type \(other) is not supported: use client_credentials, password or refresh_token")
        }
    }

    /// The user whose name and password these are, with the lockout of PROTOCOL.md §2.1: a user
    /// name (or address) that failed too often is refused before any hash is computed, and
    /// guesses are counted whether the name exists or not.
    private func verifiedUser(name: String, password: String, address: String?, now: Date) async throws -> UserRecord {
        let keys = [GuessKeys.user(name)] + (address.map { [GuessKeys.address($0)] } ?? [])
        let known = try await refuseLockedOut(keys, now: now, what: "user name")
        // A team's feed is never signed in as (PROTOCOL.md §15): as no user at all.
        let user = try await db { try await storage.user(name: name) }.flatMap { $0.isTeamFeed ? nil : $0 }
        let cost = config.bcryptCost
        // Verify even for unknown users so that timing does not reveal which names exist.
        let hash = user?.passwordHash ?? timingEqualiser.hash(cost: cost)
        metrics.passwordHashes.increment()
        let valid = await onDispatch { Secrets.verifyPassword(password, hash: hash) }
        guard let user, valid else {
            try await countFailure(keys, now: now)
            throw ServiceError.oauth(.badRequest, "invalid_grant", "wrong user name or password")
        }
        // Said only to whoever knows the password (PROTOCOL.md §15).
        guard !user.disabled else {
            throw ServiceError.oauth(
                .badRequest, "invalid_grant", "the account \(user.userName) is disabled: its administrator enables it (notty admin user enable NAME)")
        }
        // Signed in: the name's failures are forgotten (the address's are not).
        if known.contains(where: { $0.key == keys[0] }) { _ = try? await db { try await storage.forgetGuesses(keys: [keys[0]]) } }
        return user
    }

    /// A browser's sign-in (PROTOCOL.md §14): the same check and lockout as the password grant,
    /// and one token for the session cookie, carrying the browser's device id, that lasts as
    /// long as a refresh token (revoking the device ends it at once).
    public func webSession(name: String, password: String, address: String?) async throws -> (
        token: String, userId: String, deviceId: String, expires: Date
    ) {
        let now = clock.nowMillis()
        let user = try await verifiedUser(name: name, password: password, address: address, now: now)
        let token = Secrets.newToken(), deviceId = UUID().uuidString.lowercased()
        let expires = now + TimeInterval(config.refreshTokenLifetime)
        try await db {
            try await storage.insertTokens([
                TokenRecord(hash: Secrets.tokenHash(token), kind: .userAccess, subject: user.id, expiresAt: expires, deviceId: deviceId)
            ])
        }
        return (token, user.id, deviceId, expires)
    }

    /// How long a one-time sign-in link lasts (PROTOCOL.md §14).
    public static let signInLinkLifetime: TimeInterval = 60

    /// A one-time sign-in link's token for the user (PROTOCOL.md §14): exchanged once, within
    /// 60 s, for a browser's session. It carries the device that made it, so revoking that
    /// device (or disabling the user) ends it too.
    public func signInLink(userId: String, deviceId: String?) async throws -> (token: String, expires: Date) {
        let token = Secrets.newToken()
        let expires = clock.nowMillis() + Self.signInLinkLifetime
        try await db {
            try await storage.insertTokens([
                TokenRecord(hash: Secrets.tokenHash(token), kind: .signInLink, subject: userId, expiresAt: expires, deviceId: deviceId)
            ])
        }
        return (token, expires)
    }

    /// A browser's sign-in with a one-time link's token: the link is used up in the same
    /// transaction that writes the session's token, so two browsers racing with one link get one
    /// session between them.
    public func webSession(link: String) async throws -> (token: String, userId: String, userName: String, deviceId: String, expires: Date) {
        let now = clock.nowMillis()
        let hash = Secrets.tokenHash(link)
        let spent = ServiceError.oauth(
            .badRequest, "invalid_grant", "this sign-in link was used already or is older than 60 s: make a new one, or sign in with your password")
        guard let record = try await db({ try await storage.token(hash: hash) }), record.kind == .signInLink, !record.revoked,
            record.expiresAt > now
        else { throw spent }
        guard !record.subjectDisabled, let user = try await db({ try await storage.user(id: record.subject) }), !user.disabled else {
            throw ServiceError.oauth(
                .badRequest, "invalid_grant", "this account is disabled: its administrator enables it (notty admin user enable NAME)")
        }
        let token = Secrets.newToken(), deviceId = UUID().uuidString.lowercased()
        let expires = now + TimeInterval(config.refreshTokenLifetime)
        let session = TokenRecord(hash: Secrets.tokenHash(token), kind: .userAccess, subject: record.subject, expiresAt: expires, deviceId: deviceId)
        guard try await db({ try await storage.rotateToken(oldHash: hash, replacements: [session], now: now) }) else { throw spent }
        return (token, record.subject, user.userName, deviceId, expires)
    }

    /// Throws `429` (with `Retry-After`) when one of `keys` is locked out; answers the records
    /// of `keys` that exist.
    private func refuseLockedOut(_ keys: [String], now: Date, what: String) async throws -> [GuessRecord] {
        let records = try await db { try await storage.guesses(keys: keys) }
        let waits = records.compactMap { GuessKeys.policy(for: $0.key).refusal($0, now: now) }
        if let wait = waits.max() {
            metrics.lockedOut.increment()
            throw ServiceError.oauth(
                .tooManyRequests, "temporarily_unavailable",
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
            core.tokens.remove(oldHash)
            guard rotated else {
                throw ServiceError.oauth(.badRequest, "invalid_grant", "this refresh token was already used, revoked or has expired: sign in again")
            }
        } else {
            try await db { try await storage.insertTokens(records) }
        }
        return TokenResponse(expiresIn: config.accessTokenLifetime, accessToken: access, refreshToken: refresh)
    }

    /// Revokes tokens (sign-out).
    public func revoke(tokens raw: [String]) async throws {
        let hashes = raw.map(Secrets.tokenHash)
        try await db { try await storage.revokeTokens(hashes: hashes) }
        for hash in hashes { core.tokens.remove(hash) }
        core.forgetCachedCredentials()  // and the streams opened with them close
    }

    // MARK: - Open streams (PROTOCOL.md §15)

    /// The user a doorbell is opened as, and the credential that keeps it open: its token's
    /// hash and expiry, which ``closeEndedStreams()`` holds it to.
    public func authenticateStream(bearer: String?) async throws -> (userId: String, credential: DoorbellHub.StreamCredential) {
        let record = try await validToken(bearer, kinds: [.userAccess])
        return (record.subject, DoorbellHub.StreamCredential(tokenHash: record.hash, expires: record.expiresAt))
    }

    /// The credentials generation last checked against storage.
    private let streamsChecked = Atomic<Int>(-1)

    /// Closes every open stream whose token expired (each second, with no query), and, after a
    /// revocation here, on another instance or by `notty admin`, those whose token was revoked
    /// or is gone (a query per distinct token then): within a second, as PROTOCOL.md §15 asks.
    public func closeEndedStreams() async throws {
        let now = clock.nowMillis()
        let expired = hub.hangUp { $0.expires <= now }
        if expired > 0 { logger.info("closed streams whose token expired", metadata: ["count": "\(expired)"]) }
        core.forgetCredentialsIfRevokedElsewhere()
        let generation = core.credentialsGeneration.load(ordering: .acquiring)
        guard streamsChecked.load(ordering: .relaxed) != generation else { return }
        // The ntfy streams check their topic at each wake: a revoked or disabled one ends.
        hub.tick()
        var ended: Set<String> = []
        for credential in hub.openCredentials {
            let record = try await db { try await storage.token(hash: credential.tokenHash) }
            if let record, !record.revoked, !record.subjectDisabled, record.expiresAt > now { continue }
            ended.insert(credential.tokenHash)
        }
        let closed = hub.hangUp { ended.contains($0.tokenHash) }
        if closed > 0 { logger.info("closed streams whose token was revoked", metadata: ["count": "\(closed)"]) }
        streamsChecked.store(generation, ordering: .relaxed)
    }

    // MARK: - A user's own password (PROTOCOL.md §15)

    /// `POST /v1/me/password` `{"current","new","signOutOthers"?}`: the current password
    /// checked as a sign-in is (a wrong one is `400`, counted toward the lockout), the new one at
    /// least 8 characters; with `signOutOthers`, every other device, browser and calendar ends.
    public func changePassword(userId: String, deviceId: String?, body: Data, address: String?) async throws {
        let current: String, new: String, signOutOthers: Bool
        do throws(ValidationError) {
            let fields = try JSONFields(body: body)
            guard let given = try fields.string("current", max: 1024), let wanted = try fields.string("new", max: 1024) else {
                throw ValidationError("current and new are required: {\"current\": \"…\", \"new\": \"…\"}")
            }
            (current, new) = (given, wanted)
            signOutOthers = try fields.bool("signOutOthers") ?? false
        } catch {
            throw ServiceError.badRequest(error.message)
        }
        if let problem = Administration.passwordProblem(new) { throw ServiceError.badRequest(problem) }
        guard let user = try await db({ try await storage.user(id: userId) }) else { throw ServiceError.unauthenticated("this user was removed") }
        do {
            _ = try await verifiedUser(name: user.userName, password: current, address: address, now: clock.nowMillis())
        } catch let error as ServiceError where error.code == "invalid_grant" {
            throw ServiceError.badRequest("the current password is wrong")
        } catch let error as ServiceError where error.kind == .tooManyRequests {
            throw ServiceError(.tooManyRequests, "tooManyRequests", error.message, retryAfter: error.retryAfter)
        }
        let cost = config.bcryptCost
        let hash = await onDispatch { Secrets.hashPassword(new, cost: cost) }
        defer { core.forgetCachedCredentials() }
        _ = try await db {
            try await storage.updateAccount(
                userId: userId, passwordHash: hash, disabled: nil, signOut: signOutOthers ? .allBut(deviceId: deviceId) : .nobody)
        }
    }

    private func validToken(_ bearer: String?, kinds: Set<TokenRecord.Kind>) async throws -> TokenRecord {
        guard let bearer, !bearer.isEmpty else { throw ServiceError.unauthenticated("missing bearer token: send Authorization: Bearer <token>") }
        core.forgetCredentialsIfRevokedElsewhere()
        let hash = Secrets.tokenHash(bearer)
        let cached = kinds == [.appAccess]
        var record = cached ? core.tokens.get(hash) : nil
        if record == nil {
            let generation = core.tokens.generation
            record = try await db { try await storage.token(hash: hash) }
            if cached, let record { core.tokens.set(hash, record, generation: generation) }
        }
        guard let record, kinds.contains(record.kind) else { throw ServiceError.unauthenticated("unknown token") }
        guard !record.revoked else { throw ServiceError.unauthenticated("this token was revoked: sign in again") }
        guard !record.subjectDisabled else { throw ServiceError.unauthenticated("this account is disabled: ask the service's administrator") }
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
        core.errands.run { [storage, logger] in
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
        guard let app = try await core.apps.value(record.subject, load: { try await db { try await storage.app(clientId: record.subject) } }) else {
            throw ServiceError.unauthenticated("this app was removed")
        }
        return app
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

/// What ``Authentication`` asks of the storage.
public typealias AuthenticationStorage = AccountStorage & TokenStorage & SignInGuessStorage & SubscriptionStorage
