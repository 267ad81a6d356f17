import ArgumentParser
import Foundation
import NottyCommandLine
import NottyCore
import NottySync

// Escalation rules (PROTOCOL.md §11): kept on the service, the user's own.
struct Escalate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "escalate",
        abstract: "Rules that tell someone when a notification is handled nowhere in time.",
        discussion: """
            A rule says who is told when a notification is still unhandled (in Unread: not \
            read, activated, dismissed, snoozed or deleted on any device) a while after it \
            arrived, and the moment it is handled anywhere it is taken back (ntfy: cleared \
            from the phone; webhook and command: told "handled", with the device). Rules \
            are kept on the service and apply to every device; a muted app or group is \
            never escalated, and quiet hours do not hold escalation back.

              notty escalate add --after 10m --to ntfy:https://ntfy.sh/my-alerts
              notty escalate add --after 5m --to webhook:https://hooks.example.com/oncall
              notty escalate add --after 15m --to command:ops --repeat 30m --name night
              notty escalate test night        (a test message to each target, now)
              notty escalate --list            (each target's last delivery and last error)
              notty escalate remove night

            Targets: ntfy:URL (an ntfy topic; credentials as ntfy takes them, user:pass@ in \
            the URL or ?auth=), webhook:URL (a JSON POST), command:NAME (a command the \
            service's administrator named in [escalation.commands] of server.toml). \
            A token goes as ntfy:https://tk_mytoken@ntfy.example/alerts. --priority high \
            (the default) or all; --after and --repeat from 5s. A target that fails is \
            retried with backoff for a day.
            """,
        subcommands: [EscalateAdd.self, EscalateRemove.self, EscalateTest.self])

    @Flag(help: "List the rules (also what notty escalate alone does).") var list = false
    @Option(help: ArgumentHelp("A team's escalation policy instead of your own rules.", valueName: "team")) var team: String?
    @Flag(help: "With --list: one JSON object per rule, as the service keeps it.") var json = false

    func validate() throws {
        if json && !list { throw ArgumentParser.ValidationError("--json goes with --list") }
    }

    func run() async throws {
        try await reportingErrors {
            let (client, _, _) = try await Device().session()
            let list = try await client.escalationRuleList(team: team)
            let rules = list.value
            if json {
                for rule in rules {
                    var object = JSONValue.encoding(rule)
                    if case .object(var fields) = object {
                        fields["deliveries"] = JSONValue.encoding(list.deliveries?[rule.id] ?? [])
                        object = .object(fields)
                    }
                    print(object.jsonText)
                }
                return
            }
            if let team {
                if rules.isEmpty { say("\(team) has no escalation policy (owners: notty escalate add --team \(team) --after 0s --to oncall)") }
                // A member a page cannot reach is told here, not skipped in silence (PROTOCOL.md §13.2).
                for user in list.unreachable ?? [] { say("\(user) has no contacts: a page cannot reach them (notty contact add)") }
                if rules.isEmpty { return }
            } else if rules.isEmpty {
                say("no escalation rules (notty escalate add --after 10m --to ntfy:URL)")
                return
            }
            let now = Date()
            for rule in rules {
                say(rule.summary)
                for state in list.deliveries?[rule.id] ?? [] where state.lastDelivery != nil || state.lastError != nil || state.pending > 0 {
                    say("  " + Self.line(state, now: now))
                }
            }
        }
    }

    /// `--team`'s value as given: ArgumentParser hands an option that this command and a
    /// subcommand both declare to this one, so `add` and `remove` read it here.
    static var teamArgument: String? {
        let arguments = Array(CommandLine.arguments.dropFirst())
        for (index, word) in arguments.enumerated() {
            if word.hasPrefix("--team=") { return String(word.dropFirst("--team=".count)) }
            if word == "--team", index + 1 < arguments.count { return arguments[index + 1] }
        }
        return nil
    }

    /// The user's rule named `name`, or a line saying there is none.
    static func rule(named name: String, team: String? = nil, _ client: ServiceClient) async throws -> EscalationRule {
        guard let rule = try await client.escalationRules(team: team).first(where: { $0.name == name }) else {
            throw CLIError("no escalation rule named \(name) (notty escalate --list\(team.map { " --team \($0)" } ?? "") shows them)")
        }
        return rule
    }

    /// A target's line under its rule: its last delivery, its last error, what waits.
    static func line(_ state: EscalationTargetState, now: Date) -> String {
        var parts: [String] = []
        if let at = state.lastDelivery { parts.append("delivered \(TimeText.relative(at, now: now))") } else { parts.append("never delivered") }
        if let error = state.lastError, let at = state.lastErrorAt { parts.append("last error \(TimeText.relative(at, now: now)): \(error)") }
        if state.pending > 0 { parts.append("\(state.pending) waiting") }
        return state.target + ": " + parts.joined(separator: "; ")
    }
}

struct EscalateTest: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "test", abstract: "Send a test message to each target of a rule now, and print how each went.",
        discussion: """
            Exits 1 when any target failed; each target's outcome is also its last delivery \
            or last error in notty escalate --list.

              notty escalate test night
            """)

    @Argument(help: "The rule's name.") var name: String

    func run() async throws {
        try await reportingErrors {
            let (client, _, _) = try await Device().session()
            let rule = try await Escalate.rule(named: name, client)
            let outcomes = try await client.testEscalationRule(id: rule.id)
            for outcome in outcomes { say(outcome.ok ? "ok \(outcome.target)" : "failed \(outcome.target): \(outcome.error ?? "")") }
            if outcomes.contains(where: { !$0.ok }) { throw ExitCode(1) }
        }
    }
}

struct EscalateAdd: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add",
        abstract: "Add a rule: unhandled after --after, it is sent to each --to.",
        discussion: """
              notty escalate add --after 10m --to ntfy:https://ntfy.sh/my-alerts
              notty escalate add --after 5m --priority all --group deploys --to webhook:URL

            A team's policy (owners), several steps at once: each --after begins a step, and \
            the --to and --repeat after it are that step's. oncall pages whoever is on call \
            when the step fires, user:NAME a member, team every member (their contacts: \
            notty contact add); a team's steps may be --after 0s.

              notty escalate add --team ops --after 0s --to oncall --after 10m --to team --repeat 30m
            """)

    @Option(help: ArgumentHelp("How long a notification may stay unhandled: 30s, 10m, 2h (from 5s; a team's from 0s).", valueName: "duration"))
    var after: [DelayArgument] = []
    @Option(
        name: .customLong("to"),
        help: ArgumentHelp(
            "Where it goes: ntfy:URL, webhook:URL or command:NAME; for a team also oncall, team or user:NAME (repeatable, up to 10).",
            valueName: "target"))
    var targets: [String] = []
    @Option(name: .customLong("team"), help: ArgumentHelp("A step of this team's policy (owners), instead of a rule of your own.", valueName: "team"))
    var teamOption: String?
    var team: String? { teamOption ?? Escalate.teamArgument }
    @Option(help: ArgumentHelp("high (the default) or all.", valueName: "high|all")) var priority: String = "high"
    @Option(help: ArgumentHelp("Only notifications of this app.", valueName: "host")) var app: String?
    @Option(help: ArgumentHelp("Only notifications of this group.", valueName: "name")) var group: String?
    @Option(name: .customLong("repeat"), help: ArgumentHelp("Send it again this often while it stays unhandled.", valueName: "duration"))
    var repeatEvery: DurationArgument?
    @Option(help: ArgumentHelp("A name for the rule, one word (default: made up).", valueName: "name")) var name: String?

    /// One step: when, where, how often again.
    struct Step: Equatable {
        var after: Int
        var targets: [String] = []
        var repeatSeconds: Int?
    }

    /// The steps of `arguments` (the command line as given): each `--after` begins one, and the
    /// `--to` and `--repeat` after it are its own; nil when they cannot be told apart (one step).
    static func steps(_ arguments: [String]) -> [Step]? {
        var steps: [Step] = []
        var index = 0
        while index < arguments.count {
            let word = arguments[index]
            let (flag, inline) =
                word.hasPrefix("--") && word.contains("=")
                ? (String(word.prefix { $0 != "=" }), String(word.drop { $0 != "=" }.dropFirst())) : (word, nil)
            let value = inline ?? (index + 1 < arguments.count ? arguments[index + 1] : nil)
            switch flag {
            case "--after":
                guard let value, let seconds = DelayArgument(argument: value)?.seconds else { return nil }
                steps.append(Step(after: seconds))
            case "--to":
                guard let value, !steps.isEmpty else { return nil }
                steps[steps.count - 1].targets.append(value)
            case "--repeat":
                guard let value, !steps.isEmpty, let seconds = DurationArgument(argument: value)?.seconds else { return nil }
                steps[steps.count - 1].repeatSeconds = seconds
            default:
                index += 1
                continue
            }
            index += inline == nil ? 2 : 1
        }
        return steps
    }

    /// The bodies this command sends, a rule each step (named NAME, NAME-2, …).
    var bodies: [JSONValue] {
        var steps = [Step(after: after.first?.seconds ?? 0, targets: targets, repeatSeconds: repeatEvery?.seconds)]
        if after.count > 1, let parsed = Self.steps(Array(CommandLine.arguments.dropFirst())), parsed.count == after.count {
            steps = parsed
        }
        return steps.enumerated().map { index, step in
            EscalationRule.body(
                after: step.after, targets: step.targets, priority: priority, repeatSeconds: step.repeatSeconds, app: app, group: group,
                name: name.map { index == 0 ? $0 : "\($0)-\(index + 1)" })
        }
    }

    /// The service's own rules, checked here first (but for the commands only it knows, and a
    /// team's members), so that a mistake is one line before anything is sent; its words name the flags.
    func validate() throws {
        if after.isEmpty { throw ArgumentParser.ValidationError("say when with --after, e.g. --after 10m") }
        if targets.isEmpty { throw ArgumentParser.ValidationError("say where it goes with --to, e.g. --to ntfy:https://ntfy.sh/my-alerts") }
        if after.count > 1 && team == nil {
            throw ArgumentParser.ValidationError(
                "several steps (--after more than once) are for a team's policy: add --team TEAM, or add one rule at a time")
        }
        if let team, let problem = Team.nameProblem(team) { throw ArgumentParser.ValidationError(problem) }
        do throws(NottyCore.ValidationError) {
            for body in bodies {
                // The members are the service's to check: any name passes here.
                let members = Set(targets.compactMap { PagingTarget($0) }.compactMap { if case .user(let name) = $0 { name } else { nil } })
                _ = try EscalationRule(
                    body: Data(body.jsonText.utf8), commands: nil, id: "rule-check", now: Date(), team: team.map { ($0, members) })
            }
        } catch {
            let flags = [
                "after ": "--after ", "repeat ": "--repeat ", "priority ": "--priority ", "name ": "--name ", "app ": "--app ", "group ": "--group ",
            ]
            let message =
                flags.first { error.message.hasPrefix($0.key) }.map { $0.value + error.message.dropFirst($0.key.count) } ?? "--to " + error.message
            throw ArgumentParser.ValidationError(message)
        }
    }

    func run() async throws {
        try await reportingErrors {
            let (client, _, _) = try await Device().session()
            for body in bodies {
                let rule = try await client.addEscalationRule(body, team: team)
                say("added \(team.map { "to \($0)'s policy: " } ?? "")\(rule.summary)")
            }
        }
    }
}

struct EscalateRemove: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "remove", abstract: "Remove a rule by its name (notty escalate --list shows them).")

    @Argument(help: "The rule's name.") var name: String
    @Option(name: .customLong("team"), help: ArgumentHelp("A step of this team's policy (owners).", valueName: "team")) var teamOption: String?
    var team: String? { teamOption ?? Escalate.teamArgument }

    func run() async throws {
        try await reportingErrors {
            let (client, _, _) = try await Device().session()
            let rule = try await Escalate.rule(named: name, team: team, client)
            try await client.removeEscalationRule(id: rule.id, team: team)
            say("removed \(rule.name)")
        }
    }
}
