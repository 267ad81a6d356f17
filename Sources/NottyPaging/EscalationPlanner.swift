import Foundation
import NottyCore
import NottyRecords
import NottyService
import Synchronization

/// PROTOCOL.md §11's rules as pure functions, shared by every storage backend: what is unhandled, when
/// a rule's clock starts, what a change takes back, what a due track sends, how long a failed
/// delivery waits.
public enum EscalationPlanner {
    /// Where a notification stands for escalation at `now`.
    public enum Standing: Equatable, Sendable {
        /// In Unread: the rules' clocks run.
        case unhandled
        /// Snoozed until then: handled now, unhandled again (a new clock) when the snooze ends.
        case snoozed(until: Date)
        /// Read, activated or dismissed (the view's name).
        case handled(String)
        /// Deleted or expired.
        case gone
    }

    public static func standing(of notification: UserNotification, now: Date) -> Standing {
        guard let view = NotificationView.current(of: notification, now: now) else { return .gone }
        switch view {
        case .unread: return .unhandled
        case .snoozed: return .snoozed(until: notification.snoozedUntil ?? now)
        default: return .handled(view.rawValue)
        }
    }

    /// What the changes of one user's notifications mean: clocks started, restarted or stopped;
    /// escalations not yet begun called back; those sent taken back (`handled`, `deleted`).
    /// `devices` names who handled a notification, by its id, when the service knows.
    public static func plan(_ input: EscalationPlanInput, devices: [String: String] = [:], newId: () -> String) -> EscalationPlan {
        var plan = EscalationPlan()
        let tracks = Dictionary(grouping: input.tracks, by: \.notificationId)
        let sent = Dictionary(grouping: input.sent, by: \.notificationId)
        let pending = Dictionary(grouping: input.pending, by: \.notificationId)
        let rulesById = Dictionary(input.rules.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        for notification in input.changed {
            let id = notification.id
            let ownTracks = tracks[id] ?? []
            let standing = standing(of: notification, now: input.now)
            if standing == .unhandled {
                let covering = input.rules.filter { $0.covers(notification) }
                for rule in covering {
                    if let track = ownTracks.first(where: { $0.ruleId == rule.id }) {
                        // A re-publish (new again) restarts the clock; anything else leaves it.
                        guard notification.createdDateTime > track.since else { continue }
                    }
                    let since =
                        ownTracks.first(where: { $0.ruleId == rule.id }) == nil
                        ? max(notification.createdDateTime, notification.lastModifiedDateTime) : notification.createdDateTime
                    plan.saveTracks.append(
                        EscalationTrack(
                            notificationId: id, ruleId: rule.id, userId: input.userId, since: since,
                            dueAt: since + TimeInterval(rule.afterSeconds)))
                }
                for track in ownTracks where !covering.contains(where: { $0.id == track.ruleId }) {
                    plan.dropTracks.append((id, track.ruleId))
                }
                continue
            }
            // Handled, snoozed or gone: nothing more is sent, and what was sent is taken back.
            if case .snoozed(let until) = standing {
                for rule in input.rules where rule.covers(notification) {
                    plan.saveTracks.append(
                        EscalationTrack(
                            notificationId: id, ruleId: rule.id, userId: input.userId, since: until,
                            dueAt: until + TimeInterval(rule.afterSeconds)))
                }
                for track in ownTracks where !input.rules.contains(where: { $0.id == track.ruleId && $0.covers(notification) }) {
                    plan.dropTracks.append((id, track.ruleId))
                }
            } else {
                plan.dropTracks.append(contentsOf: ownTracks.map { (id, $0.ruleId) })
            }
            let event: EscalationEvent = standing == .gone ? .deleted : .handled
            var handledBy: HandledBy?
            // A team's notification says which member changed it, on which device (PROTOCOL.md §13.1).
            let member = notification.team == nil ? nil : notification.changedBy
            let device = member?.device ?? devices[id]
            switch standing {
            case .handled(let state): handledBy = HandledBy(user: member?.user, device: device, state: state, at: notification.lastModifiedDateTime)
            case .snoozed:
                handledBy = HandledBy(
                    user: member?.user, device: device, state: NotificationView.snoozed.rawValue, at: notification.lastModifiedDateTime)
            default: break
            }
            // Targets told already (or being told now) get the retraction once each.
            var retract: [String: (ruleId: String, ruleName: String)] = [:]
            for record in sent[id] ?? [] {
                let due = event == .deleted ? record.lastEvent != .deleted : record.lastEvent == .escalated
                if due { retract[record.target] = (record.ruleId, record.ruleName) }
            }
            var onItsWay: Set<String> = []
            for delivery in pending[id] ?? [] {
                if delivery.event == .escalated && !delivery.inFlight {
                    plan.cancel.append(delivery.id)
                } else if delivery.event == .escalated || (event == .deleted && delivery.event == .handled) {
                    // Being sent now, or a retraction still to come: follow it.
                    retract[delivery.target] = retract[delivery.target] ?? (delivery.ruleId, delivery.ruleName)
                } else if delivery.event == event {
                    onItsWay.insert(delivery.target)
                }
            }
            // A retraction already on its way is not planned again, whatever order the pending
            // deliveries came in (a page still in flight listed after it planned a second one).
            for target in onItsWay { retract[target] = nil }
            for (target, origin) in retract.sorted(by: { $0.key < $1.key }) {
                let ruleName = origin.ruleName.isEmpty ? rulesById[origin.ruleId]?.name ?? "" : origin.ruleName
                plan.deliveries.append(
                    EscalationDelivery(
                        id: newId(), userId: input.userId, notificationId: id, ruleId: origin.ruleId, ruleName: ruleName, target: target,
                        event: event,
                        notification: notification, handledBy: handledBy, firstAt: input.now, nextAt: input.now))
            }
            for record in sent[id] ?? [] where retract[record.target] != nil {
                var updated = record
                updated.lastEvent = event
                plan.saveSent.append(updated)
            }
        }
        return plan
    }

    /// What a due track does at `now`: sends to each of the rule's targets when the
    /// notification is still unhandled and not muted, and comes due again after `repeat`.
    ///
    /// `resolve` answers whom a team policy's `oncall`, `team` or `user:NAME` reaches now
    /// (PROTOCOL.md §13.2); a target reached twice in one firing is sent once.
    public static func fire(_ due: EscalationDue, now: Date, resolve: (PagingTarget) -> [Page] = { _ in [] }, newId: () -> String)
        -> EscalationFiring
    {
        var track = due.track
        guard let notification = due.notification, let rule = due.rule, rule.covers(notification) else {
            return EscalationFiring(deliveries: [], track: nil)
        }
        switch standing(of: notification, now: now) {
        case .unhandled:
            break
        case .snoozed(let until):
            // A snooze the planner has not seen yet: the clock starts when it ends.
            track.since = until
            track.dueAt = until + TimeInterval(rule.afterSeconds)
            track.sent = 0
            return EscalationFiring(deliveries: [], track: track)
        case .handled, .gone:
            return EscalationFiring(deliveries: [], track: nil)
        }
        if Interruptions(preferences: due.preferences, now: now).isMuted(notification) {
            // Muted: never escalated (PROTOCOL.md §9, §11); quiet hours do not hold it back.
            track.dueAt = nil
            return EscalationFiring(deliveries: [], track: track)
        }
        var pages: [Page] = []
        for target in rule.targets {
            for page in PagingTarget(target).map(resolve) ?? [Page(target: target)] where !pages.contains(where: { $0.target == page.target }) {
                pages.append(page)
            }
        }
        let deliveries = pages.map { page in
            EscalationDelivery(
                id: newId(), userId: track.userId, notificationId: notification.id, ruleId: rule.id, ruleName: rule.name,
                target: page.target, event: .escalated, notification: notification, recipient: page.recipient, firstAt: now, nextAt: now)
        }
        track.sent += 1
        track.dueAt = rule.repeatSeconds.map { now + TimeInterval($0) }
        return EscalationFiring(deliveries: deliveries, track: track)
    }

    /// One target a firing sends to, and whom it reaches (a member, for a team's policy).
    public struct Page: Sendable, Equatable {
        public var target: String
        public var recipient: String?
        public init(target: String, recipient: String? = nil) {
            self.target = target
            self.recipient = recipient
        }

        public init(_ page: PageTarget, recipient: String? = nil) {
            self.init(target: page.stored, recipient: recipient)
        }
    }

    /// Whom a team policy's `target` reaches at `now` (PROTOCOL.md §13.2): the contacts of whoever
    /// is on call then, of the member named, or of every member. Someone it should reach and
    /// cannot (no rotation, nobody on call, a member without contacts, a name no longer a
    /// member) is a ``PageTarget/unreachable(_:)`` page that fails with the reason.
    public static func pages(
        for target: PagingTarget, team: String, members: [String], schedule: Result<OnCallSchedule, OnCallSchedule.Unreadable>?,
        contacts: [String: [String]], now: Date
    ) -> [Page] {
        func reach(_ user: String) -> [Page] {
            guard members.contains(user) else {
                return [Page(.unreachable("\(user) is no longer a member of \(team)"), recipient: user)]
            }
            let known = contacts[user] ?? []
            guard !known.isEmpty else {
                return [Page(.unreachable("\(user) has no contacts (notty contact add)"), recipient: user)]
            }
            return known.map { Page(target: $0, recipient: user) }
        }
        switch target {
        case .onCall:
            let readable: OnCallSchedule
            switch schedule {
            case nil:
                return [Page(.unreachable("\(team) has no rotation (notty oncall \(team) --rotation …)"))]
            case .failure(let unreadable): return [Page(.unreachable(unreadable.description))]
            case .success(let schedule): readable = schedule
            }
            guard let user = readable.onCall(at: now) else {
                return [Page(.unreachable("nobody is on call for \(team) now"))]
            }
            return reach(user)
        case .user(let user): return reach(user)
        case .team: return members.flatMap(reach)
        }
    }

    /// How long retries go on.
    public static let retryWindow: TimeInterval = 86_400

    /// What becomes of a delivery that failed at `now` for the `attempts`-th time: tried again
    /// after 5 s, 10 s, 20 s … at most an hour apart, for a day; `retryable` false ends it.
    public static func afterFailure(_ delivery: EscalationDelivery, attempts: Int, error: String, retryable: Bool, now: Date) -> DeliveryResult {
        guard retryable, now < delivery.firstAt + retryWindow else { return .failed(error: error) }
        let wait = min(3600.0, 5.0 * pow(2.0, Double(max(0, min(attempts - 1, 20)))))
        return .retry(at: now + wait, error: error)
    }
}
