import Foundation
import NottyCore
import NottySync
import Testing

@Suite("config.toml settings")
struct ClientSettingsTests {
    @Test("The template notty --help shows reads back as every key it sets")
    func template() throws {
        let settings = try ClientSettings(toml: ClientSettings.template, file: "config.toml")
        var expected = ClientSettings()
        expected.view = .unread
        expected.color = true
        expected.pollInterval = 60
        expected.pollExec = #"echo "$NOTTY_TITLE" >> ~/notty.log"#
        expected.pollOnChange = #"echo "$NOTTY_ID $NOTTY_STATE" >> ~/notty.log"#
        expected.pollLive = true
        expected.pollDesktop = true
        #expect(settings == expected)
    }

    @Test("No file, or an empty one, is the defaults; keys are read as written")
    func defaults() throws {
        #expect(try ClientSettings.load(path: "/nonexistent/notty/config.toml") == ClientSettings())
        #expect(try ClientSettings(toml: "", file: "f") == ClientSettings())
        let settings = try ClientSettings(toml: "view = \"Dismissed\"\ncolor = false\n", file: "f")
        #expect(settings.view == .dismissed && !settings.color && settings.pollInterval == nil && !settings.pollLive)
        // Dotted keys and inline tables are the same table as [poll].
        #expect(try ClientSettings(toml: "poll.live = true\npoll.interval = 90", file: "f").pollLive)
        #expect(try ClientSettings(toml: "poll = { live = true, interval = 90 }", file: "f").pollInterval == 90)
    }

    @Test(
        "A file notty cannot use is one error naming the file, the place or key, and what to write",
        arguments: [
            ("view = ", "f: line 1, column"),
            ("view = \"inbox\"", #"f: view = "inbox" is not a view: use unread, read, activated, dismissed, snoozed or all"#),
            ("view = 3", "f: view must be a string, not 3"),
            (
                "colour = false",
                "f: unknown setting colour (known: view, color, poll.interval, poll.exec, poll.on_change, poll.live, poll.desktop, poll.storm)"
            ),
            ("color = \"no\"", "f: color must be true or false, not a string"),
            ("poll = 5", "f: poll must be a table ([poll]), not 5"),
            ("[poll]\ninterval = 0", "f: poll.interval must be a whole number of seconds, at least 1, not 0"),
            ("[poll]\ninterval = 1.5", "f: poll.interval must be a whole number of seconds, at least 1, not a floating-point number"),
            ("[poll]\nexecute = 'x'", "f: unknown setting poll.execute"),
            ("[poll]\nlive = 1", "f: poll.live must be true or false, not 1"),
            ("view = [\"all\"]", "f: view must be a string, not an array"),
            ("[[poll]]\nlive = true", "f: poll must be a table ([poll]), not an array"),
            ("\"a\\nb\" = 1", #"f: unknown setting "a\nb" (known:"#),
            ("\"view\\u0000x\" = 1", "f: a key holds a NUL character"),
            ("[poll]\n\"\\u0000\" = 1", "f: a key holds a NUL character"),
        ])
    func errors(toml: String, message: String) {
        #expect {
            try ClientSettings(toml: toml, file: "f")
        } throws: { error in
            (error as? SettingsError)?.description.hasPrefix(message) == true
        }
    }

    @Test("A file that is not UTF-8, or holds a NUL byte, is a clear error too")
    func notText() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("notty-settings-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("config.toml")
        try Data([0x76, 0x69, 0x65, 0x77, 0xff, 0xfe]).write(to: file)
        #expect(throws: SettingsError("\(file.path): is not UTF-8 text (or holds a NUL byte)")) { try ClientSettings.load(path: file.path) }
        // toml++ reads a C string: without the check, what follows a NUL would be ignored.
        try Data("view = \"all\"\n\u{0}colour = 1\n".utf8).write(to: file)
        #expect(throws: SettingsError("\(file.path): is not UTF-8 text (or holds a NUL byte)")) { try ClientSettings.load(path: file.path) }
    }
}

@Suite("Polling after errors")
struct PollBackoffTests {
    @Test("after an error the next poll waits at least the interval, doubling up to 5 minutes, with jitter", arguments: [1, 30, 60, 300, 600])
    func doubling(_ interval: Int) {
        var backoff = PollBackoff()
        var waits: [Int] = []
        for _ in 0..<12 { waits.append(backoff.next(interval: interval)) }
        #expect(waits.allSatisfy { $0 >= interval && $0 <= max(300, interval) }, "\(waits)")
        #expect(waits.first! <= interval + interval / 4)
        #expect(waits.last! >= min(300, interval), "it grows to 5 minutes: \(waits)")
        if interval == 30 { #expect(waits[1] >= 60 && waits[2] >= 120, "it doubles: \(waits)") }
        backoff.reset()
        #expect(backoff.next(interval: interval) <= interval + interval / 4)
    }
}
