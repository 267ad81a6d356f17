import Foundation
import NottyCore
import NottySync
import NottyTestSupport
import Testing

/// Text an attacker who can publish (any app server, later any webhook URL) would send: a new
/// window title (OSC 0), the clipboard (OSC 52), a cleared screen and a homed cursor (CSI),
/// a hidden link (OSC 8), an 8-bit CSI, a DCS string and a lone ESC.
enum Hostile {
    static let title =
        "Hi\u{1B}]0;PWNED-TITLE\u{07}\u{1B}]52;c;UFdORUQtQ0xJUA==\u{07}\u{1B}[2J\u{1B}[H"
        + "\u{1B}]8;;https://evil.example/\u{1B}\\click\u{1B}]8;;\u{1B}\\\u{9B}31mred\u{1B}Pq#0\u{1B}\\ lone\u{1B} end"
    static let body = "line one\u{1B}]2;PWNED-BODY\u{07}\nline two\u{1B}[1;1H\u{1B}[2K\r\u{1B}]52;c;UFdORUQtQk9EWQ==\u{1B}\\"
    /// A device name and an app name the service echoes back.
    static let name = "box\u{1B}]0;PWNED-NAME\u{07}\u{1B}[2J"
}

/// A tmux session with the clipboard open to programs (`set-clipboard on`), so an OSC 52 that
/// got through would show up as a paste buffer.
private func watchedSession(_ script: String, columns: Int = 200, rows: Int = 60) async throws -> TmuxSession {
    let session = try TmuxSession(command: "sh \(script)", columns: columns, rows: rows, environment: [:])
    try await session.tmux(["set-option", "-g", "set-clipboard", "on"])
    return session
}

extension TmuxSession {
    fileprivate var paneTitle: String { get async { (try? await query("#{pane_title}")) ?? "" } }
    fileprivate var buffers: String { get async { (try? await tmux(["list-buffers"])) ?? "" } }
}

/// Writes a script that waits for `go` (so tmux's options are set first), prints a marker line,
/// runs `command` with `$HOSTILE` set, then prints a done line.
private func script(in directory: URL, _ name: String, _ command: String) throws -> URL {
    let url = directory.appendingPathComponent("\(name).sh")
    let hostile = Hostile.name.unicodeScalars.map { $0.value < 0x20 ? String(format: "\\%03o", $0.value) : String($0) }.joined()
    let text = """
        while [ ! -e \(directory.path)/go-\(name) ]; do sleep 0.05; done
        HOSTILE=$(printf '\(hostile)')
        echo BEFORE-MARKER
        \(command)
        echo "DONE-MARKER $?"
        """
    try text.write(to: url, atomically: true, encoding: .utf8)
    return url
}

@Suite(
    "Nothing from the network reaches a terminal raw (tmux)", .timeLimit(.minutes(5)), .serialized,
    .enabled(
        if: TmuxSession.available || TmuxSession.required, "SKIPPED LOUDLY: tmux is not installed (apt-get install -y tmux); .ci/run installs it"))
struct TerminalSafetyTests {
    /// Each path where text from the network or the store reaches a terminal.
    static let paths: [(name: String, command: String)] = [
        ("list", "notty list --view all"),
        ("show", "notty show $ID"),
        ("status", "NOTTY_HOME=$HOME_B notty status"),
        ("devices", "notty devices"),
        ("error line", "notty subscribe --app \"$HOSTILE\""),
        ("publish", "notty publish --server $SERVER --client-id $CLIENT_ID --client-secret $SECRET --uns-id \"$HOSTILE\" --title x"),
    ]

    @Test("the checks can fail: the hostile text printed raw retitles the pane, writes the clipboard and clears the screen")
    func controlRawPrintingIsCaught() async throws {
        let directory = Repository.temporaryDirectory("notty-raw")
        defer { try? FileManager.default.removeItem(at: directory) }
        let raw = directory.appendingPathComponent("raw.txt")
        try Data((Hostile.title + "\n").utf8).write(to: raw)
        let session = try await watchedSession(try script(in: directory, "raw", "cat \(raw.path)").path)
        let titleBefore = await session.paneTitle
        #expect(FileManager.default.createFile(atPath: directory.appendingPathComponent("go-raw").path, contents: nil))
        #expect(await session.waitFor("DONE-MARKER"), "\(session.shown)")
        let title = await session.paneTitle, buffers = await session.buffers
        #expect(title != titleBefore && title.contains("PWNED-TITLE"))
        #expect(buffers.contains("PWNED"), "OSC 52 did not reach tmux's clipboard: \(buffers)")
        #expect(await !session.screen().contains("BEFORE-MARKER"), "the raw CSI 2J did not clear the screen")
    }

    @Test(
        "list, show, status, devices, error lines and publish print placeholders: the pane title, the clipboard and the screen stay",
        arguments: Self.paths.map(\.name))
    func commandLinePath(_ name: String) async throws {
        let world = try await TwoDevices()
        let directory = world.directory
        let id = try await world.publish(Hostile.title, body: Hostile.body)
        #expect(try await world.a.run(["sync"]).status == 0)
        // B's device name is hostile too: A lists it, B's status shows it.
        let hostileB = NottyCLI(home: directory.appendingPathComponent("hostile-b"))
        try await hostileB.login(world.service.url, device: Hostile.name)
        let command = Self.paths.first { $0.name == name }!.command
        let environment = [
            "NOTTY_HOME": world.a.home.path, "HOME_B": hostileB.home.path, "ID": String(id.prefix(8)), "SERVER": world.service.url,
            "CLIENT_ID": world.service.clientId, "SECRET": world.service.clientSecret,
            "PATH": Repository.nottyBinary.deletingLastPathComponent().path + ":/usr/bin:/bin",
        ]
        let exports = environment.map { "export \($0.key)='\($0.value)'" }.joined(separator: "\n")
        let tag = name.replacingOccurrences(of: " ", with: "-")
        let session = try await watchedSession(try script(in: directory, tag, exports + "\n" + command).path)
        let titleBefore = await session.paneTitle
        #expect(FileManager.default.createFile(atPath: directory.appendingPathComponent("go-\(tag)").path, contents: nil))
        #expect(await session.waitFor("DONE-MARKER"), "\(name) did not finish:\n\(session.shown)")
        let screen = await session.screen()
        let title = await session.paneTitle, buffers = await session.buffers
        #expect(title == titleBefore, "\(name) retitled the pane: \(title)")
        #expect(buffers.isEmpty, "\(name) wrote the clipboard: \(buffers)")
        #expect(screen.contains("BEFORE-MARKER"), "\(name) cleared or overwrote the screen:\n\(screen)")
        // The attempt is shown, not obeyed (publish and the error line quote no content: they only must not break).
        if ["list", "show"].contains(name) { #expect(screen.contains("Hi␛]0;PWNED-TITLE␇"), "\(screen)") }
        if name == "show" { #expect(screen.contains("line one␛]2;PWNED-BODY␇") && screen.contains("line two␛[1;1H␛[2K␍"), "\(screen)") }
        if ["status", "devices"].contains(name) { #expect(screen.contains("box␛]0;PWNED-NAME␇␛[2J"), "\(screen)") }
        if name == "error line" { #expect(screen.contains("notty: ") && screen.contains("DONE-MARKER 1"), "\(screen)") }
    }

    @Test("the center shows the hostile title and body as placeholders: the pane title, the clipboard and the tab bar stay")
    func center() async throws {
        let world = try await TwoDevices()
        _ = try await world.publish(Hostile.title, body: Hostile.body)
        #expect(try await world.a.run(["sync"]).status == 0)
        let session = try TmuxSession(command: Repository.nottyBinary.path, columns: 160, rows: 30, environment: ["NOTTY_HOME": world.a.home.path])
        try await session.tmux(["set-option", "-g", "set-clipboard", "on"])
        let titleBefore = await session.paneTitle
        #expect(await session.waitFor("Unread 1"), "\(session.shown)")
        try await session.keys("Enter")
        #expect(await session.waitFor("line two"), "\(session.shown)")
        let screen = await session.screen()
        #expect(screen.contains("Hi␛]0;PWNED-TITLE␇"), "\(screen)")
        #expect(screen.split(separator: "\n").first?.contains("Unread") == true, "the tab bar was overwritten:\n\(screen)")
        let title = await session.paneTitle, buffers = await session.buffers
        #expect(title == titleBefore, "the center retitled the pane: \(title)")
        #expect(buffers.isEmpty, "the center wrote the clipboard: \(buffers)")
        try await session.keys("q")  // closes the detail
        try await session.keys("q")
        #expect(await session.waitFor("[exited 0]"), "\(session.shown)")
    }
}

@Suite("Invalid input: one line on stderr and a non-zero exit", .timeLimit(.minutes(5)), .serialized)
struct OneLineErrorTests {
    let home = Repository.temporaryDirectory("notty-errors")

    /// Each command line and a piece of its one line.
    static let cases: [(arguments: [String], says: String)] = [
        (["login"], "Missing expected argument"),
        (["login", "ftp://x", "--user", "a"], "the URL must look like"),
        (["list", "--limit", "0"], "--limit must be at least 1"),
        (["list", "--view", "nope"], "--view"),
        (["list", "--frobnicate"], "Unknown option"),
        (["snooze", "abcdef"], "--for"),
        (["snooze", "abcdef", "--for", "soon"], "soon"),
        (["read"], "give at least one id"),
        (["read", "--all"], "--all needs --view"),
        (["devices", "revoke", "ab"], "at least 6 characters"),
        (["serve", "--port", "99999"], "--port must be"),
        (["serve", "--max-body", "lots"], "--max-body"),
        (["serve", "--tls-cert", "x"], "go together"),
        (["serve", "--max-connections", "0"], "--max-connections must be"),
        (["serve", "--header-timeout", "soon"], "--header-timeout"),
        (["admin", "lockouts", "clear"], "give keys"),
        (["publish", "--uns-id", "x", "--title", "t", "--priority", "urgent"], "--priority must be"),
        (["nonsense-command"], "nonsense-command"),
        (["show", "abcdef"], "abcdef"),
        (["devices"], "not signed in"),
    ]

    @Test("exit status and exactly one stderr line, never a usage dump", arguments: Self.cases.indices)
    func oneLine(_ index: Int) async throws {
        defer { try? FileManager.default.removeItem(at: home) }
        let (arguments, says) = Self.cases[index]
        let result = try await NottyCLI(home: home).run(arguments)
        #expect(result.status != 0, "\(arguments) exited 0")
        let lines = result.err.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
        #expect(lines.count == 1, "\(arguments) wrote \(lines.count) lines:\n\(result.err)")
        #expect(result.err.hasPrefix("notty: ") && result.err.contains(says), "\(arguments): \(result.err)")
        #expect(!result.err.contains("USAGE") && !result.err.contains("Usage:"), "\(arguments): \(result.err)")
        #expect(result.out.isEmpty, "\(arguments) printed on stdout: \(result.out)")
    }

    @Test("notty serve takes a NOTTY_* variable per flag: a bad value is one line naming the variable; other NOTTY_* variables are left alone")
    func environmentSettings() async throws {
        defer { try? FileManager.default.removeItem(at: home) }
        for (variable, value, says) in [("NOTTY_PORT", "abc", "NOTTY_PORT: "), ("NOTTY_MAX_CONNECTIONS", "0", "--max-connections must be")] {
            let result = try await NottyCLI(home: home).run(["serve"], environment: [variable: value, "NOTTY_SOMETHING_ELSE": "x"])
            #expect(result.status != 0, "\(variable)=\(value) was taken")
            #expect(result.err.split(separator: "\n").count == 1 && result.err.contains(variable) && result.err.contains(says), "\(result.err)")
        }
    }

    @Test("--help still prints the whole help on stdout and exits 0, and never mentions SPEC")
    func help() async throws {
        defer { try? FileManager.default.removeItem(at: home) }
        for arguments in [["--help"], ["list", "--help"], ["poll", "--help"], ["serve", "--help"], ["devices", "--help"], ["help", "devices"]] {
            let result = try await NottyCLI(home: home).run(arguments)
            #expect(result.status == 0 && result.out.contains("USAGE"), "\(arguments): \(result.err)")
            #expect(!result.out.contains("SPEC"), "\(arguments) mentions SPEC")
        }
        let serve = try await NottyCLI(home: home).run(["serve", "--help"]).out
        for flag in [
            "--max-body", "--max-app-notification-id", "--max-group-name", "--max-title", "--history", "--access-token-lifetime",
            "--refresh-token-lifetime", "--default-ttl", "--max-ttl", "--poll-interval", "--publish-rate", "--publish-burst",
            "--header-timeout", "--idle-timeout", "--max-connections", "--config",
        ] {
            #expect(serve.contains(flag), "serve --help does not list \(flag)")
        }
    }
}

@Suite("Devices and subscriptions", .timeLimit(.minutes(5)), .serialized)
struct DeviceTests {
    @Test("subscribe to an unknown app: one line (404) and no id; devices lists both devices, this one marked; revoke signs the other out at once")
    func devicesAndRevoke() async throws {
        let world = try await TwoDevices()
        let typo = try await world.a.run(["subscribe", "--app", "typo.example"])
        #expect(typo.status == 1 && typo.out.isEmpty, "\(typo.out)")
        #expect(typo.err.split(separator: "\n").count == 1 && typo.err.contains("404") && typo.err.contains("typo.example"), "\(typo.err)")

        let listed = try await world.a.run(["devices"])
        #expect(listed.status == 0, "\(listed.err)")
        let lines = listed.out.split(separator: "\n").map(String.init)
        #expect(lines.contains { $0.contains(" A ") && $0.contains("(this device)") && $0.contains("seen") }, "\(listed.out)")
        #expect(lines.contains { $0.contains(" B ") && !$0.contains("(this device)") }, "\(listed.out)")
        #expect(lines.contains { $0.contains("ci.example.com") && $0.contains("from A") }, "\(listed.out)")
        let json = try await world.a.run(["devices", "--json"]).out.split(separator: "\n").compactMap { JSONValue(jsonText: String($0)) }
        #expect(json.count == 3)
        let deviceB = json.first { $0["deviceName"] == .string("B") }
        #expect(deviceB?["kind"] == .string("device") && deviceB?["thisDevice"] == .bool(false))
        guard case .string(let idB)? = deviceB?["userNotificationSubscriptionId"] else { Issue.record("no id for B"); return }

        // B works, then A revokes B: B's very next request is refused (no cache window).
        #expect(try await world.b.run(["sync"]).status == 0)
        let revoke = try await world.a.run(["devices", "revoke", String(idB.prefix(8))])
        #expect(revoke.status == 0 && revoke.out.contains("revoked device B"), "\(revoke.err)")
        let refused = try await world.b.run(["sync"])
        #expect(refused.status == 1 && refused.err.contains("notty login again"), "B still syncs after its revocation: \(refused.out) \(refused.err)")
        #expect(try await world.a.run(["sync"]).status == 0, "A was signed out with B")
        let after = try await world.a.run(["devices"]).out
        #expect(!after.contains(" B "), "\(after)")
        let unknown = try await world.a.run(["devices", "revoke", "ffffffff"])
        #expect(unknown.status == 1 && unknown.err.split(separator: "\n").count == 1, "\(unknown.err)")
    }
}

@Suite("Removals by notty admin reach a running notty serve (SQLite)", .timeLimit(.minutes(5)), .serialized)
struct AdminRemovalTests {
    @Test("an app removed by notty admin (another process) is refused on its next publish, though the service had its token cached")
    func appRemovedBeside() async throws {
        let world = try await TwoDevices()
        let appToken = try await token(
            world.service.url,
            [
                "grant_type": "client_credentials", "client_id": world.service.clientId,
                "client_secret": world.service.clientSecret,
            ])
        func publish(_ id: String) async throws -> Int {
            try await ServiceClient.send(
                .POST, world.service.url + "/beta/me/notifications",
                headers: [("Authorization", "Bearer \(appToken)"), ("X-UNS-ID", world.uns), ("Content-Type", "application/json")],
                body: Data(#"{"appNotificationId":"\#(id)","payload":{"rawContent":"x"}}"#.utf8)
            ).status
        }
        #expect(try await publish("a") == 201)
        #expect(try await publish("b") == 201)  // the token, the app and the subscription are cached now
        let removed = try await world.service.admin.run(["admin", "app", "remove", "ci.example.com"], environment: world.service.environment)
        #expect(removed.status == 0, "\(removed.err)")
        #expect(try await publish("c") == 401, "a removed app's cached token still publishes")
    }
}

extension JSONValue {
    subscript(key: String) -> JSONValue? {
        if case .object(let object) = self { return object[key] }
        return nil
    }
}
