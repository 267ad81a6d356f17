import Foundation
import NottyCore
import NottyRecords
import NottyService

/// Bookkeeping shared by the writes of one transaction: positions in the change order.
///
/// SQLite has one writer, so positions simply count up from the last committed one. PostgreSQL
/// has many; there each transaction first locks the users it writes for, then reserves
/// positions from a sequence (``init(reserved:)``), so that a user's feed order is commit order.
package final class WriteContext {
    /// The newest position handed out (or committed, before any).
    package private(set) var seq: Int64
    private var reserved: ArraySlice<Int64>?
    /// Users whose change feed moved in this transaction, with their newest cursor.
    package var changedUsers: [String: Int64] = [:]

    package init(seq: Int64) { self.seq = seq }

    package init(reserved: [Int64]) {
        self.seq = 0
        self.reserved = reserved[...]
    }

    /// The position `nextSeq` will hand out next, for a statement that may not take it
    /// (only without reserved positions).
    package var upcomingSeq: Int64 {
        precondition(reserved == nil, "positions were reserved")
        return seq + 1
    }

    /// Positions drawn later in the same transaction (after those reserved first).
    package func reserve(more positions: [Int64]) {
        precondition(reserved != nil, "positions were not reserved")
        reserved?.append(contentsOf: positions)
    }

    /// The teams whose feeds this write changed (their ids begin with ``Team/idPrefix``).
    package var changedTeams: [String] { changedUsers.keys.filter { FeedOwner(id: $0).isTeam } }

    /// Each member of a changed team hears of it as of a change of their own: a team's feed is
    /// part of each member's (PROTOCOL.md §13.1). `members`: (team id, user id) pairs.
    package func shareWithMembers(_ members: [(team: String, user: String)]) {
        for (team, user) in members {
            guard let seq = changedUsers[team] else { continue }
            changedUsers[user] = max(changedUsers[user] ?? 0, seq)
        }
    }

    /// The next position in the change order.
    package func nextSeq(for userId: String) -> Int64 {
        if reserved != nil {
            guard let next = reserved?.popFirst() else {
                preconditionFailure("a write used more change positions than it reserved")
            }
            seq = next
        } else {
            seq += 1
        }
        changedUsers[userId] = max(changedUsers[userId] ?? 0, seq)
        return seq
    }
}

/// Row access that ``MutationApplier`` needs inside a backend's write transaction.
package protocol MutationRowStore {
    func row(id: String, userId: String) throws -> StoredNotification?
    func save(_ row: StoredNotification) throws
    /// The status recorded for an already-applied `mutationId`, if any.
    func priorMutation(userId: String, mutationId: String) throws -> Int?
    func recordMutation(userId: String, mutationId: String, notificationId: String, status: Int, now: Date) throws
}

/// Applies one device mutation inside a write transaction, for any backend.
///
/// - The same `mutationId` twice applies once: the second gets the first's status and the
///   notification as it is now.
/// - Delete is final: a tombstone stays deleted and changes to it are dropped (404).
/// - PATCH fields are last writer wins by their clamped clocks (``NotificationRules``).
package enum MutationApplier {
    package static func apply(_ mutation: Mutation, userId: String, now: Date, context: WriteContext, store: some MutationRowStore) throws
        -> MutationResult
    {
        let current = try store.row(id: mutation.id, userId: userId)
        if let mutationId = mutation.mutationId, let status = try store.priorMutation(userId: userId, mutationId: mutationId) {
            let live = current.flatMap { $0.notification.status == .active ? $0.notification : nil }
            return MutationResult(id: mutation.id, mutationId: mutationId, status: status, notification: status == 200 ? live : nil)
        }
        let result = outcome(of: mutation, current: current, userId: userId, now: now, context: context)
        if let row = result.row { try store.save(row) }
        if let mutationId = mutation.mutationId, current != nil {
            try store.recordMutation(userId: userId, mutationId: mutationId, notificationId: mutation.id, status: result.result.status, now: now)
        }
        return result.result
    }

    private static func outcome(of mutation: Mutation, current: StoredNotification?, userId: String, now: Date, context: WriteContext)
        -> (result: MutationResult, row: StoredNotification?)
    {
        let notFound = ErrorBody(code: "itemNotFound", message: "no such notification")
        guard let current else {
            return (MutationResult(id: mutation.id, mutationId: mutation.mutationId, status: 404, error: notFound), nil)
        }
        let live = current.notification.isLive(at: now)
        switch mutation.operation {
        case .delete:
            // Deleting again (or deleting an expired one) answers 204 as well.
            guard live else { return (MutationResult(id: mutation.id, mutationId: mutation.mutationId, status: 204), nil) }
            var tombstone = NotificationRules.deleted(current, now: now, seq: context.nextSeq(for: userId))
            if let by = mutation.by { tombstone.notification.changedBy = by }
            return (MutationResult(id: mutation.id, mutationId: mutation.mutationId, status: 204), tombstone)
        case .patch:
            guard live else {
                let gone = ErrorBody(code: "itemNotFound", message: "this notification was deleted or has expired")
                return (MutationResult(id: mutation.id, mutationId: mutation.mutationId, status: 404, error: gone), nil)
            }
            var (row, visible) = NotificationRules.patched(current, change: mutation.change, changedAt: mutation.changedAt, now: now)
            if visible {
                row.seq = context.nextSeq(for: userId)
                // A team's notification says which member made its state what it is; a user's own
                // says which tool did when one did (an incident door, PROTOCOL.md §16), else nobody.
                if let by = mutation.by {
                    row.notification.changedBy = by
                } else if row.notification.team == nil {
                    row.notification.changedBy = nil
                }
            }
            return (MutationResult(id: mutation.id, mutationId: mutation.mutationId, status: 200, notification: row.notification), row)
        }
    }
}
