import ArgumentParser
import Foundation
import NottyCommandLine
import NottyCore
import NottySync

// Escalation rules (SPEC §11): kept on the service, the user's own.
struct Escalate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "escalate",
        abstract: "Rules that tell someone when a notification is handled nowhere in time.",
        discussion: """
            A rule says who is told when a notification is still unhandled (in Unread: not
            read, activated, dismissed, snoozed or deleted on any device) a while after it
            arrived, and the moment it is handled anywhere it is taken back. Rules are kept
            on the service and apply to every device. This version of the service keeps
            and checks the rules; it does not send escalations yet.

              notty escalate add --after 10m --to ntfy:https://ntfy.sh/my-alerts
              notty escalate add --after 5m --to webhook:https://hooks.example.com/oncall --app mon.example.com
              notty escalate add --after 15m --to command:ops --repeat 30m --name night
              notty escalate --list
              notty escalate remove night

            Targets: ntfy:URL (an ntfy topic; credentials as ntfy takes them, user:pass@ in
            the URL or ?auth=), webhook:URL (a JSON POST), command:NAME (a command the
            service's administrator named in [escalation.commands] of server.toml).
            --priority high (the default) or all; --after and --repeat from 5s.
            """,
        subcommands: [EscalateAdd.self, EscalateRemove.self])

    @Flag(help: "List the rules (also what notty escalate alone does).") var list = false
    @Flag(help: "With --list: one JSON object per rule, as the service keeps it.") var json = false

    func validate() throws {
        if json && !list { throw ArgumentParser.ValidationError("--json goes with --list") }
    }

    func run() async throws {
        try await reportingErrors {
            let (client, _, _) = try await Device().session()
            let rules = try await client.escalationRules()
            if json {
                for rule in rules { print(String(decoding: try NottyJSON.encoder.encode(rule), as: UTF8.self)) }
                return
            }
            if rules.isEmpty { say("no escalation rules (notty escalate add --after 10m --to ntfy:URL)"); return }
            for rule in rules { say(rule.summary) }
        }
    }
}

struct EscalateAdd: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add",
        abstract: "Add a rule: unhandled after --after, it is sent to each --to.",
        discussion: """
              notty escalate add --after 10m --to ntfy:https://ntfy.sh/my-alerts
              notty escalate add --after 5m --to webhook:https://hooks.example.com/oncall --priority all --group deploys
            """)

    @Option(help: ArgumentHelp("How long a notification may stay unhandled: 30s, 10m, 2h (from 5s).", valueName: "duration")) var after: DurationArgument
    @Option(name: .customLong("to"), help: ArgumentHelp("Where it goes: ntfy:URL, webhook:URL or command:NAME (repeatable, up to 10).", valueName: "target"))
    var targets: [String] = []
    @Option(help: ArgumentHelp("high (the default) or all.", valueName: "high|all")) var priority: String = "high"
    @Option(help: ArgumentHelp("Only notifications of this app.", valueName: "host")) var app: String?
    @Option(help: ArgumentHelp("Only notifications of this group.", valueName: "name")) var group: String?
    @Option(name: .customLong("repeat"), help: ArgumentHelp("Send it again this often while it stays unhandled.", valueName: "duration")) var repeatEvery: DurationArgument?
    @Option(help: ArgumentHelp("A name for the rule, one word (default: made up).", valueName: "name")) var name: String?

    func validate() throws {
        if targets.isEmpty { throw ArgumentParser.ValidationError("say where it goes with --to, e.g. --to ntfy:https://ntfy.sh/my-alerts") }
        for target in targets {
            do {
                _ = try EscalationTarget(parsing: target)
            } catch {
                throw ArgumentParser.ValidationError("--to \(error.message)")
            }
        }
        guard ["high", "all"].contains(priority.lowercased()) else { throw ArgumentParser.ValidationError("--priority must be high or all") }
        for (flag, value) in [("--after", after as DurationArgument?), ("--repeat", repeatEvery)] {
            if let value, value.seconds < EscalationRule.minimumSeconds {
                throw ArgumentParser.ValidationError("\(flag) must be at least \(EscalationRule.minimumSeconds)s")
            }
        }
    }

    func run() async throws {
        try await reportingErrors {
            let (client, _, _) = try await Device().session()
            var body: [String: JSONValue] = [
                "after": .number(Double(after.seconds)), "targets": .array(targets.map(JSONValue.string)), "priority": .string(priority.lowercased()),
            ]
            body["repeat"] = repeatEvery.map { .number(Double($0.seconds)) }
            body["app"] = app.map(JSONValue.string)
            body["group"] = group.map(JSONValue.string)
            body["name"] = name.map(JSONValue.string)
            let rule = try await client.addEscalationRule(.object(body))
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
            guard let rule = try await client.escalationRules().first(where: { $0.name == name }) else {
                throw CLIError("no escalation rule named \(name) (notty escalate --list shows them)")
            }
            try await client.removeEscalationRule(id: rule.id)
            say("removed \(rule.name)")
        }
    }
}
