import Crypto
import Foundation
import NottyCore
import NottyRecords
import NottySecrets
import NottyWebhooks
import Synchronization

// MARK: - Following the inbox as an ntfy topic (PROTOCOL.md §8.2)

extension Inbox {
    /// The ntfy topic `token` (a read-only device of platform `ntfy`): `404` when there is
    /// none or it was revoked, `403` when it is a webhook's token (which publishes).
    package func topic(token: String) async throws -> SubscriptionRecord {
        core.forgetCredentialsIfRevokedElsewhere()
        let hash = Secrets.tokenHash(token)
        let opened = try await openedHook(hash: hash)
        guard let subscription = opened?.subscription, !subscription.revoked, opened?.ownerDisabled != true else {
            throw ServiceError.notFound("no such topic: it was revoked, or the URL is mistyped")
        }
        guard subscription.platform == "ntfy", subscription.targetHostName == nil else {
            throw ServiceError.forbidden("this is a webhook's token, which publishes: subscribe to a topic made by notty subscribe --ntfy")
        }
        // The topic's name at the ntfy upstream, learnt from its token (only hashes are stored).
        if config.ntfyUpstream != nil, let publicURL = config.publicURL {
            let upstreamId = Inbox.upstreamTopic(publicURL: publicURL, topic: token)
            if subscription.upstreamId != upstreamId {
                try await db { try await storage.setUpstreamId(subscriptionId: subscription.id, upstreamId: upstreamId) }
                core.hooksCache.remove("hook:" + hash)
            }
        }
        return subscription
    }

    /// The hook or topic whose URL token hashes to `hash` (live or not), its sealed parts opened:
    /// what publishing to a hook and following a topic read, cached a few seconds.
    func openedHook(hash: String) async throws -> OpenedHook? {
        try await core.hooksCache.value("hook:" + hash) {
            await opened(try await db { try await storage.subscription(webhookHash: hash) })
        }
    }

    /// `subscription` with its sealed webhook secret and Alertmanager URL opened beside it (what
    /// the hook caches hold). A secret that cannot be opened (sealed under a key this service
    /// does not have) is a check no request passes; such a URL is dropped, and both are logged.
    private func opened(_ subscription: SubscriptionRecord?) async -> OpenedHook? {
        guard let s = subscription else { return nil }
        var hook = OpenedHook(subscription: s)
        // A disabled user's topics stop with their tokens (PROTOCOL.md §15); a team's feed is never disabled.
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

    /// Whether the topic a stream follows is still there (a revocation ends its streams).
    package func topicIsLive(token: String) async -> Bool {
        do {
            _ = try await topic(token: token)
            return true
        } catch let error as ServiceError {
            return error.kind != .notFound && error.kind != .forbidden
        } catch {
            return true  // storage away: the stream stays; the revocation is seen when it is back
        }
    }

    /// Wakes every stream of `userId` (doorbells and topics), as a change does: a revoked
    /// topic's streams then see it and end.
    func wakeStreams(userId: String) async {
        guard let latest = try? await latestCursor(userId: userId) else { return }
        hub.ring([userId: latest])
    }
}

extension Inbox {
    /// ntfy's name for a topic at the upstream: the SHA-256 of its URL on this service, in hex.
    package static func upstreamTopic(publicURL: String, topic: String) -> String {
        Hex.string(SHA256.hash(data: Data((publicURL + "/" + topic).utf8)))
    }
}
