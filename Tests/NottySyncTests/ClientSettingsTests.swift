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
        expected.pollExec = #"notify-send "$NOTTY_TITLE" "$NOTTY_BODY""#
        expected.pollLive = true
        #expect(settings == expected)
    }

    @Test("No file, or an empty one, is the defaults; keys are read as written")
    func defaults() throws {
        #expect(try ClientSettings.load(path: "/nonexistent/notty/config.toml") == ClientSettings())
        #expect(try ClientSettings(toml: "", file: "f") == ClientSettings())
        let settings = try ClientSettings(toml: "view = \"Dismissed\"\ncolor = false\n", file: "f")
        #expect(settings.view == .dismissed && !settings.color && settings.pollInterval == nil && !settings.pollLive)
    }

    @Test("A file notty cannot use is one error naming the file, the place or key, and what to write", arguments: [
        ("view = ", "f: line 1, column"),
        ("view = \"inbox\"", #"f: view = "inbox" is not a view: use unread, read, activated, dismissed, snoozed or all"#),
        ("view = 3", "f: view must be a string, not 3"),
        ("colour = false", "f: unknown setting colour (known: view, color, poll.interval, poll.exec, poll.live)"),
        ("color = \"no\"", "f: color must be true or false, not a string"),
        ("poll = 5", "f: poll must be a table ([poll]), not 5"),
        ("[poll]\ninterval = 0", "f: poll.interval must be a whole number of seconds, at least 1, not 0"),
        ("[poll]\ninterval = 1.5", "f: poll.interval must be a whole number of seconds, at least 1, not a floating-point number"),
        ("[poll]\nexecute = 'x'", "f: unknown setting poll.execute"),
        ("[poll]\nlive = 1", "f: poll.live must be true or false, not 1"),
    ])
    func errors(toml: String, message: String) {
        #expect {
            try ClientSettings(toml: toml, file: "f")
        } throws: { error in
            (error as? SettingsError)?.description.hasPrefix(message) == true
        }
    }

    @Test("A file that exists but cannot be read, or is not UTF-8, is a clear error too")
    func unreadable() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("notty-settings-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("config.toml")
        try Data([0x76, 0x69, 0x65, 0x77, 0xff, 0xfe]).write(to: file)
        #expect(throws: SettingsError("\(file.path): is not UTF-8 text")) { try ClientSettings.load(path: file.path) }
    }
}
