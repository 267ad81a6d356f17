import Foundation
import NottyTestSupport
import Testing

/// `notty escalate` against a real `notty serve` whose commands come from its settings file.
@Suite("notty escalate (rules on the service)", .timeLimit(.minutes(5)))
struct EscalateCLITests {
    let home = FileManager.default.temporaryDirectory.appendingPathComponent("notty-escalate-\(UUID().uuidString)")

    @Test("add, --list (words and --json), remove; a command the administrator did not name and bad flags are one line each")
    func rules() async throws {
        defer { try? FileManager.default.removeItem(at: home) }
        try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
        let settings = home.appendingPathComponent("server.toml")
        try """
        [escalation.commands]
        ops = "apprise -t \\"$NOTTY_TITLE\\" tgram://bot/chat"
        """.write(to: settings, atomically: true, encoding: .utf8)
        let serve = try await ServeProcess(directory: home.appendingPathComponent("service"), extraArguments: ["--config", settings.path])
        defer { serve.stop() }
        let device = NottyCLI(home: home.appendingPathComponent("device"))
        try await device.login(serve.url)

        let empty = try await device.run(["escalate"])
        #expect(empty.status == 0 && empty.out == "no escalation rules (notty escalate add --after 10m --to ntfy:URL)\n", "\(empty.err)")
        let added = try await device.run([
            "escalate", "add", "--after", "10m", "--to", "ntfy:https://bot:pw@ntfy.example/alerts", "--to", "command:ops",
            "--repeat", "30m", "--name", "night", "--app", "mon.example.com",
        ])
        #expect(added.status == 0, "\(added.err)")
        #expect(
            added.out == "added night: after 10m, every 30m again, High only, app mon.example.com → ntfy:https://…@ntfy.example/alerts, command:ops\n"
        )
        let second = try await device.run([
            "escalate", "add", "--after", "90s", "--to", "webhook:https://hooks.example/x", "--priority", "all", "--name", "day",
        ])
        #expect(second.status == 0, "\(second.err)")
        let listed = try await device.run(["escalate", "--list"])
        #expect(listed.out.split(separator: "\n").map { String($0.prefix(while: { $0 != ":" })) } == ["night", "day"], "\(listed.out)")
        let json = try await device.run(["escalate", "--list", "--json"])
        let objects = try json.out.split(separator: "\n").map { try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        #expect(objects.count == 2)
        #expect(objects.first??["afterSeconds"] as? Int == 600)
        #expect(objects.first??["targets"] as? [String] == ["ntfy:https://bot:pw@ntfy.example/alerts", "command:ops"])

        let unknown = try await device.run(["escalate", "add", "--after", "10m", "--to", "command:sms"])
        #expect(
            unknown.status == 1 && unknown.err.contains("no command named sms on this service: there are ops")
                && unknown.err.split(separator: "\n").count == 1,
            "\(unknown.err)")
        let badTarget = try await device.run(["escalate", "add", "--after", "10m", "--to", "mail:me@example.com"])
        #expect(badTarget.status != 0 && badTarget.err.contains("write ntfy:URL, webhook:URL or command:NAME"), "\(badTarget.err)")
        let tooSoon = try await device.run(["escalate", "add", "--after", "2s", "--to", "command:ops"])
        #expect(tooSoon.status != 0 && tooSoon.err.contains("--after must be from 5s"), "\(tooSoon.err)")
        let taken = try await device.run(["escalate", "add", "--after", "10m", "--to", "command:ops", "--name", "night"])
        #expect(taken.status == 1 && taken.err.contains("already an escalation rule named night"), "\(taken.err)")

        #expect(try await device.run(["escalate", "remove", "night"]).out == "removed night\n")
        let gone = try await device.run(["escalate", "remove", "night"])
        #expect(gone.status == 1 && gone.err == "notty: no escalation rule named night (notty escalate --list shows them)\n", "\(gone.err)")
        #expect(try await device.run(["escalate"]).out.hasPrefix("day: after 90s, any priority → webhook:https://hooks.example/x"))
        let help = try await device.run(["escalate", "--help"])
        #expect(help.status == 0 && help.out.contains("notty escalate add --after 10m --to ntfy:"))
    }

    @Test("a settings file's [escalation.commands] must be NAME = \"LINE\": anything else is one line naming the file")
    func badSettings() async throws {
        defer { try? FileManager.default.removeItem(at: home) }
        try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
        let cli = NottyCLI(home: home)
        for (text, says) in [
            ("[escalation]\ncommands = 3\n", "escalation.commands is not a setting"),
            ("[escalation.commands]\nops = 3\n", "escalation.commands.ops must be a string"),
            ("[escalation.commands]\n\"two words\" = \"true\"\n", "two words is not a name"),
            ("escalation = 1\n", "escalation must be a table"),
        ] {
            let file = home.appendingPathComponent("server.toml")
            try text.write(to: file, atomically: true, encoding: .utf8)
            let result = try await cli.run(["serve", "--config", file.path])
            #expect(
                result.status == 1 && result.err.hasPrefix("notty: ") && result.err.contains(says) && result.err.split(separator: "\n").count == 1,
                "\(text): \(result.err)")
        }
    }
}
