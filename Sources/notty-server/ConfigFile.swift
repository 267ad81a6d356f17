import ArgumentParser
import Foundation
import NottyCommandLine
import TOMLKit

/// `notty serve --config FILE`: the service's settings from a TOML file, one key per flag of
/// `notty serve` without its dashes (`port = 8787`, `public-url = "https://notty.example.com"`,
/// `tls-cert = "/etc/notty/cert.pem"`, `max-body = "128KiB"`). A flag given on the command line
/// wins over the file. The Debian package's system unit runs `notty serve --config
/// /etc/notty/server.toml`.
enum ServeConfigFile {
    /// `arguments` with `--config FILE` replaced by the file's settings as flags, placed before
    /// the command line's own (ArgumentParser keeps the last value of an option given twice).
    /// Arguments of any other command are answered as they are.
    ///
    /// Between the file's flags and the command line's go the `NOTTY_*` environment variables
    /// that name a flag of `notty serve` (``environmentFlags(_:)``): a flag wins over a variable,
    /// a variable over the file. `NOTTY_CONFIG` names the file when `--config` does not.
    static func expand(_ arguments: [String], environment: [String: String] = ProcessInfo.processInfo.environment) throws -> [String] {
        guard arguments.first == "serve" else { return arguments }
        var rest: [String] = []
        var file: String?
        var index = 1
        while index < arguments.count {
            let argument = arguments[index]
            if argument == "--" { rest += arguments[index...]; break }
            if argument == "--config" {
                guard index + 1 < arguments.count else { throw CLIError("--config needs a file: notty serve --config /etc/notty/server.toml") }
                file = arguments[index + 1]
                index += 2
                continue
            }
            if argument.hasPrefix("--config=") {
                file = String(argument.dropFirst("--config=".count))
            } else {
                rest.append(argument)
            }
            index += 1
        }
        if file == nil, let named = environment["NOTTY_CONFIG"], !named.isEmpty { file = named }
        return ["serve"] + (try file.map(flags(file:)) ?? []) + (try environmentFlags(environment)) + rest
    }

    /// The `NOTTY_*` variables that name a flag of `notty serve`, as flags: `NOTTY_PUBLIC_URL`
    /// is `--public-url`, `NOTTY_PORT` is `--port`; a repeatable flag takes a list separated by
    /// commas or spaces (`NOTTY_OUTBOUND_ALLOW=10.0.0.0/8,hooks.example.com`). Others are left
    /// alone: `NOTTY_HOME`, `NOTTY_POSTGRES_URL` (read where they are used), `NOTTY_CONFIG`.
    static func environmentFlags(_ environment: [String: String]) throws -> [String] {
        var flags: [String] = []
        for (name, value) in environment.sorted(by: { $0.key < $1.key }) where name.hasPrefix("NOTTY_") && !value.isEmpty {
            let key = name.dropFirst("NOTTY_".count).lowercased().replacingOccurrences(of: "_", with: "-")
            guard key != "config", key != "postgres-url", isFlag(key) else { continue }
            let values = repeatable.contains(key) ? value.split(whereSeparator: { $0 == "," || $0 == " " }).map(String.init) : [value]
            for value in values {
                try check(key: key, value: value, file: name)
                flags += ["--\(key)", value]
            }
        }
        return flags
    }

    /// Whether `--key VALUE` is an option of `notty serve`.
    private static func isFlag(_ key: String) -> Bool {
        do {
            _ = try Serve.parse(["--\(key)", "0"])
            return true
        } catch {
            let message = Serve.message(for: error)
            return !(message.contains("Unknown option") || message.contains("Missing value"))
        }
    }

    /// The settings of `file` as `notty serve` flags.
    static func flags(file: String) throws -> [String] {
        let text: String
        do {
            text = try String(contentsOfFile: file, encoding: .utf8)
        } catch {
            throw CLIError("cannot read the settings file \(file): \((error as NSError).localizedDescription)")
        }
        let table: TOMLTable
        do {
            table = try TOMLTable(string: text)
        } catch let error as TOMLParseError {
            throw CLIError("\(file):\(error.source.begin.line): \(error.description)")
        } catch {
            throw CLIError("\(file): not TOML: \(error)")
        }
        var flags: [String] = []
        for (key, setting) in table.sorted(by: { $0.0 < $1.0 }) {
            if key == "escalation" {
                flags += try escalationFlags(setting, file: file)
                continue
            }
            // A repeatable flag as an array: outbound-allow = ["10.0.0.0/8", "hooks.example.com"].
            if let array = setting.array, Self.repeatable.contains(key) {
                for item in array {
                    let value = try Self.text(of: item, key: key, file: file)
                    try check(key: key, value: value, file: file)
                    flags += ["--\(key)", value]
                }
                continue
            }
            let value = try Self.text(of: setting, key: key, file: file)
            guard key != "config" else { throw CLIError("\(file): config cannot name another settings file") }
            try check(key: key, value: value, file: file)
            flags += ["--\(key)", value]
        }
        return flags
    }

    /// The flags that may be given more than once, so an array in the file.
    static let repeatable: Set<String> = ["outbound-allow", "action-allow", "webpush-allow", "trusted-proxy"]

    /// `[escalation.commands]`: `NAME = "LINE"` a command, as `--escalation-command NAME=LINE`.
    private static func escalationFlags(_ setting: TOMLValueConvertible, file: String) throws -> [String] {
        guard let escalation = setting.table else {
            throw CLIError("\(file): escalation must be a table: [escalation.commands] with NAME = \"LINE\" lines")
        }
        var flags: [String] = []
        for (key, value) in escalation.sorted(by: { $0.0 < $1.0 }) {
            guard key == "commands", let commands = value.table else {
                throw CLIError("\(file): escalation.\(key) is not a setting (known: [escalation.commands], NAME = \"LINE\" a command)")
            }
            for (name, line) in commands.sorted(by: { $0.0 < $1.0 }) {
                guard let text = line.string else { throw CLIError("\(file): escalation.commands.\(name) must be a string: the command line") }
                let flag = "\(name)=\(text)"
                do {
                    _ = try Serve.commands([flag])
                } catch {
                    throw CLIError("\(file): \(Serve.message(for: error))")
                }
                flags += ["--escalation-command", flag]
            }
        }
        return flags
    }

    private static func text(of value: TOMLValueConvertible, key: String, file: String) throws -> String {
        if let string = value.string { return string }
        if let int = value.int { return String(int) }
        if let double = value.double { return String(double) }
        throw CLIError("\(file): \(key) must be a string or a number, as its flag takes (notty serve --help)")
    }

    /// Refuses a key that is not a flag of `notty serve`, naming the file (ArgumentParser would
    /// say only "Unknown option").
    private static func check(key: String, value: String, file: String) throws {
        do {
            _ = try Serve.parse(["--\(key)", value])
        } catch {
            let message = Serve.message(for: error)
            if message.contains("Unknown option") || message.contains("Missing value") {
                throw CLIError(
                    "\(file): \(key) is not a setting of notty serve (a key is a flag's name without --, e.g. port = 8787; see notty serve --help)")
            }
            // A bad value: the same sentence the flag would get, with the file named.
            if !message.contains("go together") { throw CLIError("\(file): \(message)") }
        }
    }
}
