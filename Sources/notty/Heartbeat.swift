import ArgumentParser
import Foundation
import NottyCommandLine
import NottyCore
import NottySync

// Heartbeats (PROTOCOL.md §16.3): a dead man's switch for jobs that should run on their own.
struct HeartbeatCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "heartbeat",
        abstract: "Be told when a job stops pinging (a dead man's switch).",
        discussion: """
            A heartbeat has a secret ping URL. Call it (GET, HEAD or POST) whenever the job \
            succeeds; when no ping comes within --every plus --grace, a notification \
            "NAME: no ping for …" reaches every device (a team's: every member, with its \
            escalation and on call), and the next ping dismisses it everywhere. Call URL/fail \
            to report a failure at once.

              notty heartbeat add backup --every 1d --grace 1h
              0 3 * * * /usr/local/bin/backup && curl -fsS -m 10 --retry 3 PING_URL
              notty heartbeat --list
              notty heartbeat pause backup      (maintenance: never late while paused)
              notty heartbeat resume backup
              notty heartbeat remove backup
            """,
        subcommands: [HeartbeatAdd.self, HeartbeatRemove.self, HeartbeatPause.self, HeartbeatResume.self])

    @Flag(help: "List your heartbeats (also what notty heartbeat alone does).") var list = false
    @Option(help: "A team's heartbeats instead of yours.") var team: String?
    @Flag(help: "With --list: one JSON object per heartbeat.") var json = false

    func run() async throws {
        try await reportingErrors {
            let (client, _, _) = try await Device().session()
            let heartbeats = try await client.heartbeats(team: team)
            if json {
                for heartbeat in heartbeats { print(JSONValue.encoding(heartbeat).jsonText) }
                return
            }
            if heartbeats.isEmpty { say("no heartbeats (notty heartbeat add NAME --every 1h)") }
            for heartbeat in heartbeats { say(Self.line(heartbeat)) }
        }
    }

    /// `backup  every 1d, grace 1h  up  last ping 2026-12-07T03:00:02.114Z`.
    static func line(_ heartbeat: HeartbeatInfo) -> String {
        let state = heartbeat.failed && heartbeat.state == .late ? "failed" : heartbeat.state.rawValue
        let last = heartbeat.lastPingDateTime.map { "last ping \(ISOTime.format($0))" } ?? "never pinged"
        return
            "\(heartbeat.name)  every \(DurationText.words(heartbeat.every)), grace \(DurationText.words(heartbeat.grace))  \(state)  \(last)"
    }
}

struct HeartbeatAdd: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add", abstract: "Make a heartbeat; prints its secret ping URL (shown this once).")
    @Argument(help: "What it watches, such as backup (1 to 64 characters, no slash).") var name: String
    @Option(help: "The most time between two pings: 10s to 30d, such as 5m, 1h, 1d.") var every: DurationArgument
    @Option(help: "How much later than --every it may be before it is late (default: a tenth of --every, at least 5s; 0s for none).")
    var grace: DelayArgument?
    @Option(help: "Make it a team's (its owners do): late, it reaches every member.") var team: String?
    @Option(help: "high (default), normal or low.") var priority: String = "high"
    @Option(help: "The late notification's text (default: what was expected and the last ping).") var message: String?

    func validate() throws {
        if let problem = Heartbeat.nameProblem(name) { throw ArgumentParser.ValidationError(problem) }
        guard Heartbeat.everyRange.contains(every.seconds) else { throw ArgumentParser.ValidationError("--every is from 10s to 30d") }
        if let grace, grace.seconds > Heartbeat.everyRange.upperBound { throw ArgumentParser.ValidationError("--grace is at most 30d") }
        guard ["high", "normal", "low"].contains(priority.lowercased()) else {
            throw ArgumentParser.ValidationError("--priority is high, normal or low")
        }
    }

    func run() async throws {
        try await reportingErrors {
            let (client, _, _) = try await Device().session()
            let priority: Priority = ["normal": .none, "low": .low][self.priority.lowercased()] ?? .high
            let made = try await client.addHeartbeat(
                HeartbeatRequest(name: name, every: every.seconds, grace: grace?.seconds, team: team, priority: priority, message: message))
            say("added \(made.name): late when no ping comes for \(DurationText.words(made.every + made.grace))")
            say("ping URL (keep it secret; GET, HEAD or POST; add /fail to report a failure):")
            print(made.pingUrl ?? "")
        }
    }
}

struct HeartbeatRemove: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "remove", abstract: "Remove a heartbeat: its URL stops working and a late notification of it is dismissed.")
    @Argument(help: "The heartbeat's name.") var name: String
    @Option(help: "A team's heartbeat.") var team: String?

    func run() async throws {
        try await reportingErrors {
            let (client, _, _) = try await Device().session()
            try await client.removeHeartbeat(name: name, team: team)
            say("removed \(name)")
        }
    }
}

struct HeartbeatPause: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pause", abstract: "Pause a heartbeat: never late until resumed (a late notification is dismissed).")
    @OptionGroup var heartbeat: HeartbeatName

    func run() async throws { try await heartbeat.set(paused: true) }
}

struct HeartbeatResume: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "resume", abstract: "Resume a paused heartbeat: due every + grace from now.")
    @OptionGroup var heartbeat: HeartbeatName

    func run() async throws { try await heartbeat.set(paused: false) }
}

/// Which heartbeat `pause` and `resume` are about.
struct HeartbeatName: ParsableArguments {
    @Argument(help: "The heartbeat's name.") var name: String
    @Option(help: "A team's heartbeat.") var team: String?

    /// Pauses or resumes it, and says how it is then.
    func set(paused: Bool) async throws {
        try await reportingErrors {
            let (client, _, _) = try await Device().session()
            say(HeartbeatCommand.line(try await client.pauseHeartbeat(name: name, team: team, paused: paused)))
        }
    }
}
