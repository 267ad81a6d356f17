import Foundation
import NottyCore
import NottyRecords

// MARK: - The user's escalation rules (PROTOCOL.md §11)

extension Inbox {
    /// `GET /v1/me/escalations`: the user's rules, oldest first, with each target's last
    /// delivery and last error (targets shown without credentials).
    public func escalationRules(userId: String) async throws -> EscalationRuleList {
        try await escalationRules(ownerId: userId, shownToOwner: true)
    }

    /// The rules of `ownerId` (a user, or a team's feed), their targets opened for the owner,
    /// else shown as to anyone else (PROTOCOL.md §15).
    func escalationRules(ownerId userId: String, shownToOwner: Bool) async throws -> EscalationRuleList {
        let rules = try await db { try await storage.escalationRules(userId: userId) }
        let status = try await db { try await storage.escalationStatus(userId: userId) }
        var deliveries: [String: [EscalationTargetState]] = [:]
        for rule in rules {
            let known = status[rule.id] ?? []
            deliveries[rule.id] = rule.targets.map { target in
                var state = known.first { $0.target == target } ?? EscalationTargetState(target: target)
                state.target = secrets.shownTarget(target, toOwner: shownToOwner)
                return state
            }
        }
        // The owner sees the targets as given (their credentials too), opened.
        var opened: [EscalationRule] = []
        for var rule in rules {
            var targets: [String] = []
            for target in rule.targets {
                guard shownToOwner else {
                    targets.append(secrets.shownTarget(target, toOwner: false))
                    continue
                }
                targets.append((try? await secrets.openFetching(stored: target)) ?? secrets.shownTarget(target))
            }
            rule.targets = targets
            opened.append(rule)
        }
        return EscalationRuleList(value: opened, deliveries: deliveries)
    }

    /// `POST /v1/me/escalations` `{"name", "after", "targets": [...], "priority", "app", "group",
    /// "repeat"}`: a new rule (`after` and `repeat` are durations: seconds, or text such as
    /// `10m`). A name the user already has is `400`, as is a target the service does not know (a
    /// command its administrator did not name), naming the commands there are, and one the
    /// outbound policy refuses by its literal address.
    public func addEscalationRule(userId: String, _ request: EscalationRuleRequest) async throws -> EscalationRule {
        try await addRule(ownerId: userId, request, team: nil)
    }

    /// A rule of `ownerId`'s (a user, or a team's feed for its policy).
    func addRule(ownerId userId: String, _ request: EscalationRuleRequest, team: Team?) async throws -> EscalationRule {
        let now = clock.nowMillis()
        let rule: EscalationRule
        do throws(ValidationError) {
            rule = try EscalationRule(
                request: request, commands: config.escalationCommands, id: Identifiers.timeOrdered(now: now), now: now,
                team: team.map { ($0.name, Set($0.members.map(\.user))) })
        } catch {
            throw ServiceError.badRequest(error.message)
        }
        for text in rule.targets {
            guard let target = try? EscalationTarget(parsing: text), let refusal = target.refusal(by: outbound) else { continue }
            throw ServiceError.badRequest("\(target.shown) is not allowed: \(refusal)")
        }
        let limit = EscalationRule.maxRulesPerUser
        var sealed = rule
        sealed.targets = rule.targets.map { PagingTarget($0) == nil ? secrets.sealedText($0) : $0 }
        guard try await db({ try await storage.insertEscalationRule(sealed, userId: userId, limit: limit) }) else {
            let existing = try await db { try await storage.escalationRules(userId: userId) }
            if existing.count >= limit {
                throw ServiceError.badRequest(
                    "\(team == nil ? "a user has" : "a team's policy has") at most \(limit) escalation rules: remove one first (notty escalate remove NAME)"
                )
            }
            throw ServiceError.badRequest("there is already an escalation rule named \(rule.name): remove it first, or choose another name")
        }
        paging.ruleAdded(userId: userId)
        return rule
    }

    /// `DELETE /v1/me/escalations/{id}`.
    public func removeEscalationRule(userId: String, id: String) async throws {
        guard try await db({ try await storage.deleteEscalationRule(id: id, userId: userId) }) else {
            throw ServiceError.notFound("no such escalation rule")
        }
    }

    /// `POST /v1/me/escalations/{id}/test`: one test message to each of the rule's targets now,
    /// each outcome answered (paging sends them; 10 a minute per user).
    public func testEscalationRule(userId: String, id: String) async throws -> [EscalationTestOutcome] {
        try await paging.test(userId: userId, ruleId: id)
    }

    // MARK: - A team's escalation policy (PROTOCOL.md §13.2)

    /// `GET /v1/teams/{name}/escalations`: the team's steps, with each target's deliveries, and
    /// the members a page would not reach (no contacts).
    public func teamEscalationRules(team name: String, userId: String) async throws -> EscalationRuleList {
        let (team, role) = try await teams.membership(name: name, userId: userId)
        // The policy's credentials (a token in an ntfy URL) are its owners' alone.
        var list = try await escalationRules(ownerId: team.id, shownToOwner: role == .owner)
        let status = try await db { try await storage.escalationStatus(userId: team.id) }
        let stored = Dictionary(try await db { try await storage.escalationRules(userId: team.id) }.map { ($0.id, Set($0.targets)) }) { a, _ in a }
        for rule in list.value {
            // Pages went to members' contacts: each one used so far, shown as to anyone but
            // its owner (PROTOCOL.md §15).
            let used = (status[rule.id] ?? []).filter { !(stored[rule.id] ?? []).contains($0.target) }.map { state in
                var state = state
                state.target = secrets.shownTarget(state.target, toOwner: false)
                return state
            }
            list.deliveries?[rule.id, default: []].append(contentsOf: used)
        }
        let reachable = try await db { try await storage.contacts(userNames: team.members.map(\.user)) }
        list.unreachable = team.members.map(\.user).filter { (reachable[$0] ?? []).isEmpty }
        return list
    }

    /// `POST /v1/teams/{name}/escalations` (owners): a step of the team's policy.
    public func addTeamEscalationRule(team name: String, userId: String, _ request: EscalationRuleRequest) async throws -> EscalationRule {
        let (team, role) = try await teams.membership(name: name, userId: userId)
        guard role == .owner else { throw ServiceError.forbidden("only the owners of \(team.name) change its escalation policy") }
        return try await addRule(ownerId: team.id, request, team: team)
    }

    /// `DELETE /v1/teams/{name}/escalations/{id}` (owners).
    public func removeTeamEscalationRule(team name: String, userId: String, id: String) async throws {
        let (team, role) = try await teams.membership(name: name, userId: userId)
        guard role == .owner else { throw ServiceError.forbidden("only the owners of \(team.name) change its escalation policy") }
        try await removeEscalationRule(userId: team.id, id: id)
    }
}
