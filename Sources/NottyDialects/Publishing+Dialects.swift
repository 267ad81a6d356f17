import Foundation
import NottyCore
import NottyRecords
import NottySecrets
import NottyService
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
