import Foundation
import Logging
import NottyCore
import NottyRecords
import NottySecrets
import NottyService
import Synchronization

/// Escalation at work (PROTOCOL.md §11): it plans on every change, on the path that rings devices
/// (clocks start and stop, retractions are made at once), fires due tracks, and sends what is
/// to be sent, each delivery on its own, so that a slow or dead target delays no other.
public final class Escalation: ServicePart, Paging {
    package let core: ServiceCore
    /// The storage this part uses: its concerns alone.
    let storage: any EscalationWorkStorage
    let sender: EscalationSender
    /// Users whose changes wait to be planned.
    private let waiting = Mutex<Set<String>>([])
    /// The users who have rules, as last read (nil: not read yet; every change is planned).
    private let ruleUsers = Mutex<Set<String>?>(nil)
    let planBell = Bell()
    let sendBell = Bell()
    let finishBell = Bell()
    /// Deliveries sent (or failed) and not yet recorded.
    private let finished = Mutex<[FinishedDelivery]>([])
    /// Deliveries being sent now.
    private let inFlight = Atomic<Int>(0)
    /// When the sender looks again by the clock (milliseconds since 1970): soon after it found
    /// work or a retry was put off until then; every 10 s otherwise (what another instance
    /// left, whose lease ran out). Rings from planning and firing need no clock.
    private let nextLook = Atomic<Int64>(0)

    /// The most deliveries sent at once; the most planned for one user in one transaction.
    public static let maxInFlight = 256
    static let planPage = 500
    /// How long a claimed delivery is this instance's (after a crash, another takes it then).
    static let lease: TimeInterval = 60

    package init(core: ServiceCore, storage: any EscalationWorkStorage, outbound: (any OutboundHTTP)?) {
        self.core = core
        self.storage = storage
        sender = EscalationSender(outbound: outbound, commands: core.config.escalationCommands, secrets: core.secrets)
    }

    /// The engine's work, run together as one background job: due tracks fired every half
    /// second; changes planned as they are committed, and everyone now and then (what an
    /// instance that stopped left); deliveries sent as they are made, retries as they come due.
    public var jobs: [BackgroundJob] {
        [
            BackgroundJob("escalations due", every: .milliseconds(500)) { try await self.fireDue() },
            BackgroundJob("escalation catch-up", every: .seconds(30)) { try await self.planEveryone() },
            BackgroundJob("escalation metrics", every: .seconds(5)) { try await self.measureBacklog() },
            BackgroundJob.loop("escalation planner") { await self.runPlanner() },
            BackgroundJob.loop("escalation sender") { await self.runSender() },
            BackgroundJob.loop("escalation records") { await self.runFinisher() },
            BackgroundJob.loop("escalation clock") { await self.runClock() },
        ]
    }

    // MARK: - Planning, on the change path

    /// The storage committed changes for these users: those with rules are planned now.
    public func changed(_ cursors: [String: Int64]) {
        let known = ruleUsers.withLock { $0 }
        let users = cursors.keys.filter { known?.contains($0) ?? true }
        guard !users.isEmpty else { return }
        waiting.withLock { $0.formUnion(users) }
        planBell.ring()
    }

    /// A rule was added for this user: their changes are planned from now on. (A rule
    /// removed needs nothing: a user without rules is left out at the next catch-up.)
    public func ruleAdded(userId: String) {
        ruleUsers.withLock { _ = $0?.insert(userId) }
        waiting.withLock { _ = $0.insert(userId) }
        planBell.ring()
    }

    /// Plans every user who has rules (at start, and now and then: what another instance
    /// committed and could not plan before it stopped).
    public func planEveryone() async throws {
        let users = try await db { try await storage.escalationUserIds() }
        ruleUsers.withLock { $0 = Set(users) }
        pagingChanged()
        waiting.withLock { $0.formUnion(users) }
        planBell.ring()
    }

    /// Plans waiting users as they come, until cancelled: up to ``planBatch`` users in one
    /// transaction.
    public func runPlanner() async {
        for await _ in planBell.rings {
            while !Task.isCancelled {
                let users = waiting.withLock { waiting -> [String] in
                    let batch = Array(waiting.prefix(Self.planBatch))
                    waiting.subtract(batch)
                    return batch
                }
                if users.isEmpty { break }
                do {
                    let more = try await plan(userIds: users)
                    waiting.withLock { $0.formUnion(more) }
                } catch {
                    logger.warning("cannot plan escalations; will retry", metadata: ["users": "\(users.count)", "error": "\(error)"])
                    waiting.withLock { $0.formUnion(users) }
                    try? await Task.sleep(for: .seconds(1))
                }
            }
        }
    }

    /// The most users planned in one transaction.
    static let planBatch = 200

    /// Plans these users' changes (a page each); answers those with more waiting.
    public func plan(userIds: [String]) async throws -> [String] {
        let noted = core.handlers.entries(of: Set(userIds))
        var devices: [String: String] = [:]
        // The names of the devices that handled them, as `notty devices` shows them.
        for userId in Set(noted.values.map(\.userId)) {
            let known = (try? await storage.subscriptions(userId: userId)) ?? []
            let names = SubscriptionRecord.deviceNames(known)
            for (id, note) in noted where note.userId == userId { devices[id] = names[note.device] ?? note.device }
        }
        let named = devices
        let outcome = try await db {
            try await storage.planEscalations(userIds: userIds, limit: Self.planPage, now: clock.nowMillis()) { input in
                EscalationPlanner.plan(input, devices: named) { DeliveryIds.next(now: input.now) }
            }
        }
        if outcome.deliveries > 0 { sendBell.ring() }
        return outcome.more
    }

    // MARK: - Firing due tracks

    /// Fires every track due now; answers how many deliveries that made. A team's track is
    /// fired with whom its team's policy reaches (``PagingDirectory``): a team not read lately
    /// is read once its track comes due, and the track fired then.
    @discardableResult
    public func fireDue() async throws -> Int {
        var total = 0
        var readTeams = false
        while true {
            let now = clock.nowMillis()
            let directory = self.directory.withLock { $0 }
            let unread = Mutex<Set<String>>([])
            let made = try await db {
                try await storage.fireDueEscalations(now: now, limit: 200) { due in
                    let owner = due.track.userId
                    // Only a team's `oncall`, `team` and `user:` steps ask whom they reach.
                    let asks = FeedOwner(id: owner).isTeam && (due.rule?.targets.contains { PagingTarget($0) != nil } ?? false)
                    guard !asks || directory.knows(teamId: owner, now: now) else {
                        // Left due as it is: fired in a moment, once its team is read.
                        unread.withLock { _ = $0.insert(owner) }
                        return EscalationFiring(deliveries: [], track: due.track)
                    }
                    return EscalationPlanner.fire(due, now: now, resolve: { directory.pages(for: $0, teamId: owner, now: now) }) {
                        DeliveryIds.next(now: now)
                    }
                }
            }
            total += made
            if made > 0 { sendBell.ring() }
            let wanted = unread.withLock { $0 }
            if !wanted.isEmpty && !readTeams {
                readTeams = true
                try await readDirectory(teamIds: wanted.sorted(), now: now)
                continue
            }
            if made < 200 { return total }
        }
    }

    // MARK: - Whom a team's policy pages

    /// The teams read lately for their policies: members, schedules and members' contacts.
    private let directory = Mutex(PagingDirectory())
    /// How long a team's read serves: what another instance changed is seen within this.
    static let directoryLifetime: TimeInterval = 5

    /// Reads these teams (members, schedule, members' contacts) into the directory: only teams
    /// whose tracks came due, never every team.
    func readDirectory(teamIds: [String], now: Date) async throws {
        let teams = try await db { try await storage.teams(ids: teamIds) }
        let schedules = try await db { try await storage.onCallSchedules(teamIds: teamIds) }
        let contacts = try await db { try await storage.contacts(userNames: Array(Set(teams.flatMap { $0.members.map(\.user) })).sorted()) }
        directory.withLock { $0.read(teamIds: teamIds, teams: teams, schedules: schedules, contacts: contacts, at: now) }
    }

    /// A schedule, a membership or a contact changed here: teams are read again when they next page.
    public func pagingChanged() {
        directory.withLock { $0 = PagingDirectory() }
    }

    // MARK: - Sending

    /// Claims and sends deliveries until cancelled: each on a task of its own, at most
    /// ``maxInFlight`` at once; woken by what plans and fires, by a delivery ending, and by
    /// the clock (retries).
    public func runSender() async {
        await withDiscardingTaskGroup { group in
            for await _ in sendBell.rings {
                if Task.isCancelled { break }
                let room = Self.maxInFlight - inFlight.load(ordering: .relaxed)
                guard room > 0 else { continue }
                let now = clock.nowMillis()
                let claimed: [EscalationDelivery]
                do {
                    claimed = try await db { try await storage.claimEscalationDeliveries(now: now, lease: now + Self.lease, limit: room) }
                } catch {
                    logger.warning("cannot claim escalation deliveries; will retry", metadata: ["error": "\(error)"])
                    continue
                }
                // Found nothing: the clock need not look again for a while (a retry put off
                // until sooner keeps its time).
                if claimed.isEmpty {
                    let nowMillis = ISOTime.millis(now), later = nowMillis + 10_000, planned = nextLook.load(ordering: .relaxed)
                    lookLater(planned > nowMillis ? min(planned, later) : later)
                }
                for delivery in claimed {
                    inFlight.add(1, ordering: .relaxed)
                    group.addTask {
                        await self.deliver(delivery)
                        self.inFlight.subtract(1, ordering: .relaxed)
                    }
                }
            }
        }
    }

    /// Sends one delivery and records how it went.
    func deliver(_ delivery: EscalationDelivery) async {
        let failure = await sender.send(delivery)
        let now = clock.nowMillis()
        let result: DeliveryResult =
            failure.map {
                EscalationPlanner.afterFailure(delivery, attempts: delivery.attempts + 1, error: $0.message, retryable: $0.retryable, now: now)
            } ?? .delivered
        switch result {
        case .delivered: metrics.escalationDelivered.increment()
        case .retry: metrics.escalationRetried.increment()
        case .failed: metrics.escalationFailed.increment()
        }
        if case .failed(let error) = result {
            logger.warning(
                "an escalation could not be delivered: given up",
                metadata: [
                    "target": "\(secrets.shownTarget(delivery.target, toOwner: false))", "event": "\(delivery.event.rawValue)",
                    "error": "\(error)",
                ])
        }
        finished.withLock {
            $0.append(FinishedDelivery(delivery: delivery, result: result, log: Self.log(delivery, result: result, at: now, secrets: secrets)))
        }
        finishBell.ring()
    }

    /// The sender looks by the clock again at `millis` (or sooner, if it was to already).
    private func lookLater(_ millis: Int64) {
        nextLook.store(millis, ordering: .relaxed)
    }

    /// The clock's tick: rings the sender when it is time to look (a retry come due, a lease
    /// run out); between, an idle service asks its storage nothing.
    public func runClock() async {
        while !Task.isCancelled {
            if ISOTime.millis(clock.nowMillis()) >= nextLook.load(ordering: .relaxed) {
                nextLook.store(ISOTime.millis(clock.nowMillis()) + 500, ordering: .relaxed)
                sendBell.ring()
            }
            try? await Task.sleep(for: .milliseconds(500))
        }
    }

    /// Records finished deliveries as they come, as many as have come in one transaction.
    public func runFinisher() async {
        for await _ in finishBell.rings {
            while true {
                let batch = finished.withLock { list -> [FinishedDelivery] in
                    defer { list.removeAll() }
                    return list
                }
                if batch.isEmpty { break }
                // A retry put off brings the clock's next look forward to it.
                for item in batch {
                    if case .retry(let at, _) = item.result {
                        let millis = ISOTime.millis(at)
                        if millis < nextLook.load(ordering: .relaxed) { lookLater(millis) }
                    }
                }
                do {
                    try await db { try await storage.finishEscalationDeliveries(batch, now: clock.nowMillis()) }
                } catch {
                    // Kept and recorded again a second later while their leases surely hold
                    // (claimed at or after `nextAt`); a storage away past them: they are sent
                    // again, once more at most (PROTOCOL.md §11).
                    let now = clock.nowMillis()
                    let fresh = batch.filter { now < $0.delivery.nextAt + Self.lease }
                    logger.warning(
                        "cannot record escalation deliveries; will retry", metadata: ["count": "\(fresh.count)", "error": "\(error)"])
                    finished.withLock { $0.insert(contentsOf: fresh, at: 0) }
                    try? await Task.sleep(for: .seconds(1))
                    if Task.isCancelled { return }
                    continue
                }
                sendBell.ring()  // what waited behind them (a retraction after its escalation) may go
            }
        }
    }

    /// What an `escalated` delivery leaves on its notification once it is over (sent, or given up).
    static func log(_ delivery: EscalationDelivery, result: DeliveryResult, at: Date, secrets: SecretBox) -> EscalationRecord? {
        guard delivery.event == .escalated else { return nil }
        // A team's notification is read by every member: its pages show only where they went.
        let shown = secrets.shownTarget(delivery.target, toOwner: !FeedOwner(id: delivery.userId).isTeam)
        switch result {
        case .delivered: return EscalationRecord(target: shown, rule: delivery.ruleName, at: at, outcome: "sent", user: delivery.recipient)
        case .failed(let error):
            let target = if case .unreachable = delivery.page { "nobody" } else { shown }
            return EscalationRecord(target: target, rule: delivery.ruleName, at: at, outcome: "failed", error: error, user: delivery.recipient)
        case .retry: return nil
        }
    }

    /// Reads the backlog into `/metrics`.
    public func measureBacklog() async throws {
        let backlog = try await db { try await storage.escalationBacklog() }
        metrics.escalationPending.set(Int64(backlog.pending))
        metrics.escalationFailing.set(Int64(backlog.failing))
    }

    public func sendOnce(_ delivery: EscalationDelivery) async -> String? { await sender.send(delivery)?.message }

    // MARK: - Testing a rule

    /// `POST /v1/me/escalations/{id}/test`: one test message to each target of the rule, now,
    /// each outcome answered (and kept as the target's last delivery or error).
    public func test(userId: String, ruleId: String) async throws -> [EscalationTestOutcome] {
        guard let rule = try await db({ try await storage.escalationRules(userId: userId) }).first(where: { $0.id == ruleId }) else {
            throw ServiceError.notFound("no such escalation rule")
        }
        try core.takeTest(userId: userId)
        let now = clock.nowMillis()
        let sample = EscalationDelivery.testNotification(
            "notty-escalation-test", title: "notty escalation test", body: "The rule \(rule.name) reaches this target.", now: now)
        return await withTaskGroup(of: EscalationTestOutcome.self) { group in
            for target in rule.targets {
                group.addTask {
                    let delivery = EscalationDelivery(
                        id: "test", userId: userId, notificationId: sample.id, ruleId: rule.id, ruleName: rule.name,
                        target: target, event: .test, notification: sample, firstAt: now, nextAt: now)
                    let failure = await self.sender.send(delivery)
                    try? await self.storage.recordEscalationTest(
                        ruleId: rule.id, target: target, error: failure?.message, now: self.clock.nowMillis())
                    return EscalationTestOutcome(target: self.secrets.shownTarget(target), ok: failure == nil, error: failure?.message)
                }
            }
            var outcomes: [EscalationTestOutcome] = []
            for await outcome in group { outcomes.append(outcome) }
            return rule.targets.compactMap { target in
                let shown = secrets.shownTarget(target)
                return outcomes.first { $0.target == shown }
            }
        }
    }
}

/// A wake-up: rung by anyone, heard by one loop; rings while nobody listens count once.
final class Bell: Sendable {
    let rings: AsyncStream<Void>
    private let continuation: AsyncStream<Void>.Continuation

    init() {
        (rings, continuation) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(1))
    }

    func ring() { continuation.yield() }

}

/// What ``Escalation`` asks of the storage.
public typealias EscalationWorkStorage = EscalationStorage & EscalationRuleStorage & SubscriptionStorage & TeamStorage & OnCallStorage

/// What a team's escalation policy pages with (PROTOCOL.md §13.2): the teams read lately, each
/// with its members, schedule and its members' contacts (targets as stored).
struct PagingDirectory: Sendable {
    var teams: [String: Team] = [:]
    var schedules: [String: Result<OnCallSchedule, OnCallSchedule.Unreadable>] = [:]
    var contacts: [String: [String]] = [:]
    /// When each team was read (a team read and not found too: it is gone).
    var readAt: [String: Date] = [:]

    init() {}

    init(teams: [Team], schedules: [String: String], contacts: [String: [Contact]], at: Date = Date()) {
        read(teamIds: teams.map(\.id), teams: teams, schedules: schedules, contacts: contacts, at: at)
    }

    /// Whether the team was read within ``Escalation/directoryLifetime`` of `now`.
    func knows(teamId: String, now: Date) -> Bool {
        guard let at = readAt[teamId] else { return false }
        return at <= now && now.timeIntervalSince(at) < Escalation.directoryLifetime
    }

    /// Takes in what was read of `teamIds` at `at`: those not among `teams` are gone.
    mutating func read(teamIds: [String], teams: [Team], schedules: [String: String], contacts: [String: [Contact]], at: Date) {
        for id in teamIds {
            self.teams[id] = nil
            self.schedules[id] = nil
            readAt[id] = at
        }
        for team in teams {
            self.teams[team.id] = team
            readAt[team.id] = at
            for member in team.members { self.contacts[member.user] = contacts[member.user]?.map(\.target) ?? [] }
            if let text = schedules[team.id] {
                self.schedules[team.id] = Result { () throws(OnCallSchedule.Unreadable) in try OnCallSchedule.decode(stored: text, team: team.name) }
            }
        }
    }

    /// Whom `target` of the policy of the team `teamId` reaches at `now`.
    func pages(for target: PagingTarget, teamId: String, now: Date) -> [EscalationPlanner.Page] {
        guard let team = teams[teamId] else {
            return [EscalationPlanner.Page(.unreachable("the team is gone"))]
        }
        return EscalationPlanner.pages(
            for: target, team: team.name, members: team.members.map(\.user), schedule: schedules[teamId], contacts: contacts, now: now)
    }
}
