import Foundation
import NottyCore
import NottyRecords
import NottySecrets
import NottyWebhooks

// MARK: - ntfy and Gotify publishing (PROTOCOL.md §8.1)

extension Publishing {
    /// An ntfy publish to the topic `token` (a webhook's token): published as the webhook's
    /// app, the sequence id as `appNotificationId` (a new message's id when none is given, so
    /// clearing by the message id works as in ntfy). Returns ntfy's answer.
    public func ntfyPublish(token: String, _ message: NtfyMessage, bearer: String?) async throws -> NtfyAnswer {
        let hook = try await ntfyHook(token: token, bearer: bearer)
        let messageId = NtfyAnswer.newMessageId()
        let sequenceId = message.sequenceId ?? messageId
        if let delay = message.delay {
            return try await hold(message, delay: delay, hook: hook, messageId: messageId, sequenceId: sequenceId, topic: token)
        }
        guard let published = try await publish([message.notification(appNotificationId: sequenceId)], as: hook).first else {
            throw ServiceError.badRequest("nothing to publish")
        }
        return NtfyAnswer(
            id: messageId, time: clock.nowMillis(), expires: published.expirationDateTime, event: "message", topic: token,
            title: message.title, message: message.message, priority: message.priority, tags: message.tags,
            click: message.click, sequenceId: message.sequenceId)
    }

    /// `PUT <base>/<token>/<sequenceId>/clear` (Read + Dismissed on every device, stamped
    /// with the service's clock) or `DELETE <base>/<token>/<sequenceId>` (deleted everywhere).
    public func ntfyEnd(token: String, sequenceId: String, delete: Bool, bearer: String?) async throws -> NtfyAnswer {
        let hook = try await ntfyHook(token: token, bearer: bearer)
        let userId = hook.subscription.userId
        let unknown = ServiceError.notFound("no active message with sequence ID \(sequenceId) on this topic")
        guard Ntfy.isValidSequenceId(sequenceId) else { throw unknown }
        guard let found = try await db({ try await storage.notification(userId: userId, hostName: hook.app.hostName, appNotificationId: sequenceId) })
        else {
            throw unknown
        }
        let change = delete ? StateChange() : StateChange.clear
        let result = try await inbox.mutate(userId: userId, [Mutation(id: found.id, operation: delete ? .delete : .patch, change: change)])[0]
        guard result.status < 300 else { throw unknown }
        return NtfyAnswer(
            id: NtfyAnswer.newMessageId(), time: clock.nowMillis(), expires: found.expirationDateTime,
            event: delete ? "message_delete" : "message_clear", topic: token, sequenceId: sequenceId)
    }

    /// Gotify's `POST /message` with the app token `token` (a webhook's token). A webhook
    /// with a secret is not reachable this way: Gotify has nowhere to send a second secret.
    public func gotifyPublish(token: String?, _ request: WebhookRequest) async throws -> GotifyAnswer {
        let denied = ServiceError.unauthenticated("you need to provide a valid access token: the token of a notty webhook")
        guard let token, !token.isEmpty else { throw denied }
        let hook = try await hookWithoutSecret(
            token: token, unknown: denied,
            secret: .unauthenticated(
                "this webhook has a secret, which Gotify's API cannot send: publish to its hook URL with Authorization: Bearer SECRET"))
        let message: GotifyMessage
        do {
            message = try Gotify.message(request)
        } catch {
            throw ServiceError.badRequest(error.message)
        }
        guard let published = try await publish([message.notification], as: hook).first else { throw ServiceError.badRequest("nothing to publish") }
        return GotifyAnswer(
            id: GotifyAnswer.number(published.id), appid: GotifyAnswer.number(hook.app.clientId), message: message.message,
            title: message.title ?? published.payload.visualContent?.title ?? "", priority: message.priority ?? 5,
            date: ISOTime.format(published.createdDateTime), extras: message.extras)
    }
}

extension Publishing {
    /// The webhook an ntfy request names; one with a secret wants it as its bearer token.
    func ntfyHook(token: String, bearer: String?) async throws -> Hook {
        let hook = try await hook(token: token)
        try Self.check(.token(bearer), secret: hook.secret, body: Data(), kind: "ntfy")
        return hook
    }

    /// ntfy's limits on a delay: at least 10 s, at most 3 days ahead.
    static let delayRange: ClosedRange<TimeInterval> = 10...(3 * 86_400)

    /// Holds an ntfy publish until it is due (durably: in storage), after checking it as if it
    /// were published now (the app's rate counts it now, as ntfy does).
    func hold(_ message: NtfyMessage, delay: NtfyMessage.Delay, hook: Hook, messageId: String, sequenceId: String, topic: String) async throws
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

/// Gotify's message JSON.
public struct GotifyAnswer: Codable, Sendable, Equatable {
    public var id: Int64
    public var appid: Int64
    public var message: String
    public var title: String
    public var priority: Int
    public var date: String
    public var extras: JSONValue?

    /// A positive integer standing for an id (Gotify's ids are integers; notty's are not):
    /// 52 bits of its SHA-256, so a JavaScript client reads it exactly.
    static func number(_ id: String) -> Int64 {
        let hex = Secrets.tokenHash(id).prefix(13)
        return max(1, Int64(hex, radix: 16) ?? 1)
    }
}
