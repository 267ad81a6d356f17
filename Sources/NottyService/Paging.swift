import Foundation
import NottyCore

/// Paging (PROTOCOL.md §11 escalation, §13.2 on call) as the rest of the service sees it. The
/// engine is `NottyPaging`'s `Escalation`, a module of its own over this module's storage
/// protocols, the way the storage backends are; `NotificationService` is composed with it.
/// The inbox tells it of every change and of who handled what, and asks it whether a target
/// may be aimed at and to send one delivery now (a test).
public protocol Paging: Sendable {
    /// Its background work, run by ``BackgroundJobs`` as one job.
    var jobs: [BackgroundJob] { get }
    /// The storage committed changes for these users (their newest cursors).
    func changed(_ cursors: [String: Int64])
    /// A device of `userId`'s, named `device`, handled these notifications.
    func noteHandled(userId: String, ids: [String], device: String)
    /// The device that handled `id` lately as this instance saw it (nil: none known).
    func handler(of id: String) -> String?
    /// `userId` has a new rule: their changes are planned from now on.
    func ruleAdded(userId: String)
    /// Teams, schedules or contacts changed: whom a team's policy pages is read again.
    func pagingChanged()
    /// Why the outbound policy refuses `target` before any lookup (nil: it may be tried).
    func refusal(of target: EscalationTarget) -> String?
    /// Sends `delivery` once, now, outside the outbox: what went wrong (nil: it was sent).
    func sendOnce(_ delivery: EscalationDelivery) async -> String?
    /// `POST /v1/me/escalations/{id}/test`: each of the rule's targets sent a test, with its outcome.
    func test(userId: String, ruleId: String) async throws -> [EscalationTestOutcome]
}
