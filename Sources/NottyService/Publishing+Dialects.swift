import Foundation
import NottyCore
import NottyRecords
import NottySecrets
import NottyWebhooks

// MARK: - ntfy's held publishes, and the hooks the ntfy and Gotify doors publish to

extension Publishing {
    /// The webhook an ntfy request names; one with a secret wants it as its bearer token.
    package func ntfyHook(token: String, bearer: String?) async throws -> Hook {
        let hook = try await hook(token: token)
        try Self.check(.token(bearer), secret: hook.secret, body: Data(), kind: "ntfy")
        return hook
    }

    /// ntfy's limits on a delay: at least 10 s, at most 3 days ahead.
    package static let delayRange: ClosedRange<TimeInterval> = 10...(3 * 86_400)

    /// Holds an ntfy publish until it is due (durably: in storage), after checking it as if it
    /// were published now (the app's rate counts it now, as ntfy does).
    package func hold(_ message: NtfyMessage, delay: NtfyMessage.Delay, hook: Hook, messageId: String, sequenceId: String, topic: String) async throws
        -> NtfyAnswer
    {
        let now = clock.nowMillis()
        let due = delay.due(now: now)
        guard Self.delayRange.contains(due.timeIntervalSince(now)) else {
            throw ServiceError.badRequest("invalid delay: it must be between 10 seconds and 3 days from now")
        }
        let notification = message.notification(appNotificationId: sequenceId)
        _ = try publishInput(notification, index: 0, count: 1, userId: hook.subscription.userId, hostName: hook.app.hostName, now: now)
        try takeRate(of: hook.app, now: now)
        let body = try JSONEncoder().encode(DelayedPublish(notification, secrets: secrets))
        try await db {
            try await storage.insertDelayed(
                DelayedRecord(
                    id: messageId, userId: hook.subscription.userId, subscriptionId: hook.subscription.id,
                    hostName: hook.app.hostName, dueAt: due, body: String(decoding: body, as: UTF8.self), createdAt: now))
        }
        return NtfyAnswer(
            id: messageId, time: due, expires: nil, event: "message", topic: topic, title: message.title, message: message.message,
            priority: message.priority, tags: message.tags, click: message.click, sequenceId: message.sequenceId)
    }

    /// Publishes the held publishes that are due (the maintenance loop calls it twice a
    /// second). Each is claimed for a minute first, so instances sweeping together publish it
    /// once, and forgotten as soon as it is published. One whose webhook was revoked or whose
    /// app is gone by then, or that the service now refuses, is dropped with a warning; storage
    /// away ends the sweep (the claims lapse and the next sweeps take them again). A crash
    /// between publishing one and forgetting it (milliseconds) would publish it again.
    public func publishDueDelayed() async throws -> Int {
        let now = clock.nowMillis()
        let due = try await db { try await storage.claimDueDelayed(now: now, lease: now + 60, limit: 100) }
        var published = 0
        for record in due {
            do {
                if try await publishHeld(record) { published += 1 }
            } catch let error as ServiceError where error.kind == .unavailable {
                throw error  // storage away (db's 503): kept for a later sweep
            } catch {
                logger.warning("a held publish was refused; it is dropped", metadata: ["id": "\(record.id)", "error": "\(error)"])
            }
            try await db { try await storage.deleteDelayed(ids: [record.id]) }
        }
        return published
    }

    /// Publishes one held publish; false when it is dropped instead.
    private func publishHeld(_ record: DelayedRecord) async throws -> Bool {
        guard let item = try? JSONDecoder().decode(DelayedPublish.self, from: Data(record.body.utf8)) else {
            logger.warning("a held publish cannot be read; it is dropped", metadata: ["id": "\(record.id)"])
            return false
        }
        let subscription = try await db { try await storage.subscription(id: record.subscriptionId) }
        guard let subscription, !subscription.revoked, try await db({ try await storage.app(hostName: record.hostName) }) != nil else {
            logger.notice("a held publish's webhook was revoked or its app removed; it is dropped", metadata: ["id": "\(record.id)"])
            return false
        }
        var input = try publishInput(item.notification, index: 0, count: 1, userId: record.userId, hostName: record.hostName, now: clock.nowMillis())
        input.team = try await teamName(ofFeed: record.userId)
        _ = try await db { try await storage.publish(batch: [input]) }
        metrics.publishes.increment()
        return true
    }
}

/// What a held publish keeps of its notification.
struct DelayedPublish: Codable {
    var appNotificationId: String
    var title: String
    var body: String?
    var priority: String
    var launchUrl: String?
    /// The whole actions as the service stores them (their `Codable` form is what devices see).
    var actions: String?

    init(_ notification: WebhookNotification, secrets: SecretBox) {
        appNotificationId = notification.appNotificationId ?? ""
        title = notification.title
        body = notification.body
        priority = notification.priority.rawValue
        launchUrl = notification.launchUrl
        actions = secrets.storedActions(notification.actions)
    }

    var notification: WebhookNotification {
        WebhookNotification(
            appNotificationId: appNotificationId, title: title, body: body, priority: Priority(rawValue: priority) ?? .none, launchUrl: launchUrl,
            actions: NotificationAction.list(actions.flatMap { JSONValue(jsonText: $0) }))
    }
}
