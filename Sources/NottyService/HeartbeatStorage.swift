import Foundation
import NottyCore

/// Heartbeats (PROTOCOL.md §16.3): each a row with its due time, one index over the due times
/// that the announcing job reads (no timer per heartbeat), claims so that two instances never
/// announce one lateness twice.
public protocol HeartbeatStorage: Sendable {
    /// Adds `heartbeat` unless its owner has `limit` already or one of its name.
    func insertHeartbeat(_ heartbeat: HeartbeatRecord, limit: Int) async throws -> HeartbeatInsertOutcome
    /// The owner's heartbeats by name.
    func heartbeats(ownerId: String) async throws -> [HeartbeatRecord]
    func heartbeat(tokenHash: String) async throws -> HeartbeatRecord?
    /// The owner's heartbeat `name` (one indexed read: Opsgenie's pings name it).
    func heartbeat(ownerId: String, name: String) async throws -> HeartbeatRecord?
    /// Deletes the owner's heartbeat `name`; what it was (nil: none).
    func deleteHeartbeat(ownerId: String, name: String) async throws -> HeartbeatRecord?
    /// Pauses the owner's heartbeat `name` (its notification no longer out, any claim dropped),
    /// or resumes it, due every + grace after `now`; what it was before (nil: none).
    func pauseHeartbeat(ownerId: String, name: String, paused: Bool, now: Date) async throws -> HeartbeatRecord?
    /// Changes what is given of the owner's heartbeat `name` (a new `every` counts from its last
    /// ping, or its making); what it was before (nil: none).
    func updateHeartbeat(ownerId: String, name: String, every: Int?, grace: Int?, priority: Priority?, message: String?) async throws
        -> HeartbeatRecord?
    /// A ping of heartbeat `id` at `at`: its last ping, whether it failed, whether its
    /// notification is out now (`alerting`; never while paused), due again `every` + `grace`
    /// later, any claim dropped. What it was before (nil: none).
    func pingHeartbeat(id: String, at: Date, failed: Bool, alerting: Bool) async throws -> HeartbeatRecord?
    /// The earliest due time of a heartbeat that may go late (not paused, nothing out), claimed
    /// or not: one read of the due index. Nil when there is none.
    func nextHeartbeatDue() async throws -> Date?
    /// Claims up to `limit` heartbeats due by `now`, not paused, whose notification is not out
    /// and which no instance holds past `now`: each held until `until` (returned with it).
    /// Two instances never claim one heartbeat at once.
    func claimOverdueHeartbeats(now: Date, until: Date, limit: Int) async throws -> [HeartbeatRecord]
    /// Their late notifications were published under the claim held until `claimedUntil`:
    /// each marked out, unless a ping came first (its claim is gone), in one transaction. The
    /// records as they are now (one that is gone is left out).
    func heartbeatsAnnounced(ids: [String], claimedUntil: Date) async throws -> [HeartbeatRecord]
}

public enum HeartbeatInsertOutcome: Sendable, Equatable {
    case added
    case nameTaken
    case full
}

/// A heartbeat as stored.
public struct HeartbeatRecord: Sendable, Equatable {
    public var id: String
    /// The feed its notification goes to: a user's id, or a team's feed.
    public var ownerId: String
    public var name: String
    /// The hash of its ping URL's token.
    public var tokenHash: String
    /// Seconds.
    public var every: Int
    public var grace: Int
    public var priority: Priority
    public var message: String?
    /// The user who made it.
    public var createdBy: String
    public var created: Date
    public var lastPing: Date?
    /// The last ping reported a failure.
    public var failed: Bool
    /// When it is overdue without a ping.
    public var due: Date
    public var paused: Bool
    /// Its notification (late, or failed) is out and no ping has taken it back yet.
    public var alerting: Bool
    /// An instance announcing it holds it until then.
    public var claimedUntil: Date?

    public init(
        id: String, ownerId: String, name: String, tokenHash: String, every: Int, grace: Int, priority: Priority, message: String?,
        createdBy: String, created: Date, lastPing: Date? = nil, failed: Bool = false, due: Date, paused: Bool = false, alerting: Bool = false,
        claimedUntil: Date? = nil
    ) {
        self.id = id
        self.ownerId = ownerId
        self.name = name
        self.tokenHash = tokenHash
        self.every = every
        self.grace = grace
        self.priority = priority
        self.message = message
        self.createdBy = createdBy
        self.created = created
        self.lastPing = lastPing
        self.failed = failed
        self.due = due
        self.paused = paused
        self.alerting = alerting
        self.claimedUntil = claimedUntil
    }

    /// Milliseconds from a ping to the due time: every + grace.
    public var window: Int64 { Int64(every + grace) * 1000 }

    /// The `appNotificationId` of its notification (one per heartbeat, updated in place).
    public var appNotificationId: String { "heartbeat-" + id }
}
