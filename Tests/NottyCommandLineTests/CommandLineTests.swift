import ArgumentParser
import Testing

@testable import NottyCommandLine

@Suite("What both programs share: durations, errors, command paths")
struct CommandLineTests {
    @Test("durations as people write them: 90s, 15m, 4h, 7d, 2w, plain seconds; anything else is refused")
    func durations() {
        #expect(DurationArgument(argument: "90s")?.seconds == 90)
        #expect(DurationArgument(argument: "15m")?.seconds == 900)
        #expect(DurationArgument(argument: "4h")?.seconds == 14_400)
        #expect(DurationArgument(argument: "7d")?.seconds == 604_800)
        #expect(DurationArgument(argument: "2w")?.seconds == 1_209_600)
        #expect(DurationArgument(argument: "45")?.seconds == 45)
        for bad in ["", "0s", "-5m", "5 parsecs", "1.5h", "500ms", "99999999999999999999d"] {
            #expect(DurationArgument(argument: bad) == nil, "\(bad) was taken for a duration")
        }
        // An escalation step's --after alone may be none.
        #expect(DelayArgument(argument: "0s")?.seconds == 0 && DelayArgument(argument: "10m")?.seconds == 600)
        #expect(DelayArgument(argument: "-5m") == nil)
    }

    @Test("a failure is one line and exit 1; an ExitCode passes through as it is")
    func reporting() async {
        await #expect(throws: ExitCode(1)) { try await reportingErrors { throw CLIError("the service said no") } }
        await #expect(throws: ExitCode(3)) { try await reportingErrors { throw ExitCode(3) } }
        await #expect(throws: Never.self) { try await reportingErrors {} }
    }

    struct Leaf: ParsableCommand { static let configuration = CommandConfiguration(commandName: "add") }
    struct Middle: ParsableCommand { static let configuration = CommandConfiguration(commandName: "user", subcommands: [Leaf.self]) }
    struct Root: ParsableCommand { static let configuration = CommandConfiguration(commandName: "notty", subcommands: [Middle.self]) }

    @Test("the command path named in an error's hint stops at the first word that is not a subcommand")
    func paths() {
        #expect(commandPath(Root.self, ["user", "add", "--bad"]) == "notty user add")
        #expect(commandPath(Root.self, ["user", "--bad"]) == "notty user")
        #expect(commandPath(Root.self, ["nonsense", "user"]) == "notty")
    }
}
