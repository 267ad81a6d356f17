import Foundation
import NottySync
import NottyTestSupport
import Testing

/// What README and GUIDE tell a user to type is what the programs take (issue 68): each config
/// key README names is one `config.toml` knows, and each `notty …` line of their code blocks
/// names commands and flags the real command tree has. A renamed key or flag fails here, not a
/// user who copied it.
@Suite("README and GUIDE say what the programs take", .timeLimit(.minutes(5)))
struct DocumentationTests {
    static let documents = ["README.md", "docs/GUIDE.md"]

    static func text(_ path: String) throws -> String {
        try String(contentsOf: Repository.root.appendingPathComponent(path), encoding: .utf8)
    }

    @Test("every config.toml key README names is one the settings reader knows (poll.on_change, not on-change)")
    func configKeys() throws {
        let readme = try Self.text("README.md")
        let start = try #require(readme.range(of: "`config.toml` takes"), "README no longer says what config.toml takes")
        let sentence = readme[start.upperBound...].prefix { $0 != ";" }
        let named = sentence.matches(of: /`([^`]+)`/).map { String($0.output.1) }
        #expect(named.contains("[poll]") && named.count >= 6, "\(named)")
        for key in named where key != "[poll]" {
            let inPoll = !["view", "color"].contains(key)
            // A value of the wrong type is fine here: only "unknown setting" means the key is not one.
            let toml = inPoll ? "[poll]\n\(key) = 0\n" : "\(key) = 0\n"
            do {
                _ = try ClientSettings(toml: toml, file: "config.toml")
            } catch {
                #expect(!error.description.contains("unknown setting"), "README names \(key): \(error.description)")
            }
        }
        // And every key the reader knows is named.
        for known in ["view", "color", "interval", "exec", "on_change", "live", "desktop", "storm"] {
            #expect(named.contains(known), "README's list of config.toml keys leaves out \(known)")
        }
    }

    /// The `notty …` commands of the code blocks of `text`: each line (and each part of a pipe)
    /// that runs `notty` (`swift run notty`, after `sudo -u notty VAR=…`), without its comment.
    static func commands(in text: String) -> [String] {
        var found: [String] = []
        var inBlock = false
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("```") {
                inBlock.toggle()
                continue
            }
            guard inBlock else { continue }
            let code = line.range(of: " # ").map { line[..<$0.lowerBound] } ?? line[...]
            for part in code.split(separator: "|") {
                var words = part.split(separator: " ").map(String.init)
                while let first = words.first, first == "swift" || first == "run" || first == "sudo" || first == "-u" || first.contains("=") {
                    words.removeFirst()
                    if first == "-u" { words.removeFirst() }  // sudo -u USER
                }
                guard words.first == "notty", words.count >= 1 else { continue }
                found.append(words.joined(separator: " "))
            }
        }
        return found
    }

    @Test("every notty line of README's and GUIDE's code blocks names commands and flags the programs have")
    func commandLines() async throws {
        let cli = NottyCLI(home: Repository.temporaryDirectory("notty-docs"))
        defer { try? FileManager.default.removeItem(at: cli.home) }
        var helps: [[String]: String] = [:]
        func help(_ path: [String]) async throws -> String? {
            if let known = helps[path] { return known }
            let answer = try await cli.run(path + ["--help"])
            let text = answer.status == 0 ? answer.out : nil
            helps[path] = text ?? ""
            return text
        }
        var checked = 0
        for document in Self.documents {
            for line in Self.commands(in: try Self.text(document)) {
                let words = Array(line.split(separator: " ").dropFirst().map(String.init))
                // The deepest command path whose help lists the next word as a subcommand.
                var path: [String] = []
                for word in words where !word.hasPrefix("-") {
                    guard let text = try await help(path), Self.subcommands(of: text).contains(word) else { break }
                    path.append(word)
                }
                if let first = words.first, !first.hasPrefix("-") {
                    #expect(!path.isEmpty, "\(document): `\(line)`: notty has no command \(first)")
                }
                let text = try #require(try await help(path), "\(document): notty \(path.joined(separator: " ")) --help fails")
                for word in words where word.hasPrefix("--") || word.hasPrefix("[--") {
                    let flag = String(word.drop { $0 == "[" }.prefix { $0 != "=" && $0 != "]" })
                    #expect(text.contains(flag), "\(document): `\(line)`: notty \(path.joined(separator: " ")) has no \(flag)")
                }
                checked += 1
            }
        }
        #expect(checked >= 40, "only \(checked) notty lines were found in README and GUIDE")
    }

    /// The names under `SUBCOMMANDS:` of a help text.
    static func subcommands(of help: String) -> Set<String> {
        guard let start = help.range(of: "SUBCOMMANDS:") else { return [] }
        var names: Set<String> = []
        for line in help[start.upperBound...].split(separator: "\n") {
            guard line.hasPrefix("  ") else { break }
            if let name = line.split(separator: " ").first { names.insert(String(name)) }
        }
        return names
    }
}
