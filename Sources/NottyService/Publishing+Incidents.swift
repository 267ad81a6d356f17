import Foundation
import NottyCore
import NottyWebhooks

// MARK: - Incident doors (PROTOCOL.md §16)

extension Publishing {
    /// What an incident door answers when the event was taken.
    public enum IncidentOutcome: Sendable, Equatable {
        /// An alert event: its dedup key.
        case alert(dedupKey: String)
        case change
    }

    /// `POST /v2/enqueue` and `POST /v2/change/enqueue` (PagerDuty's Events API v2): the routing
    /// key is a hook's token. A trigger publishes, or updates in place the alert with the same
    /// dedup key (one is made when none is given); acknowledge is Read and resolve Dismissed on
    /// every device, as its user's own change would be (handled: escalation and pages stop),
    /// with the sending tool named as who handled it. Acknowledging or resolving an alert that
    /// is not there (any more) is taken and does nothing, as PagerDuty does.
    public func pagerDuty(_ event: PagerDutyEvent) async throws -> IncidentOutcome {
        let hook = try await incidentHook(token: event.routingKey, door: "PagerDuty's Events API")
        guard var notification = event.notification else {
            guard let dedupKey = event.dedupKey else { throw ServiceError.badRequest("'dedup_key' is missing or blank") }
            try await handle(alert: dedupKey, of: hook, resolved: event.action == .resolve, by: event.client ?? "PagerDuty Events API")
            return .alert(dedupKey: dedupKey)
        }
        let dedupKey = event.dedupKey ?? Self.newDedupKey()
        notification.appNotificationId = event.isChange ? "change-" + dedupKey : dedupKey
        _ = try await publish([notification], as: hook)
        return event.isChange ? .change : .alert(dedupKey: dedupKey)
    }

    /// A new dedup key: 32 hexadecimal digits, as PagerDuty makes them.
    static func newDedupKey() -> String {
        (0..<16).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
    }

    /// The hook an incident door's key names. These doors carry one key and nothing else, so a
    /// hook with a secret is not reachable through them (as with Gotify's).
    func incidentHook(token: String, door: String) async throws -> Hook {
        let hook: Hook
        do {
            hook = try await self.hook(token: token)
        } catch let error as ServiceError where error.kind == .notFound || error.kind == .forbidden {
            throw ServiceError.badRequest(
                "no notty webhook has this key: make one with notty subscribe --app HOST --webhook (its token is the key), or check for a typo")
        }
        if hook.subscription.webhookSecret != nil {
            throw ServiceError.badRequest(
                "this webhook has a secret, which \(door) cannot send: make a webhook without --secret for it")
        }
        return hook
    }

    /// Acknowledges (Read) or resolves (Dismissed) the hook's active alert `alertId` on every
    /// device, `by` named as who handled it; nothing when there is none.
    func handle(alert alertId: String, of hook: Hook, resolved: Bool, by: String) async throws {
        // Every event counts against the app's rate, as PagerDuty throttles them all.
        if let wait = core.limiter.take(hook.app.clientId, now: clock.nowMillis()) {
            metrics.rateLimited.increment()
            throw ServiceError.tooManyRequests(retryAfter: wait)
        }
        let userId = hook.subscription.userId
        guard
            let found = try await db({ try await storage.notification(userId: userId, hostName: hook.app.hostName, appNotificationId: alertId) }),
            found.status == .active
        else { return }
        var mutation = Mutation(id: found.id, change: resolved ? StateChange(userActionState: .dismissed) : StateChange(readState: .read))
        mutation.by = ChangedBy(user: String(by.prefix(64)), device: nil, at: clock.nowMillis())
        _ = try await inbox.mutate(userId: userId, [mutation])
    }
}
