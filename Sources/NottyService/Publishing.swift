import Foundation
import Logging
import NottyCore
import NottyRecords
import Synchronization

/// Publishing (PROTOCOL.md §2.2): the Graph route's publish and delete, and (in extensions) webhooks,
/// the ntfy and Gotify doors, held publishes.
public final class Publishing: ServicePart {
    package let core: ServiceCore
    /// The storage this part uses: its concerns alone.
    package let storage: any PublishingStorage
    /// Team names by the id of their feed (``teamName(ofFeed:)``).
    let teamNames = Mutex<[String: String]>([:])
    /// Where an app's clear or delete (ntfy's) is applied, as a device's change is.
    package let inbox: Inbox
    /// Which teams a hook's user may publish to (an Opsgenie alert's `responders`, §16.2).
    package let teams: Teams

    init(core: ServiceCore, storage: any PublishingStorage, inbox: Inbox, teams: Teams) {
        self.core = core
        self.storage = storage
        self.inbox = inbox
        self.teams = teams
    }

    private func subscription(for app: AppRecord, unsId: String?) async throws -> SubscriptionRecord {
        guard let unsId, !unsId.isEmpty else {
            throw ServiceError.badRequest("the X-UNS-ID header is required: the user's userNotificationSubscriptionId")
        }
        let subscription = try await core.subscriptionsCache.value(unsId) { try await db { try await storage.subscription(id: unsId) } }
        guard let subscription, !subscription.revoked, subscription.expiresAt > clock.nowMillis(),
            let host = subscription.targetHostName, host.equalsIgnoringASCIICase(app.hostName)
        else { throw ServiceError.forbidden("this X-UNS-ID is unknown, revoked, expired or belongs to another app") }
        return subscription
    }

    /// Publishes (or re-publishes) a notification for the user behind `unsId`.
    public func publish(app: AppRecord, unsId: String?, body: Data) async throws -> UserNotification {
        let subscription = try await subscription(for: app, unsId: unsId)
        let now = clock.nowMillis()
        try takeRate(of: app, now: now)
        let request: PublishRequest
        do {
            request = try PublishRequest(body: body, limits: config.limits)
        } catch {
            throw ServiceError.badRequest(error.message)
        }
        if let host = request.targetHostName, !host.equalsIgnoringASCIICase(app.hostName) {
            throw ServiceError.badRequest("targetHostName \(host) is not this subscription's app (\(app.hostName))")
        }
        var input = PublishInput(
            userId: subscription.userId, hostName: app.hostName, request: request,
            expiration: try expiration(request.expirationDateTime, now: now), now: now, secrets: secrets)
        input.team = try await teamName(ofFeed: input.userId)
        let stored = try await db { try await storage.publish(input) }
        metrics.publishes.increment()
        return stored
    }

    /// Takes `count` of `app`'s publish rate (every door's publishes and changes count), or
    /// refuses with `429` and when to try again.
    package func takeRate(of app: AppRecord, count: Int = 1, now: Date) throws {
        guard let wait = core.limiter.take(app.clientId, count: count, now: now) else { return }
        metrics.rateLimited.increment()
        throw ServiceError.tooManyRequests(retryAfter: wait)
    }

    /// The team whose feed `userId` is, by name (its account row is named `team/NAME`); nil for
    /// a user. Looked up once a team: a team's name never changes.
    package func teamName(ofFeed userId: String) async throws -> String? {
        guard FeedOwner(id: userId).isTeam else { return nil }
        if let known = teamNames.withLock({ $0[userId] }) { return known }
        guard let owner = try await db({ try await storage.user(id: userId) }) else { return nil }
        let name = String(owner.userName.dropFirst(Team.feedOwnerName("").count))
        teamNames.withLock { $0[userId] = name }
        return name
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
            try await storage.deleteByApp(
                userId: subscription.userId, hostName: app.hostName, appNotificationId: appNotificationId, now: clock.nowMillis())
        }
        guard deleted else { throw ServiceError.notFound("no active notification with appNotificationId \(appNotificationId)") }
    }
}

/// What ``Publishing`` asks of the storage.
public typealias PublishingStorage = AccountStorage & SubscriptionStorage & FeedStorage & DelayedPublishStorage
