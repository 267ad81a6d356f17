import Foundation
import NottyCore

// MARK: - The user's escalation rules (PROTOCOL.md §11)

extension Inbox {
    /// `GET /v1/me/escalations`: the user's rules, oldest first, with each target's last
    /// delivery and last error (targets shown without credentials).
    public func escalationRules(userId: String) async throws -> EscalationRuleList {
        let rules = try await db { try await storage.escalationRules(userId: userId) }
        let status = try await db { try await storage.escalationStatus(userId: userId) }
        var deliveries: [String: [EscalationTargetState]] = [:]
        for rule in rules {
            let known = status[rule.id] ?? []
            deliveries[rule.id] = rule.targets.map { target in
                var state = known.first { $0.target == target } ?? EscalationTargetState(target: target)
                state.target = secrets.shownTarget(target)
                return state
            }
        }
        // The owner sees the targets as given (their credentials too), opened.
        var opened: [EscalationRule] = []
        for var rule in rules {
            var targets: [String] = []
            for target in rule.targets { targets.append((try? await secrets.openFetching(target)) ?? secrets.shownTarget(target)) }
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
    public func addEscalationRule(userId: String, body: Data) async throws -> EscalationRule {
        let now = clock.nowMillis()
        let rule: EscalationRule
        do throws(ValidationError) {
            rule = try EscalationRule(body: body, commands: config.escalationCommands, id: Identifiers.timeOrdered(now: now), now: now)
        } catch {
            throw ServiceError.badRequest(error.message)
        }
        for text in rule.targets {
            guard let target = try? EscalationTarget(parsing: text), let refusal = escalation.sender.refusal(of: target) else { continue }
            throw ServiceError.badRequest("\(target.shown) is not allowed: \(refusal)")
        }
        let limit = EscalationRule.maxRulesPerUser
        var sealed = rule
        sealed.targets = rule.targets.map(secrets.seal)
        guard try await db({ try await storage.insertEscalationRule(sealed, userId: userId, limit: limit) }) else {
            let existing = try await db { try await storage.escalationRules(userId: userId) }
            if existing.count >= limit {
                throw ServiceError.badRequest("a user has at most \(limit) escalation rules: remove one first (notty escalate remove NAME)")
            }
            throw ServiceError.badRequest("there is already an escalation rule named \(rule.name): remove it first, or choose another name")
        }
        escalation.ruleAdded(userId: userId)
        return rule
    }

    /// `DELETE /v1/me/escalations/{id}`.
    public func removeEscalationRule(userId: String, id: String) async throws {
        guard try await db({ try await storage.deleteEscalationRule(id: id, userId: userId) }) else {
            throw ServiceError.notFound("no such escalation rule")
        }
    }
}
