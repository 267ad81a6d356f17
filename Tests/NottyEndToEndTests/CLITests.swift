import Foundation
import NottyPOSIX
import NottyTestSupport
import Testing

/// The real `notty` executable: `admin` commands and `serve` with TLS and a graceful stop.
@Suite("The notty command", .timeLimit(.minutes(5)), .serialized)
struct CLITests {
    let home = FileManager.default.temporaryDirectory.appendingPathComponent("notty-cli-\(UUID().uuidString)")

    func notty(_ arguments: [String], input: String? = nil) async throws -> NottyCLI.Result {
        try await NottyCLI(home: home).run(arguments, input: input)
    }

    @Test("admin user and app: add, duplicate, JSON, remove — with one clear line on errors")
    func admin() async throws {
        defer { try? FileManager.default.removeItem(at: home) }
        let added = try await notty(["admin", "user", "add", "alice"], input: "s3cret-pw\n")
        #expect(added.status == 0, "\(added.err)")
        #expect(added.out.hasPrefix("added user alice"))
        let duplicate = try await notty(["admin", "user", "add", "alice"], input: "s3cret-pw\n")
        #expect(duplicate.status == 1)
        #expect(duplicate.err == "notty: a user named alice already exists\n")
        let noPassword = try await notty(["admin", "user", "add", "bob"], input: "")
        #expect(noPassword.status == 1 && noPassword.err.hasPrefix("notty: no password given"))
        // A password shorter than 8 characters is refused, and nobody is added (PROTOCOL.md §15).
        let short = try await notty(["admin", "user", "add", "bob"], input: "s3cret\n")
        #expect(short.status == 1 && short.err == "notty: a password has at least 8 characters\n", "\(short.err)")
        #expect(try await notty(["admin", "user", "list"]).out.contains("bob") == false, "a refused user was added")
        let app = try await notty(["admin", "app", "add", "ci.example.com"])
        let lines = app.out.split(separator: "\n")
        #expect(lines.count == 2 && lines[0].hasPrefix("client_id: ") && lines[1].hasPrefix("client_secret: "))
        let json = try await notty(["admin", "app", "add", "mon.example.com", "--json"])
        let object = try JSONSerialization.jsonObject(with: Data(json.out.utf8)) as? [String: String]
        #expect(object?["client_id"] != nil && object?["client_secret"] != nil)
        #expect(try await notty(["admin", "app", "remove", "ci.example.com"]).status == 0)
        let gone = try await notty(["admin", "app", "remove", "ci.example.com"])
        #expect(gone.status == 1 && gone.err == "notty: no app with host name ci.example.com\n")
        #expect(try await notty(["admin", "user", "remove", "alice"]).status == 0)
        #expect(try await notty(["serve", "--tls-cert", "x"]).status != 0)
        let help = try await notty(["serve", "--help"])
        #expect(help.out.contains("--publish-rate") && help.out.contains("--tls-key"))
    }

    @Test("plain notty and notty tui (started without parsing) and notty tui with an option (parsed) fail alike without a terminal: one line, exit 1")
    func centerWithoutATerminal() async throws {
        defer { try? FileManager.default.removeItem(at: home) }
        for arguments in [[], ["tui"]] {
            let result = try await notty(arguments)
            #expect(result.status == 1 && result.out.isEmpty, "notty \(arguments): \(result.err)")
            #expect(result.err == "notty: the notification center needs a terminal; for scripts use notty list, notty poll or notty sync\n")
        }
        let option = try await notty(["tui", "--view"])
        #expect(option.status != 0 && option.err.hasPrefix("notty: ") && option.err.hasSuffix("(see notty tui --help)\n"), "\(option.err)")
        let help = try await notty(["tui", "--help"])
        #expect(help.status == 0 && help.out.contains("The terminal notification center"))
    }

    @Test("serve with --tls-cert/--tls-key answers HTTPS and stops cleanly on SIGTERM")
    func tlsAndGracefulStop() async throws {
        defer { try? FileManager.default.removeItem(at: home) }
        try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
        let cert = home.appendingPathComponent("cert.pem").path, key = home.appendingPathComponent("key.pem").path
        try await TLSTests.certificate("127.0.0.1", cert: cert, key: key)
        let log = home.appendingPathComponent("serve.log")
        #expect(FileManager.default.createFile(atPath: log.path, contents: nil))
        let process = try startLogged(
            Repository.nottyBinary.path, ["serve", "--port", "0", "--tls-cert", cert, "--tls-key", key], log: log,
            environment: ["NOTTY_HOME": home.path])
        defer { if process.isRunning { process.signal(SIGTERM) } }
        var port = ""
        _ = await eventually(timeout: .seconds(30)) {
            let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
            guard let range = text.range(of: #"url=https://127\.0\.0\.1:\d+"#, options: .regularExpression) else { return false }
            port = String(text[range].split(separator: ":").last!)
            return true
        }
        try #require(!port.isEmpty, "serve did not start: \((try? String(contentsOf: log, encoding: .utf8)) ?? "")")
        let health = try await Repository.run(["curl", "-sk", "https://127.0.0.1:\(port)/healthz"])
        #expect(health.output == #"{"status":"ok"}"#)
        let plain = try await Repository.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "http://127.0.0.1:\(port)/healthz"])
        #expect(plain.output != "200", "plain HTTP must not be served on a TLS port")
        #expect(await terminate(process), "serve did not stop within 10 s of SIGTERM")
        #expect(process.termination?.code == 0)
    }

    @Test("serve --config FILE: settings from TOML, a flag wins over the file; a bad key, value or file is one line naming the file")
    func configFile() async throws {
        defer { try? FileManager.default.removeItem(at: home) }
        try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
        let file = home.appendingPathComponent("server.toml")
        try """
        # settings of notty serve
        host = "127.0.0.1"
        public-url = "https://notty.example.com"
        max-title = 2048
        action-allow = ["10.0.0.0/8", "hooks.example.com"]
        ntfy-upstream = "https://ntfy.sh"
        """.write(to: file, atomically: true, encoding: .utf8)
        func tokenEndpoint(_ serve: ServeProcess) async throws -> String {
            let answer = try await Repository.run(["curl", "-s", "--max-time", "30", serve.url + "/common/v2.0/.well-known/openid-configuration"])
            let object = try JSONSerialization.jsonObject(with: Data(answer.output.utf8)) as? [String: Any]
            return object?["token_endpoint"] as? String ?? answer.output
        }
        // ServeProcess gives --port 0 on the command line: it wins over any port in the file.
        let fromFile = try await ServeProcess(directory: home.appendingPathComponent("a"), extraArguments: ["--config", file.path])
        #expect(try await tokenEndpoint(fromFile) == "https://notty.example.com/common/oauth2/v2.0/token")
        await fromFile.stop()
        let overridden = try await ServeProcess(
            directory: home.appendingPathComponent("b"),
            extraArguments: ["--config=\(file.path)", "--public-url", "https://other.example.org"])
        #expect(try await tokenEndpoint(overridden) == "https://other.example.org/common/oauth2/v2.0/token")
        await overridden.stop()

        func refused(_ text: String?, says: String) async throws {
            let bad = home.appendingPathComponent("bad.toml")
            if let text { try text.write(to: bad, atomically: true, encoding: .utf8) } else { try? FileManager.default.removeItem(at: bad) }
            let result = try await notty(["serve", "--config", bad.path])
            #expect(result.status == 1 && result.out.isEmpty, "\(String(describing: text)): \(result.err)")
            #expect(
                result.err.hasPrefix("notty: ") && result.err.contains(says) && result.err.split(separator: "\n").count == 1,
                "\(String(describing: text)): \(result.err)")
        }
        try await refused("colour = \"red\"\n", says: "bad.toml: colour is not a setting of notty serve")
        try await refused("port = 99999\n", says: "bad.toml: --port must be")
        try await refused("port = \n", says: "bad.toml:1:")
        try await refused("port = [1, 2]\n", says: "bad.toml: port must be a string or a number")
        try await refused("action-allow = [\"10.0.0.0/99\"]\n", says: "bad.toml: --outbound-allow 10.0.0.0/99: give a host name")
        // A pair of settings is checked as the command line is: the same line as for the flags.
        try "ntfy-upstream = \"https://ntfy.sh\"\n".write(to: home.appendingPathComponent("bad.toml"), atomically: true, encoding: .utf8)
        let unpaired = try await notty(["serve", "--config", home.appendingPathComponent("bad.toml").path])
        #expect(
            unpaired.status != 0 && unpaired.err.contains("--ntfy-upstream and --public-url go together")
                && unpaired.err.split(separator: "\n").count == 1, "\(unpaired.err)")
        try await refused(nil, says: "cannot read the settings file")
        let help = try await notty(["serve", "--help"])
        #expect(help.out.contains("--config <file>"), "\(help.out)")
    }

    @Test("notty hands serve and admin to notty-server beside it (same process); without it, one line says what to install")
    func serverProgram() async throws {
        defer { try? FileManager.default.removeItem(at: home) }
        let help = try await notty(["--help"])
        #expect(help.out.contains("serve") && help.out.contains("admin") && help.out.contains("demo"), "\(help.out)")
        let adminHelp = try await notty(["admin", "user", "--help"])
        #expect(adminHelp.status == 0 && adminHelp.out.contains("USAGE: notty admin user"), "\(adminHelp.out)\(adminHelp.err)")
        let helpServe = try await notty(["help", "serve"])
        #expect(helpServe.out.contains("--publish-rate"), "\(helpServe.out)")
        let bad = try await notty(["admin", "user", "add"])
        #expect(bad.status != 0 && bad.err.hasPrefix("notty: ") && bad.err.contains("(see notty admin user add --help)"), "\(bad.err)")
        // The process that serve runs is notty-server itself: its command line says so once
        // notty has exec'd it (looked for until then, 20 s at most; the bracket keeps the pattern
        // from matching this shell's own command line).
        let shell = try await Repository.run([
            "sh", "-c",
            "NOTTY_HOME=\(home.path) exec \(Repository.nottyBinary.path) serve --port 0 & pid=$!; "
                + "for i in $(seq 400); do grep -q 'notty-[s]erver' /proc/$pid/cmdline 2>/dev/null && break; sleep 0.05; done; tr '\\0' ' ' < /proc/$pid/cmdline; kill $pid; wait $pid",
        ])
        #expect(shell.output.contains("notty-server serve --port 0"), "\(shell.output)")

        // A notty copied alone, with no notty-server on PATH: one line, the rest of notty works.
        let bin = home.appendingPathComponent("alone")
        try FileManager.default.createDirectory(at: bin, withIntermediateDirectories: true)
        // Copied by cp: a file this test process opened for writing could be inherited by a
        // process another test spawns meanwhile, and running it would fail (ETXTBSY).
        #expect(try await Repository.run(["cp", Repository.nottyBinary.path, bin.appendingPathComponent("notty").path]).status == 0)
        let alone = NottyCLI(home: home, binary: bin.appendingPathComponent("notty"))
        for command in [["serve"], ["admin", "user", "add", "x"]] {
            let result = try await alone.run(command, environment: ["PATH": "/usr/bin:/bin"])
            #expect(result.status == 1 && result.out.isEmpty, "\(command)")
            #expect(
                result.err.hasPrefix("notty: notty serve, notty admin and notty demo run notty-server")
                    && result.err.contains("install it beside notty") && result.err.split(separator: "\n").count == 1, "\(result.err)")
        }
        let version = try await alone.run(["--version"], environment: ["PATH": "/usr/bin:/bin"])
        #expect(version.status == 0 && !version.out.isEmpty)
    }
}
