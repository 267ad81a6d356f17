import Foundation
import NottyCore
import NottyRecords
import Synchronization

/// Paging (PROTOCOL.md §11 escalation, §13.2 on call) as the rest of the service sees it. The
/// engine is `NottyPaging`'s `Escalation`, a module of its own over this module's storage
/// protocols, the way the storage backends are; `NotificationService` is composed with it.
/// The service tells it of every change, and asks it to send one delivery now (a test). Who
/// handled what is the core's (``HandlerBook``), whether a target may be aimed at the outbound
/// policy's (``EscalationTarget/refusal(by:)``).
public protocol Paging: Sendable {
    /// Its background work, run by ``BackgroundJobs`` as one job.
    var jobs: [BackgroundJob] { get }
    /// The storage committed changes for these users (their newest cursors).
    func changed(_ cursors: [String: Int64])
    /// `userId` has a new rule: their changes are planned from now on.
    func ruleAdded(userId: String)
    /// Teams, schedules or contacts changed: whom a team's policy pages is read again.
    func pagingChanged()
    /// Sends `delivery` once, now, outside the outbox: what went wrong (nil: it was sent).
    func sendOnce(_ delivery: EscalationDelivery) async -> String?
    /// `POST /v1/me/escalations/{id}/test`: each of the rule's targets sent a test, with its outcome.
    func test(userId: String, ruleId: String) async throws -> [EscalationTestOutcome]
}

/// Who handled which notification, as this instance saw it: the device a change came from,
/// named as its user named it (what a `handled` page and a browser's `close` say). Kept a
/// minute once there are many.
package final class HandlerBook: Sendable {
    package struct Entry: Sendable {
        package var userId: String
        package var device: String
        package var at: Date
    }

    private let entries = Mutex<[String: Entry]>([:])

    /// A device of `userId`'s handled these notifications.
    func note(userId: String, ids: [String], device: String, now: Date) {
        entries.withLock { map in
            if map.count > 10_000 { map = map.filter { now.timeIntervalSince($0.value.at) < 60 } }
            for id in ids { map[id] = Entry(userId: userId, device: device, at: now) }
        }
    }

    /// The device that handled `id` lately (nil: none known).
    package func device(of id: String) -> String? {
        entries.withLock { $0[id]?.device }
    }

    /// The entries of these users' notifications, by notification id (a copy of those alone,
    /// not of the whole book, on the planner's change path).
    package func entries(of userIds: Set<String>) -> [String: Entry] {
        entries.withLock { $0.filter { userIds.contains($0.value.userId) } }
    }
}
