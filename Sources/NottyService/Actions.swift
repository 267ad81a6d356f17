import Foundation
import Logging
import NottyCore
import NottySecrets

/// Running actions (PROTOCOL.md §12): a device, a popup or a phone presses; the service makes the
/// `http` action's request itself, once however many press at once, records the outcome on the
/// notification (every device shows it) and, for `clear` actions that succeeded, dismisses the
/// notification everywhere.
public final class Actions: ServicePart {
    package let core: ServiceCore
    /// The storage this part uses: its concerns alone.
    let storage: any ActionRunStorage
    let inbox: Inbox
    let outbound: (any OutboundHTTP)?

    /// How long an action's request may take, connecting included.
    public static let timeout: Duration = .seconds(15)
    /// How long a run holds its claim: past it (its process died), a press runs it again.
    static let lease: TimeInterval = 60

    init(core: ServiceCore, storage: any ActionRunStorage, inbox: Inbox, outbound: (any OutboundHTTP)?) {
        self.core = core
        self.storage = storage
        self.inbox = inbox
        self.outbound = outbound
    }

    /// `POST /v1/me/notifications/{id}/actions/{n}`: runs action `n` (from 1) of the user's
    /// notification, pressed on `device` (its name, else its id). Answers the run's outcome:
    /// this press's, or, while another press's run is in flight or after it succeeded, that one's.
    public func press(userId: String, device: String?, id: String, action n: Int) async throws -> ActionResult {
        let notification = try await inbox.notification(userId: userId, id: id)
        guard let actions = notification.actions, actions.indices.contains(n - 1) else {
            let count = notification.actions?.count ?? 0
            throw ServiceError.notFound(
                count == 0 ? "this notification has no actions" : "no action \(n): this notification has \(count) (1–\(count))")
        }
        let action = actions[n - 1]
        guard action.kind == .http else {
            throw ServiceError.badRequest("action \(n) (\(action.label)) is a view action: the device opens its URL itself")
        }
        let now = clock.nowMillis()
        if let wait = core.limiter.take("user:" + userId, now: now) {
            metrics.rateLimited.increment()
            throw ServiceError.tooManyRequests(retryAfter: wait)
        }
        // A team's notification (PROTOCOL.md §13.1): its action runs once for the team, in the
        // team's feed, and its outcome says which member pressed it.
        let owner = try await db { try await storage.teamOwners(ids: [notification.id], userId: userId) }[notification.id] ?? userId
        let user = try await db { try await storage.user(id: userId) }
        let pressedOn = owner == userId ? device : [user?.userName, device].compactMap { $0 }.joined(separator: " on ")
        let claim = ActionClaim(
            userId: owner, notificationId: notification.id, index: n, published: ISOTime.millis(notification.createdDateTime),
            label: action.label, device: pressedOn, at: now, leaseUntil: now + Self.lease)
        if let recorded = try await db({ try await storage.claimActionRun(claim) }) { return recorded }
        let createdBy = "notty: \(user?.userName ?? userId)" + (device.map { " on \($0)" } ?? "")
        var result: ActionResult
        do throws(SecretBox.OpenError) {
            result = await run(try await secrets.opened(actions)[n - 1], index: n, device: pressedOn, createdBy: createdBy)
        } catch {
            result = ActionResult(action: n, label: action.label, status: .failed, device: pressedOn, at: clock.nowMillis())
            result.error = "this action cannot run: \(error)"
        }
        result.at = clock.nowMillis()
        let finished = result
        do {
            try await db { try await storage.finishActionRun(claim, result: finished) }
        } catch {
            // The request was made: say how it went, though it could not be recorded (a press after the lease may run it again).
            logger.error("cannot record an action's outcome", metadata: ["user": "\(userId)", "notification": "\(id)", "error": "\(error)"])
            return result
        }
        (result.status == .done ? metrics.actionsDone : metrics.actionsFailed).increment()
        if result.status == .done, action.clear {
            _ = try await inbox.mutate(
                userId: userId, device: device,
                [Mutation(id: notification.id, change: StateChange(readState: .read, userActionState: .dismissed))])
        }
        return result
    }

    /// How results name the device a token was issued to: its name, else the start of its id.
    public func deviceName(userId: String, deviceId: String?) async throws -> String? {
        try await inbox.deviceName(userId: userId, deviceId: deviceId)
    }

    /// Makes the request of an `http` action and says how it went; a target the outbound
    /// policy refuses fails without a request ("refused: not allowed: …"). Bodies of answers
    /// are never kept.
    func run(_ action: NotificationAction, index: Int, device: String?, createdBy: String) async -> ActionResult {
        var result = ActionResult(action: index, label: action.label, status: .failed, device: device, at: clock.nowMillis())
        guard let url = action.url else {
            result.error = "the action has no URL"
            return result
        }
        guard let outbound else {
            result.error = "this service makes no outbound requests"
            return result
        }
        let body = action.body(createdBy: createdBy, now: clock.nowMillis())
        var headers = action.headers.sorted { $0.key < $1.key }.map { OutboundHeader($0.key, $0.value) }
        if let body, !body.isEmpty, !action.headers.keys.contains(where: { $0.lowercased() == "content-type" }) {
            headers.append(
                OutboundHeader("Content-Type", body.hasPrefix("{") || body.hasPrefix("[") ? "application/json" : "text/plain; charset=utf-8"))
        }
        headers.append(OutboundHeader("User-Agent", "notty"))
        let request = OutboundRequest(
            method: action.method ?? "POST", url: url, headers: headers, body: body.map { Data($0.utf8) }, timeout: Self.timeout)
        do {
            let response = try await outbound.send(request)
            result.httpStatus = response.status
            result.status = response.succeeded ? .done : .failed
            if !response.succeeded { result.error = "HTTP \(response.status)" }
        } catch {
            result.error = error.isRefusal ? "refused: \(error.description)" : error.description
        }
        return result
    }
}

/// What ``Actions`` asks of the storage.
public typealias ActionRunStorage = ActionStorage & AccountStorage & SubscriptionStorage & FeedStorage
