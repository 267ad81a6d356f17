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
            A rule says who is told when a notification is still unhandled (in Unread: not
            read, activated, dismissed, snoozed or deleted on any device) a while after it
            arrived, and the moment it is handled anywhere it is taken back (ntfy: cleared
            from the phone; webhook and command: told "handled", with the device). Rules
            are kept on the service and apply to every device; a muted app or group is
            never escalated, and quiet hours do not hold escalation back.

              notty escalate add --after 10m --to ntfy:https://ntfy.sh/my-alerts
              notty escalate add --after 5m --to webhook:https://hooks.example.com/oncall
              notty escalate add --after 15m --to command:ops --repeat 30m --name night
              notty escalate test night        (a test message to each target, now)
              notty escalate --list            (each target's last delivery and last error)
              notty escalate remove night

            Targets: ntfy:URL (an ntfy topic; credentials as ntfy takes them, user:pass@ in
            the URL or ?auth=), webhook:URL (a JSON POST), command:NAME (a command the
            service's administrator named in [escalation.commands] of server.toml).
            A token goes as ntfy:https://tk_mytoken@ntfy.example/alerts. --priority high
            (the default) or all; --after and --repeat from 5s. A target that fails is
            retried with backoff for a day.
            """,
        subcommands: [EscalateAdd.self, EscalateRemove.self, EscalateTest.self])

    @Flag(help: "List the rules (also what notty escalate alone does).") var list = false
    @Flag(help: "With --list: one JSON object per rule, as the service keeps it.") var json = false

    func validate() throws {
        if json && !list { throw ArgumentParser.ValidationError("--json goes with --list") }
    }

    func run() async throws {
        try await reportingErrors {
            let (client, _, _) = try await Device().session()
            let list = try await client.escalationRuleList()
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
            if rules.isEmpty { say("no escalation rules (notty escalate add --after 10m --to ntfy:URL)"); return }
            let now = Date()
            for rule in rules {
                say(rule.summary)
                for state in list.deliveries?[rule.id] ?? [] where state.lastDelivery != nil || state.lastError != nil || state.pending > 0 {
                    say("  " + Self.line(state, now: now))
                }
            }
        }
    }

    /// The user's rule named `name`, or a line saying there is none.
    static func rule(named name: String, _ client: ServiceClient) async throws -> EscalationRule {
        guard let rule = try await client.escalationRules().first(where: { $0.name == name }) else {
            throw CLIError("no escalation rule named \(name) (notty escalate --list shows them)")
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
            Exits 1 when any target failed; each target's outcome is also its last delivery
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
            """)

    @Option(help: ArgumentHelp("How long a notification may stay unhandled: 30s, 10m, 2h (from 5s).", valueName: "duration")) var after:
        DurationArgument
    @Option(
        name: .customLong("to"),
        help: ArgumentHelp("Where it goes: ntfy:URL, webhook:URL or command:NAME (repeatable, up to 10).", valueName: "target"))
    var targets: [String] = []
    @Option(help: ArgumentHelp("high (the default) or all.", valueName: "high|all")) var priority: String = "high"
    @Option(help: ArgumentHelp("Only notifications of this app.", valueName: "host")) var app: String?
    @Option(help: ArgumentHelp("Only notifications of this group.", valueName: "name")) var group: String?
    @Option(name: .customLong("repeat"), help: ArgumentHelp("Send it again this often while it stays unhandled.", valueName: "duration"))
    var repeatEvery: DurationArgument?
    @Option(help: ArgumentHelp("A name for the rule, one word (default: made up).", valueName: "name")) var name: String?

    /// The body this command sends.
    var body: JSONValue {
        EscalationRule.body(
            after: after.seconds, targets: targets, priority: priority, repeatSeconds: repeatEvery?.seconds, app: app, group: group, name: name)
    }

    /// The service's own rules, checked here first (but for the commands only it knows), so
    /// that a mistake is one line before anything is sent; its words name the flags.
    func validate() throws {
        if targets.isEmpty { throw ArgumentParser.ValidationError("say where it goes with --to, e.g. --to ntfy:https://ntfy.sh/my-alerts") }
        do throws(NottyCore.ValidationError) {
            _ = try EscalationRule(body: Data(body.jsonText.utf8), commands: nil, id: "rule-check", now: Date())
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
            let rule = try await client.addEscalationRule(body)
            say("added \(rule.summary)")
        }
    }
}

struct EscalateRemove: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "remove", abstract: "Remove a rule by its name (notty escalate --list shows them).")

    @Argument(help: "The rule's name.") var name: String

    func run() async throws {
        try await reportingErrors {
            let (client, _, _) = try await Device().session()
            let rule = try await Escalate.rule(named: name, client)
            try await client.removeEscalationRule(id: rule.id)
            say("removed \(rule.name)")
        }
    }
}
