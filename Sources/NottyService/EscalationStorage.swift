import Foundation
import NottyCore
import NottyRecords

/// The user's escalation rules (PROTOCOL.md §11).
public protocol EscalationRuleStorage: Sendable {
    /// The user's rules, oldest first.
    func escalationRules(userId: String) async throws -> [EscalationRule]
    /// Stores a new rule; `false` (nothing stored) when the user has a rule of that name, or
    /// `limit` rules already.
    func insertEscalationRule(_ rule: EscalationRule, userId: String, limit: Int) async throws -> Bool
    /// Deletes one of the user's rules; `false` when there is none with that id.
    func deleteEscalationRule(id: String, userId: String) async throws -> Bool
}

/// What escalation keeps (PROTOCOL.md §11): tracks, deliveries, what each target was sent, each
/// target's last delivery and error. Deciding is ``EscalationPlanner``'s; a backend reads and
/// writes in one transaction around it, so that instances never decide the same thing twice.
public protocol EscalationStorage: Sendable {
    /// The users who have escalation rules.
    func escalationUserIds() async throws -> [String]
    /// For each of `userIds`, in one transaction: hands `plan` the user's notifications that
    /// changed since the last plan (at most `limit`, in feed order) with what is kept about
    /// them, writes what it decides and moves the user's escalation cursor past them. A user
    /// with rules and no cursor yet starts at their newest. Answers how many deliveries were
    /// made, and the users with more changes waiting.
    func planEscalations(
        userIds: [String], limit: Int, now: Date,
        _ plan: @escaping @Sendable (EscalationPlanInput) -> EscalationPlan
    ) async throws -> (deliveries: Int, more: [String])
    /// Hands `fire` each track due at `now` (at most `limit`, soonest first, each to one
    /// instance) and writes what it makes of it; answers how many deliveries were made.
    func fireDueEscalations(now: Date, limit: Int, _ fire: @escaping @Sendable (EscalationDue) -> EscalationFiring) async throws -> Int
    /// Claims up to `limit` deliveries due at `now` until `lease`, soonest first; one to a
    /// target about a notification waits until the earlier ones to it are done.
    func claimEscalationDeliveries(now: Date, lease: Date, limit: Int) async throws -> [EscalationDelivery]
    /// Records how claimed deliveries went, in one transaction: delivered (what the target was
    /// sent is kept), retried later, or given up; each target's last delivery or error either
    /// way. A `log` is kept on its notification, which moves in the feed so that every device
    /// shows it (escalation's own cursor moves past it when it had seen everything before).
    func finishEscalationDeliveries(_ finished: [FinishedDelivery], now: Date) async throws
    /// The escalations logged on these notifications of the user's, by notification id.
    func escalationLog(userId: String, notificationIds: [String]) async throws -> [String: [EscalationRecord]]
    /// Records a test message's outcome as the target's last delivery or error.
    func recordEscalationTest(ruleId: String, target: String, error: String?, now: Date) async throws
    /// Each target's last delivery and error, and deliveries waiting, of the user's rules, by rule id.
    func escalationStatus(userId: String) async throws -> [String: [EscalationTargetState]]
    /// Deliveries waiting, and of them those that failed at least once (`/metrics`).
    func escalationBacklog() async throws -> (pending: Int, failing: Int)
}

/// Runs of actions (PROTOCOL.md §12): each action's latest run of a notification as published, claimed
/// by one press at a time across every instance.
public protocol ActionStorage: Sendable {
    /// Makes `claim`'s press the one that runs the action, unless a run of the same
    /// publication is in flight (its lease not over) or succeeded: then answers that run.
    /// A failed run, a run of an earlier publication, or one whose lease ended is taken over.
    /// Nil: claimed, the caller runs it.
    func claimActionRun(_ claim: ActionClaim) async throws -> ActionResult?
    /// Records a claimed run's outcome; the notification, when still active, moves in the feed
    /// so that every device shows the outcome.
    func finishActionRun(_ claim: ActionClaim, result: ActionResult) async throws
    /// The latest done or failed run of each action of these notifications of the user's, of
    /// each one's current publication (`published`: its `createdDateTime`, in ms), by id.
    func actionResults(userId: String, published: [String: Int64]) async throws -> [String: [ActionResult]]
}

/// A press of an action, as ``ActionStorage`` claims and records it.
public struct ActionClaim: Sendable, Equatable {
    public var userId: String
    public var notificationId: String
    /// Which action, from 1.
    public var index: Int
    /// The notification's `createdDateTime` (ms): a re-publish makes its actions new.
    public var published: Int64
    public var label: String
    public var device: String?
    public var at: Date
    /// Until when the run holds its claim (a press after it, the run died with its process).
    public var leaseUntil: Date

    public init(userId: String, notificationId: String, index: Int, published: Int64, label: String, device: String?, at: Date, leaseUntil: Date) {
        self.userId = userId
        self.notificationId = notificationId
        self.index = index
        self.published = published
        self.label = label
        self.device = device
        self.at = at
        self.leaseUntil = leaseUntil
    }
}
