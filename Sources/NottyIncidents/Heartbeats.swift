import Foundation
import Logging
import NottyCore
import NottyRecords
import NottySecrets
import NottyService
import NottyWebhooks
import Synchronization

/// Heartbeats (PROTOCOL.md §16.3), a dead man's switch: a user's (or a team's, made by its
/// owners) heartbeat has a secret ping URL; no ping within every + grace and a notification
/// "NAME: no ping for …" is published to the feed (so escalation and on call apply), the next
/// ping dismisses it on every device, and `…/fail` reports a failure at once.
///
/// One job announces what is overdue (``announceOverdue()``, every 250 ms): it reads the
/// earliest due time (one indexed read, at most once a second, none until then; no timer per
/// heartbeat) and claims only when something is due; a claim held for a while makes each
/// lateness announced once across instances, and a ping that comes while it is being announced
/// takes it back.
public final class Heartbeats: HeartbeatService, ServicePart {
    package let core: ServiceCore
    let storage: any HeartbeatStorage & FeedStorage
    let teams: Teams
    let publishing: Publishing
    let inbox: Inbox

    /// How long an instance holds a heartbeat it is announcing (another takes it over then).
    static let claim: Int64 = 30_000
    /// How often the job runs: announced within this of their due time.
    public static let tick = Duration.milliseconds(250)
    /// The longest the job goes without reading the earliest due time. A heartbeat made, resumed
    /// or pinged on another instance is due at least 10 s later (the shortest `every`), so a look
    /// every 5 s learns of it before it is due; what changes here looks again at once.
    static let look: Int64 = 5_000
    /// Before when the job need not look (milliseconds): the earliest due time it read, or
    /// ``look`` after its last look; 0 after a change made here.
    let quietUntil = Atomic<Int64>(0)

    package init(core: ServiceCore, storage: any HeartbeatStorage & FeedStorage, teams: Teams, publishing: Publishing, inbox: Inbox) {
        self.core = core
        self.storage = storage
        self.teams = teams
        self.publishing = publishing
        self.inbox = inbox
    }

    public var jobs: [BackgroundJob] {
        [BackgroundJob("heartbeats", every: Self.tick) { try await self.announceOverdue() }]
    }

    // MARK: - The user's API

    public func add(userId: String, _ request: HeartbeatRequest, baseURL: String) async throws -> HeartbeatInfo {
        let owner = try await feed(userId: userId, team: request.team, to: "add heartbeats for it")
        let (info, token) = try await add(owner: owner, createdBy: userId, request)
        var answer = info
        answer.pingUrl = "\(baseURL)/v1/heartbeats/\(token)"
        return answer
    }

    public func list(userId: String, team: String?) async throws -> [HeartbeatInfo] {
        try await list(owner: try await feed(userId: userId, team: team, to: nil))
    }

    public func remove(userId: String, name: String, team: String?) async throws {
        try await remove(owner: try await feed(userId: userId, team: team, to: "remove its heartbeats"), name: name)
    }

    public func pause(userId: String, name: String, team: String?, paused: Bool) async throws -> HeartbeatInfo {
        let owner = try await feed(userId: userId, team: team, to: paused ? "pause its heartbeats" : "resume its heartbeats")
        return try await pause(owner: owner, name: name, paused: paused)
    }

    // MARK: - A feed's heartbeats (the user's API and Opsgenie's)

    /// A new heartbeat in `owner`'s feed, and its ping URL's token.
    func add(owner: Feed, createdBy: String, _ request: HeartbeatRequest) async throws -> (HeartbeatInfo, token: String) {
        let now = clock.nowMillis()
        let token = Secrets.newToken()
        let record = HeartbeatRecord(
            id: "hb-" + Identifiers.timeOrdered(), ownerId: owner.id, name: request.name, tokenHash: Secrets.tokenHash(token), every: request.every,
            grace: request.grace, priority: request.priority, message: request.message, createdBy: createdBy, created: now,
            due: now + TimeInterval(request.every + request.grace))
        switch try await db({ try await storage.insertHeartbeat(record, limit: Heartbeat.maxPerFeed) }) {
        case .added: lookAgain()
        case .nameTaken:
            throw ServiceError.badRequest(
                "\(owner.shown) \(owner.team == nil ? "have" : "has") a heartbeat named \(request.name) already (notty heartbeat --list)")
        case .full: throw ServiceError.badRequest("\(owner.shown) has \(Heartbeat.maxPerFeed) heartbeats, the most there may be: remove one first")
        }
        return (Self.info(record, team: owner.team, now: now), token)
    }

    func list(owner: Feed) async throws -> [HeartbeatInfo] {
        let now = clock.nowMillis()
        return try await db { try await storage.heartbeats(ownerId: owner.id) }.map { Self.info($0, team: owner.team, now: now) }
    }

    /// `owner`'s heartbeat `name` (`404` when there is none).
    func heartbeat(owner: Feed, name: String) async throws -> HeartbeatRecord {
        guard let found = try await db({ try await storage.heartbeat(ownerId: owner.id, name: name) }) else {
            throw Self.missing(name, owner)
        }
        return found
    }

    func remove(owner: Feed, name: String) async throws {
        guard let removed = try await db({ try await storage.deleteHeartbeat(ownerId: owner.id, name: name) }) else {
            throw Self.missing(name, owner)
        }
        if removed.alerting || removed.claimedUntil != nil { try await takeBack(removed, by: "heartbeat removed") }
    }

    func pause(owner: Feed, name: String, paused: Bool) async throws -> HeartbeatInfo {
        let now = clock.nowMillis()
        guard let before = try await db({ try await storage.pauseHeartbeat(ownerId: owner.id, name: name, paused: paused, now: now) }) else {
            throw Self.missing(name, owner)
        }
        lookAgain()
        if paused, before.alerting || before.claimedUntil != nil { try await takeBack(before, by: "heartbeat paused") }
        var after = before
        after.paused = paused
        if paused {
            (after.alerting, after.claimedUntil) = (false, nil)
        } else {
            after.due = ISOTime.date(millis: ISOTime.millis(now) + before.window)
        }
        return Self.info(after, team: owner.team, now: now)
    }

    // MARK: - Pings

    public func ping(token: String, failed: Bool) async throws {
        guard let heartbeat = try await db({ try await storage.heartbeat(tokenHash: Secrets.tokenHash(token)) }) else {
            throw ServiceError.notFound("no such heartbeat: it was removed, or the URL is mistyped")
        }
        try await ping(heartbeat, failed: failed)
    }

    /// Records a ping of `heartbeat`: dismisses its notification out, or publishes a failure.
    func ping(_ heartbeat: HeartbeatRecord, failed: Bool) async throws {
        let now = clock.nowMillis()
        guard let before = try await db({ try await storage.pingHeartbeat(id: heartbeat.id, at: now, failed: failed, alerting: failed) }) else {
            throw ServiceError.notFound("no such heartbeat: it was removed")
        }
        lookAgain()
        if failed {
            // Paused: recorded, nothing announced.
            guard !before.paused else { return }
            try await announce(before, failed: true, now: now)
        } else if before.alerting || before.claimedUntil != nil {
            try await takeBack(before, by: "heartbeat ping")
        }
    }

    // MARK: - The job

    @discardableResult
    public func announceOverdue() async throws -> Int {
        let start = ISOTime.millis(clock.nowMillis())
        guard start >= quietUntil.load(ordering: .relaxed) else { return 0 }
        // Nothing due yet: quiet until the earliest due time (looked at again within a second).
        let next = try await db { try await storage.nextHeartbeatDue() }.map(ISOTime.millis)
        guard let next, next <= start else {
            quietUntil.store(min(next ?? .max, start + Self.look), ordering: .relaxed)
            return 0
        }
        var announced = 0
        defer {
            // Due, but claimed by another instance: looked at again a second later, not every tick.
            if announced == 0 { quietUntil.store(start + Self.look, ordering: .relaxed) }
        }
        while true {
            let now = clock.nowMillis()
            let until = ISOTime.date(millis: ISOTime.millis(now) + Self.claim)
            let claimed = try await db { try await storage.claimOverdueHeartbeats(now: now, until: until, limit: Self.batch) }
            // Each feed's in one publish and all marked in one write: a burst costs a few
            // transactions, not two for each heartbeat.
            for (ownerId, heartbeats) in Dictionary(grouping: claimed, by: \.ownerId) {
                do {
                    try await announce(heartbeats, ownerId: ownerId, now: now, claimedUntil: until)
                } catch {
                    // Held until the claim ends, then tried again (by any instance).
                    logger.warning(
                        "late heartbeats could not be announced; tried again soon",
                        metadata: ["heartbeats": "\(heartbeats.count)", "owner": "\(ownerId)", "error": "\(error)"])
                    continue
                }
                announced += heartbeats.count
            }
            if claimed.count < Self.batch { return announced }
        }
    }

    /// How many overdue heartbeats the job claims at once.
    static let batch = 200

    /// Publishes the late notifications of `heartbeats` (all of `ownerId`'s feed, claimed
    /// until `until`) in one transaction, marks them out in another, and takes back those a
    /// ping came for meanwhile.
    func announce(_ heartbeats: [HeartbeatRecord], ownerId: String, now: Date, claimedUntil until: Date) async throws {
        let team = try await publishing.teamName(ofFeed: ownerId)
        let inputs = try heartbeats.map { heartbeat in
            var input = try publishInput(heartbeat, failed: false, now: now)
            input.team = team
            return input
        }
        _ = try await db { try await storage.publish(batch: inputs) }
        metrics.publishes.increment(by: Int64(inputs.count))
        logger.notice("heartbeats are late", metadata: ["count": "\(heartbeats.count)", "names": "\(heartbeats.prefix(5).map(\.name))"])
        let current = try await db { try await storage.heartbeatsAnnounced(ids: heartbeats.map(\.id), claimedUntil: until) }
        let alerting = Set(current.filter(\.alerting).map(\.id))
        // A ping came while they were published (the claim is gone): taken back.
        for heartbeat in heartbeats where !alerting.contains(heartbeat.id) { try await takeBack(heartbeat, by: "heartbeat ping") }
    }

    /// A due time changed here: the job reads the earliest again at its next turn.
    func lookAgain() { quietUntil.store(0, ordering: .relaxed) }

    /// Publishes the heartbeat's notification: late (no ping for …) or failed.
    func announce(_ heartbeat: HeartbeatRecord, failed: Bool, now: Date) async throws {
        var input = try publishInput(heartbeat, failed: failed, now: now)
        input.team = try await publishing.teamName(ofFeed: heartbeat.ownerId)
        _ = try await db { try await storage.publish(batch: [input]) }
        metrics.publishes.increment()
        logger.notice(
            failed ? "a heartbeat reported a failure" : "a heartbeat is late",
            metadata: ["heartbeat": "\(heartbeat.id)", "name": "\(heartbeat.name)"])
    }

    /// The heartbeat's notification (late: no ping for …; or failed) as a publish to its feed.
    func publishInput(_ heartbeat: HeartbeatRecord, failed: Bool, now: Date) throws -> PublishInput {
        let since = heartbeat.lastPing ?? heartbeat.created
        let title =
            failed
            ? "\(heartbeat.name): reported a failure"
            : "\(heartbeat.name): no ping for \(Self.spoken(Int(now.timeIntervalSince(since).rounded(.down))))"
        let last = heartbeat.lastPing.map { "last ping \(ISOTime.format($0))" } ?? "never pinged"
        let body =
            heartbeat.message
            ?? "expected every \(DurationText.words(heartbeat.every)) (grace \(DurationText.words(heartbeat.grace))); \(failed ? "the job said it failed" : last)"
        let item = WebhookNotification(
            appNotificationId: heartbeat.appNotificationId, title: title, body: body, priority: heartbeat.priority, groupName: "heartbeats")
        return try publishing.publishInput(item, index: 0, count: 1, userId: heartbeat.ownerId, hostName: Heartbeat.hostName, now: now)
    }

    /// Dismisses the heartbeat's notification on every device, as its user's change would
    /// be (handled: escalation and pages stop), `by` named as who did it.
    func takeBack(_ heartbeat: HeartbeatRecord, by: String) async throws {
        guard
            let found = try await db({
                try await storage.notification(
                    userId: heartbeat.ownerId, hostName: Heartbeat.hostName, appNotificationId: heartbeat.appNotificationId)
            }), found.status == .active
        else { return }
        var mutation = Mutation(id: found.id, change: StateChange(userActionState: .dismissed))
        mutation.by = ChangedBy(user: by, device: nil, at: clock.nowMillis())
        _ = try await inbox.mutate(userId: heartbeat.ownerId, [mutation])
    }

    // MARK: - Helpers

    /// Whose heartbeats a request is about: the user's own, or a team's (any member lists;
    /// only owners change, `to` saying what).
    struct Feed {
        let id: String
        let team: String?
        var shown: String { team.map { "team \($0)" } ?? "you" }
    }

    func feed(userId: String, team: String?, to what: String?) async throws -> Feed {
        guard let team, !team.isEmpty else { return Feed(id: userId, team: nil) }
        let (found, role) = try await teams.membership(name: team, userId: userId)
        if let what, role != .owner { throw ServiceError.forbidden("only the owners of \(found.name) \(what)") }
        return Feed(id: found.id, team: found.name)
    }

    static func missing(_ name: String, _ owner: Feed) -> ServiceError {
        ServiceError.notFound("\(owner.shown) \(owner.team == nil ? "have" : "has") no heartbeat named \(name) (notty heartbeat --list)")
    }

    static func info(_ record: HeartbeatRecord, team: String?, now: Date) -> HeartbeatInfo {
        let state: HeartbeatInfo.State =
            record.paused ? .paused : (record.alerting || record.claimedUntil != nil || record.due <= now) ? .late : .up
        return HeartbeatInfo(
            id: record.id, name: record.name, team: team, every: record.every, grace: record.grace, priority: HeartbeatRequest.word(record.priority),
            message: record.message, state: state, failed: record.failed, lastPingDateTime: record.lastPing,
            dueDateTime: record.paused ? nil : record.due, createdDateTime: record.created)
    }

    /// Seconds as a person says them: `45s`, `5m 30s`, `2h 5m`, `3d 4h`.
    static func spoken(_ seconds: Int) -> String {
        let s = max(0, seconds)
        switch s {
        case ..<60: return "\(s)s"
        case ..<3600: return s % 60 == 0 ? "\(s / 60)m" : "\(s / 60)m \(s % 60)s"
        case ..<86_400: return (s % 3600) / 60 == 0 ? "\(s / 3600)h" : "\(s / 3600)h \((s % 3600) / 60)m"
        default: return (s % 86_400) / 3600 == 0 ? "\(s / 86_400)d" : "\(s / 86_400)d \((s % 86_400) / 3600)h"
        }
    }
}
