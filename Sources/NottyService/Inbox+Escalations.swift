import Foundation
import NottyCore

// MARK: - The user's escalation rules (SPEC §11)

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
                state.target = (try? EscalationTarget(parsing: target))?.shown ?? target
                return state
            }
        }
        return EscalationRuleList(value: rules, deliveries: deliveries)
    }

    /// `POST /v1/me/escalations` `{"name", "after", "targets": [...], "priority", "app", "group",
    /// "repeat"}`: a new rule (`after` and `repeat` are durations: seconds, or text such as
    /// `10m`). A name the user already has is `400`, as is a target the service does not know (a
    /// command its administrator did not name), naming the commands there are.
    public func addEscalationRule(userId: String, body: Data) async throws -> EscalationRule {
        let now = clock.nowMillis()
        let rule: EscalationRule
        do throws(ValidationError) {
            rule = try Self.escalationRule(body: body, commands: config.escalationCommands, now: now)
        } catch {
            throw ServiceError.badRequest(error.message)
        }
        let limit = EscalationRule.maxRulesPerUser
        guard try await db({ try await storage.insertEscalationRule(rule, userId: userId, limit: limit) }) else {
            let existing = try await db { try await storage.escalationRules(userId: userId) }
            if existing.count >= limit {
                throw ServiceError.badRequest("a user has at most \(limit) escalation rules: remove one first (notty escalate remove NAME)")
            }
            throw ServiceError.badRequest("there is already an escalation rule named \(rule.name): remove it first, or choose another name")
        }
        escalation.rulesChanged(userId: userId, has: true)
        return rule
    }

    /// `DELETE /v1/me/escalations/{id}`.
    public func removeEscalationRule(userId: String, id: String) async throws {
        guard try await db({ try await storage.deleteEscalationRule(id: id, userId: userId) }) else {
            throw ServiceError.notFound("no such escalation rule")
        }
    }

    /// A rule from a request body, checked.
    static func escalationRule(body: Data, commands: [String: String], now: Date) throws(ValidationError) -> EscalationRule {
        let fields = try JSONFields(body: body)
        let after = try duration(fields, "after", required: true)!
        let repeatSeconds = try duration(fields, "repeat", required: false)
        let items = try fields.array("targets", required: true)!
        guard !items.isEmpty else { throw ValidationError("targets is empty: give at least one target (ntfy:URL, webhook:URL or command:NAME)") }
        guard items.count <= EscalationRule.maxTargets else {
            throw ValidationError("targets has \(items.count) entries: a rule sends to at most \(EscalationRule.maxTargets)")
        }
        var targets: [String] = []
        for (index, item) in items.enumerated() {
            guard case .string(let text) = item else { throw ValidationError("targets[\(index)] must be a string such as ntfy:https://ntfy.sh/my-alerts") }
            let target = try EscalationTarget(parsing: text)
            if case .command(let name) = target, commands[name] == nil {
                let known = commands.keys.sorted()
                throw ValidationError("no command named \(name) on this service: "
                    + (known.isEmpty ? "its administrator has named none ([escalation.commands] in server.toml)" : "there are \(known.joined(separator: ", "))"))
            }
            targets.append(target.description)
        }
        let priority = try fields.string("priority", max: 8)?.lowercased() ?? "high"
        guard priority == "high" || priority == "all" else { throw ValidationError("priority must be high or all") }
        let app = try fields.string("app", max: 256)
        let group = try fields.string("group", max: 256)
        let id = Identifiers.timeOrdered(now: now)
        let name = try fields.string("name", max: 64) ?? "rule-" + id.suffix(6)
        guard !name.contains(where: { $0.isWhitespace || $0.isNewline || $0.asciiValue.map { $0 < 0x20 } == true }) else {
            throw ValidationError("name must be one word (no spaces or control characters)")
        }
        return EscalationRule(id: id, name: name, afterSeconds: after, repeatSeconds: repeatSeconds, targets: targets, priority: priority,
                              app: app, group: group, createdDateTime: now)
    }

    /// A duration member: whole seconds, or text such as `10m`; within the rules' limits.
    private static func duration(_ fields: JSONFields, _ key: String, required: Bool) throws(ValidationError) -> Int? {
        let seconds: Int
        switch fields.any(key) {
        case nil, .null?:
            if required { throw ValidationError("\(key) is required: a duration such as 10m") }
            return nil
        case .number(let value)?:
            guard value == value.rounded(), let whole = Int(exactly: value) else { throw ValidationError("\(key) must be whole seconds or a duration such as 10m") }
            seconds = whole
        case .string(let text)?:
            guard let parsed = DurationText.seconds(text) else { throw ValidationError("\(key) must be a duration such as 30s, 10m or 2h") }
            seconds = parsed
        default:
            throw ValidationError("\(key) must be whole seconds or a duration such as 10m")
        }
        guard seconds >= EscalationRule.minimumSeconds, seconds <= EscalationRule.maximumSeconds else {
            throw ValidationError("\(key) must be from \(EscalationRule.minimumSeconds)s to \(DurationText.words(EscalationRule.maximumSeconds))")
        }
        return seconds
    }
}
