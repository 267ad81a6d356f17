import Crypto
import Foundation
import NottyCore
import NottyRecords
import NottySecrets
import NottyService
import Synchronization

/// Web Push at work (PROTOCOL.md §14), the service's ``WebPush``: browsers subscribe with the service's VAPID key, and every
/// notification that arrives in a user's Unread is pushed to each of their browsers (`show`);
/// one handled anywhere is pushed again so that the browser closes it (`close`). Quiet hours
/// and mutes (§9) hold a `show` back as they hold popups.
///
/// A subscription's queue is the user's own feed: it keeps the position pushed up to, and a
/// push that fails for now (429, 5xx, no answer) is sent again from there after a backoff, after
/// a restart too. A `404` or `410` ends the subscription. With several instances, the one that
/// moves a subscription's position first wins; the other's pushes of the same changes are
/// repeats the browser shows once (the tag is the notification's id).
public final class WebPushDelivery: WebPush, ServicePart {
    package let core: ServiceCore
    let inbox: Inbox
    let outbound: (any OutboundHTTP)?
    /// The storage this part uses: its concerns alone.
    let storage: any WebPushWorkStorage
    private let key = Mutex<(signing: P256.Signing.PrivateKey, publicKey: String)?>(nil)
    /// Users being pushed now, those rung meanwhile (pushed again after), and who waits for a
    /// user's pushes to be done: one push of a user at a time on an instance.
    private struct Pushing {
        var running: Set<String> = []
        var again: Set<String> = []
        var waiters: [String: [CheckedContinuation<Void, Never>]] = [:]
    }
    private let pushing = Mutex(Pushing())
    /// Users with a subscription (nil until read at start): a change of anyone else costs nothing.
    private let subscribed = Mutex<Set<String>?>(nil)

    /// The most subscriptions one user keeps (a browser on each of their devices).
    public static let maxPerUser = 20
    /// Pushes of one user's subscriptions made at once.
    static let parallel = 16
    /// Changes read from a subscription's position at a time.
    static let page = 200

    package init(core: ServiceCore, inbox: Inbox, outbound: (any OutboundHTTP)?, storage: any WebPushWorkStorage) {
        self.core = core
        self.inbox = inbox
        self.outbound = outbound
        self.storage = storage
    }

    // MARK: - The key

    /// `GET /v1/webpush/key`: the service's VAPID public key, base64url (the browser's
    /// `applicationServerKey`). Made at the first call of the first instance and kept.
    public func publicKey() async throws -> String {
        try await signingKey().publicKey
    }

    func signingKey() async throws -> (signing: P256.Signing.PrivateKey, publicKey: String) {
        if let known = key.withLock({ $0 }) { return known }
        let fresh = P256.Signing.PrivateKey()
        let stored = try await db {
            try await storage.webPushKey(
                orInsert: (secrets.seal(fresh.rawRepresentation.base64URL).stored, fresh.publicKey.x963Representation.base64URL))
        }
        guard let raw = Data(base64URL: try secrets.open(Sealed(stored: stored.privateKey))) else {
            throw ServiceError.serviceUnavailable("the stored Web Push key is not a key")
        }
        let signing = try P256.Signing.PrivateKey(rawRepresentation: raw)
        let pair = (signing, signing.publicKey.x963Representation.base64URL)
        key.withLock { $0 = pair }
        return pair
    }

    // MARK: - Subscriptions

    /// `POST /v1/me/webpush` with `PushSubscription.toJSON()`: the browser is pushed what
    /// arrives from now on. The same endpoint again renews its keys.
    public func subscribe(userId: String, deviceId: String? = nil, request: WebPushSubscriptionRequest) async throws -> WebPushSubscription {
        if let problem = Self.endpointProblem(request.endpoint, allow: config.webPushAllow) { throw ServiceError.badRequest(problem) }
        if let refusal = outbound?.refusalBeforeLookup(request.endpoint) {
            throw ServiceError.badRequest("\(request.endpoint) is not allowed: \(refusal)")
        }
        if let problem = WebPushCrypto.keyProblem(p256dh: request.keys.p256dh, auth: request.keys.auth) {
            throw ServiceError.badRequest(problem)
        }
        let now = clock.nowMillis()
        let position = try await inbox.latestCursor(userId: userId)
        let made = WebPushSubscription(
            id: "wp-" + Identifiers.timeOrdered(now: now).suffix(12), userId: userId, deviceId: deviceId, endpoint: request.endpoint,
            p256dh: request.keys.p256dh,
            auth: secrets.seal(request.keys.auth), position: position, created: now)
        guard let stored = try await db({ try await storage.upsertWebPushSubscription(made, limit: Self.maxPerUser) }) else {
            throw ServiceError.badRequest("a user has at most \(Self.maxPerUser) Web Push subscriptions: remove one (DELETE /v1/me/webpush/{id})")
        }
        subscribed.withLock { _ = $0?.insert(userId) }
        return stored
    }

    /// `DELETE /v1/me/webpush/{id}`.
    public func unsubscribe(userId: String, id: String) async throws {
        guard try await db({ try await storage.deleteWebPushSubscription(id: id, userId: userId) }) else {
            throw ServiceError.notFound("no Web Push subscription \(id)")
        }
    }

    /// The browsers' own push services: Chrome's and Edge's (FCM), Firefox's, Safari's, Windows'.
    static let pushServices = ["fcm.googleapis.com", ".push.services.mozilla.com", ".push.apple.com", ".notify.windows.com"]

    /// Why `endpoint` may not be pushed to, or nil: https on a browser's push service, or one of
    /// `allow`'s prefixes.
    static func endpointProblem(_ endpoint: String, allow: [String]) -> String? {
        if allow.contains(where: { allows($0, endpoint) }) { return nil }
        guard let url = HTTPURL(endpoint), url.scheme == "https" else {
            return "endpoint must be the https URL of a browser's push service, as PushSubscription.toJSON() gives it"
        }
        guard pushServices.contains(where: { $0.hasPrefix(".") ? url.host.hasSuffix($0) : url.host == $0 }) else {
            return
                "\(url.host) is not a browser's push service (FCM, Mozilla, Apple, Windows): its administrator may allow it with notty serve --webpush-allow"
        }
        return nil
    }

    /// Whether the `--webpush-allow` entry `allowed` takes `endpoint`: the same scheme, host
    /// and port, parsed (not a text prefix: `https://push.example.com@10.0.0.5/` is 10.0.0.5),
    /// and the endpoint's path under the entry's. An entry without a port (`http://127.0.0.1:`)
    /// takes the host on any port.
    static func allows(_ allowed: String, _ endpoint: String) -> Bool {
        guard let entry = HTTPURL(allowed), let url = HTTPURL(endpoint), entry.scheme == url.scheme, !url.hasCredentials, !entry.hasCredentials,
            entry.host == url.host
        else { return false }
        if let port = entry.writtenPort, port != url.port { return false }
        let prefix = entry.path.hasSuffix("/") ? entry.path : entry.path + "/"
        return entry.path.isEmpty || url.path == entry.path || url.path.hasPrefix(prefix)
    }

    // MARK: - Pushing

    /// The storage committed changes for these users: those with a subscription are pushed.
    public func changed(_ cursors: [String: Int64]) {
        guard outbound != nil else { return }
        let known = subscribed.withLock { $0 }
        for userId in cursors.keys where known?.contains(userId) ?? true { start(userId) }
    }

    /// Starts pushing the user unless that is under way (then that runs again after, and
    /// `waiter`, if any, is resumed once it is done): true when the caller is to push.
    private func start(_ userId: String, waiter: CheckedContinuation<Void, Never>? = nil) -> Bool {
        pushing.withLock { state in
            guard state.running.insert(userId).inserted else {
                state.again.insert(userId)
                if let waiter { state.waiters[userId, default: []].append(waiter) }
                return false
            }
            return true
        }
    }

    private func start(_ userId: String) {
        if start(userId, waiter: nil) { core.errands.run { await self.pushAll(userId: userId) } }
    }

    /// Pushes the user now, in the caller's task, and returns once everything that changed so
    /// far was tried (by this call, or by the push under way, which goes round once more).
    public func pushNow(userId: String) async {
        var pushHere = false
        await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
            pushHere = start(userId, waiter: waiter)
            if pushHere { waiter.resume() }
        }
        if pushHere { await pushAll(userId: userId) }
    }

    private func pushAll(userId: String) async {
        while true {
            do {
                try await pushOnce(userId: userId)
            } catch {
                logger.warning("web push: cannot read a user's subscriptions; the next change tries again", metadata: ["error": "\(error)"])
            }
            let done: [CheckedContinuation<Void, Never>]? = pushing.withLock { state in
                if state.again.remove(userId) != nil { return nil }
                state.running.remove(userId)
                return state.waiters.removeValue(forKey: userId) ?? []
            }
            if let done {
                for waiter in done { waiter.resume() }
                return
            }
        }
    }

    /// Pushes each of the user's subscriptions that is due what changed since its position.
    private func pushOnce(userId: String) async throws {
        let now = clock.nowMillis()
        let all = try await db { try await storage.webPushSubscriptions(userId: userId) }
        if all.isEmpty { subscribed.withLock { _ = $0?.remove(userId) } }
        let due = all.filter { ($0.retryAt ?? .distantPast) <= now }
        guard !due.isEmpty else { return }
        // Who handled a notification is said with the name the user gave that device.
        let devices = try await db { try await storage.subscriptions(userId: userId) }
        let interruptions = Interruptions(preferences: try await inbox.preferences(userId: userId).preferences, now: now)
        let owner = try await db { try await storage.user(id: userId) }?.userName
        let context = Context(interruptions: interruptions, owner: owner, deviceNames: SubscriptionRecord.deviceNames(devices))
        await withTaskGroup(of: Void.self) { group in
            for (index, subscription) in due.enumerated() {
                if index >= Self.parallel { await group.next() }
                group.addTask { await self.catchUp(subscription, context) }
            }
        }
    }

    /// At start, pushes what a stopped instance left unsent (every subscription from its
    /// position); then, every few seconds, tries again what failed for now and is due. A
    /// subscription with nothing new costs nothing here: changes start its pushes.
    public func runRetries() async {
        let interval: Duration = .seconds(5)
        if subscribed.withLock({ $0 == nil }) {
            let users = (try? await db { try await storage.webPushUsers(retryDue: nil, limit: 100_000) }) ?? []
            subscribed.withLock { $0 = Set(users) }
            if outbound != nil { for userId in users { start(userId) } }
        }
        while !Task.isCancelled {
            try? await Task.sleep(for: interval)
            if outbound != nil, let users = try? await db({ try await storage.webPushUsers(retryDue: clock.nowMillis(), limit: 1_000) }) {
                for userId in users { start(userId) }
            }
        }
    }

    /// What deciding a user's messages needs: quiet and mute now, the user's name, their devices' names.
    struct Context: Sendable {
        var interruptions: Interruptions
        var owner: String?
        var deviceNames: [String: String] = [:]
    }

    /// Sends one subscription what changed since its position, a page at a time, moving the
    /// position after each message taken; stops at a failure that may pass (to be retried).
    private func catchUp(_ subscription: WebPushSubscription, _ context: Context) async {
        var position = subscription.position
        var failures = subscription.failures
        do {
            while true {
                let page = try await inbox.changes(userId: subscription.userId, since: position, limit: Self.page)
                guard let end = Int64(page.cursor), end > position else { return }
                let now = clock.nowMillis()
                var lastError: String?
                for notification in page.changes {
                    guard let message = message(for: notification, subscription: subscription, context, now: now)
                    else { continue }
                    switch await send(message, about: notification, to: subscription, now: now) {
                    case .sent: failures = 0
                    case .gone:
                        _ = try await db { try await storage.deleteWebPushSubscription(id: subscription.id, userId: nil) }
                        logger.notice("web push: the push service no longer knows a subscription: dropped", metadata: ["id": "\(subscription.id)"])
                        return
                    case .later(let why):
                        // The position stays before this message: tried again from here.
                        failures += 1
                        _ = try await db {
                            try await storage.updateWebPushSubscription(
                                id: subscription.id, from: position, to: position,
                                retryAt: now + Self.backoff(failures), failures: failures, error: why)
                        }
                        return
                    case .skipped(let why): lastError = why
                    }
                }
                let moved = try await db {
                    try await storage.updateWebPushSubscription(
                        id: subscription.id, from: position, to: end, retryAt: nil, failures: 0, error: lastError)
                }
                guard moved, page.hasMore else { return }
                position = end
            }
        } catch {
            logger.warning("web push: cannot read or record a subscription; the next change tries again", metadata: ["error": "\(error)"])
        }
    }

    /// Seconds before a push that failed for now is tried again: 5 s, 30 s, 2 min, 10 min,
    /// then hourly.
    static func backoff(_ failures: Int) -> TimeInterval {
        [5, 30, 120, 600, 3600][min(max(failures, 1), 5) - 1]
    }

    /// What one change of a notification is for a browser: `show` when it is in Unread (and
    /// quiet or mute does not hold it back), `close` when it left Unread (only for what came
    /// after the subscription: anything older was never shown there), else nothing.
    func message(for notification: UserNotification, subscription: WebPushSubscription, _ context: Context, now: Date) -> WebPushMessage? {
        guard let view = NotificationView.current(of: notification, now: now) else {
            guard notification.createdDateTime >= subscription.created else { return nil }
            return .close(id: notification.id, state: "deleted", by: handler(of: notification, context))
        }
        if view == .unread {
            return context.interruptions.interrupts(notification) ? .show(Self.fitting(notification)) : nil
        }
        guard notification.createdDateTime >= subscription.created else { return nil }
        return .close(id: notification.id, state: view.rawValue, by: handler(of: notification, context))
    }

    /// Who changed it: a team's member, else the user and the device the service saw it from.
    private func handler(of notification: UserNotification, _ context: Context) -> WebPushMessage.Handler? {
        if let changedBy = notification.changedBy { return .init(user: changedBy.user, device: changedBy.device) }
        let device = core.handlers.device(of: notification.id)
        return .init(user: context.owner, device: device.map { context.deviceNames[$0] ?? $0 })
    }

    /// The notification as a `show` carries it: whole when it fits a push, else without its
    /// history (escalations, action results), then with its texts shortened.
    static func fitting(_ notification: UserNotification) -> UserNotification {
        func size(_ n: UserNotification) -> Int { (try? NottyJSON.encoder.encode(WebPushMessage.show(n)).count) ?? .max }
        var trimmed = notification
        if size(trimmed) <= WebPushCrypto.maxPlaintext { return trimmed }
        trimmed.escalations = nil
        trimmed.actionResults = nil
        for limit in [1000, 300, 100] where size(trimmed) > WebPushCrypto.maxPlaintext {
            trimmed.payload.rawContent = trimmed.payload.rawContent.map { String($0.prefix(limit)) }
            if var visual = trimmed.payload.visualContent {
                visual.title = String(visual.title.prefix(limit))
                visual.body = visual.body.map { String($0.prefix(limit)) }
                trimmed.payload.visualContent = visual
            }
            trimmed.launchUrl = trimmed.launchUrl.flatMap { $0.count <= limit ? $0 : nil }
        }
        if size(trimmed) > WebPushCrypto.maxPlaintext { trimmed.actions = nil }
        return trimmed
    }

    enum Outcome: Equatable {
        case sent
        /// 404 or 410: the subscription is over.
        case gone
        /// Worth trying again later (429, 5xx, no answer), with why.
        case later(String)
        /// Refused for good (another 4xx): this message is passed over.
        case skipped(String)
    }

    /// Encrypts and sends one message (RFC 8030: `TTL`, `Urgency`, `Topic` the notification's
    /// id, so a `close` replaces its `show` still waiting at the push service).
    func send(_ message: WebPushMessage, about notification: UserNotification, to subscription: WebPushSubscription, now: Date) async
        -> Outcome
    {
        guard let outbound else { return .later("no outbound requests on this service") }
        do {
            let (signing, _) = try await signingKey()
            let plaintext = try NottyJSON.encoder.encode(message)
            guard let p256dh = Data(base64URL: subscription.p256dh), let auth = Data(base64URL: try secrets.open(subscription.auth)) else {
                return .skipped("the subscription's keys are not base64url")
            }
            let body = try WebPushCrypto.encrypt(plaintext, p256dh: p256dh, auth: auth)
            let subject = config.publicURL ?? "mailto:notty@localhost"
            let authorization = try WebPushCrypto.authorization(
                endpoint: subscription.endpoint, key: signing, subject: subject, expires: now + 12 * 3600)
            let ttl = message.type == "show" ? max(60, min(28 * 86_400, Int(notification.expirationDateTime.timeIntervalSince(now)))) : 86_400
            let request = OutboundRequest(
                method: "POST", url: subscription.endpoint,
                headers: [
                    OutboundHeader("Content-Encoding", "aes128gcm"), OutboundHeader("Content-Type", "application/octet-stream"),
                    OutboundHeader("TTL", String(ttl)), OutboundHeader("Urgency", notification.priority == .high ? "high" : "normal"),
                    OutboundHeader("Topic", Self.topic(notification.id)), OutboundHeader("Authorization", authorization),
                ], body: body, timeout: .seconds(15))
            let answer = try await outbound.send(request)
            metrics.webPushes.increment()
            if answer.succeeded { return .sent }
            if answer.status == 404 || answer.status == 410 { return .gone }
            return answer.isWorthRetrying
                ? .later("the push service answered \(answer.status)") : .skipped("the push service answered \(answer.status)")
        } catch let error as OutboundError {
            // Refused by the outbound policy (or not a URL): no later try can go; dropped.
            return error.isWorthRetrying ? .later("\(error)") : .skipped("\(error)")
        } catch {
            return .skipped("\(error)")
        }
    }

    /// RFC 8030 §5.4: at most 32 characters of the base64url alphabet.
    static func topic(_ id: String) -> String {
        String(id.filter { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }.prefix(32))
    }
}

/// What ``WebPushDelivery`` asks of the storage.
public typealias WebPushWorkStorage = WebPushStorage & AccountStorage & SubscriptionStorage
