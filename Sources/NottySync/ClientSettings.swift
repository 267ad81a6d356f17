import Foundation
import NottyCore
import TOMLKit

/// A device's settings, from `config.toml` in its config directory (PROTOCOL.md §4 "Files"):
/// defaults a user sets once. A flag given on the command line wins over its setting, and
/// `NO_COLOR` turns colour off whatever `color` says. Every key is optional; a missing file
/// is all defaults. See ``template`` for the keys.
public struct ClientSettings: Sendable, Equatable {
    /// The view the notification center opens on, and `notty list`'s default `--view`.
    public var view: NotificationView = .unread
    /// `false` turns colour off in the notification center.
    public var color = true
    /// `notty poll`: seconds between polls (`--interval`).
    public var pollInterval: Int?
    /// `notty poll`: a shell command run for each new notification (`--exec`).
    public var pollExec: String?
    /// `notty poll`: a shell command run when a known notification changes state (`--on-change`).
    public var pollOnChange: String?
    /// `notty poll`: use the doorbell WebSocket (`--live`) unless `--once` is given.
    public var pollLive = false
    /// `notty poll`: desktop popups that follow the universal state (`--desktop`).
    public var pollDesktop = false
    /// `notty poll --desktop`: more popups than this of one app and group within 60 s become one
    /// (PROTOCOL.md §9's storms).
    public var pollStorm = 5

    public init() {}

    /// A commented file with every key, as `notty --help` and the README show it.
    public static let template = """
        # notty's settings: $XDG_CONFIG_HOME/notty/config.toml (or $NOTTY_HOME/).
        # Every key is optional; a flag on the command line wins over its setting.
        view = "unread"   # the center's first view, notty list's default
        color = true      # false: no colour (NO_COLOR=1 also turns it off)

        [poll]            # notty poll
        interval = 60     # polling: seconds between polls (at least the service's)
        exec = 'echo "$NOTTY_TITLE" >> ~/notty.log'  # per notification arriving in Unread
        on_change = 'echo "$NOTTY_ID $NOTTY_STATE" >> ~/notty.log'  # per change of state anywhere
        live = true       # the doorbell WebSocket, falling back to polling
        desktop = true    # desktop popups that close when handled anywhere
        storm = 5         # more popups of one app and group within 60 s become one
        """

    /// The settings in the file at `path`; all defaults when there is no such file.
    public static func load(path: String) throws(SettingsError) -> ClientSettings {
        guard FileManager.default.fileExists(atPath: path) else { return ClientSettings() }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw SettingsError("\(path): cannot be read; check its permissions")
        }
        guard let text = String(data: data, encoding: .utf8), !text.utf8.contains(0) else {
            throw SettingsError("\(path): is not UTF-8 text (or holds a NUL byte)")
        }
        return try ClientSettings(toml: text, file: path)
    }

    /// Reads settings from TOML text; `file` names it in errors.
    public init(toml: String, file: String) throws(SettingsError) {
        let table: TOMLTable
        do {
            table = try TOMLTable(string: toml)
        } catch let error as TOMLParseError {
            throw SettingsError("\(file): line \(error.source.begin.line), column \(error.source.begin.column): \(error.description)")
        } catch {
            throw SettingsError("\(file): \(error)")
        }
        let reader = Reader(file: file)
        for key in table.keys {
            let value = try reader.value(table, key)
            switch key {
            case "view":
                let name = try reader.string(value, key)
                guard let view = NotificationView(name: name) else {
                    throw SettingsError(
                        "\(file): view = \(String(reflecting: name)) is not a view: use unread, read, activated, dismissed, snoozed or all")
                }
                self.view = view
            case "color":
                color = try reader.bool(value, key)
            case "poll":
                guard let poll = value.table else { throw reader.wrongType(value, "poll", "a table ([poll])") }
                for pollKey in poll.keys {
                    let value = try reader.value(poll, pollKey)
                    switch pollKey {
                    case "interval":
                        guard let seconds = value.int, seconds >= 1 else {
                            throw reader.wrongType(value, "poll.interval", "a whole number of seconds, at least 1")
                        }
                        pollInterval = seconds
                    case "exec":
                        pollExec = try reader.string(value, "poll.exec")
                    case "on_change":
                        pollOnChange = try reader.string(value, "poll.on_change")
                    case "live":
                        pollLive = try reader.bool(value, "poll.live")
                    case "desktop":
                        pollDesktop = try reader.bool(value, "poll.desktop")
                    case "storm":
                        guard let count = value.int, count >= 1 else { throw reader.wrongType(value, "poll.storm", "a whole number, at least 1") }
                        pollStorm = count
                    default:
                        throw reader.unknown("poll.\(pollKey)")
                    }
                }
            default:
                throw reader.unknown(key)
            }
        }
    }

    /// Typed reads that name the file and the key when the value is of another kind.
    private struct Reader {
        let file: String

        /// TOMLKit lists keys as C strings: one with a NUL in it (`"a\u0000b"`, valid TOML)
        /// comes back cut short and finds nothing.
        func value(_ table: TOMLTable, _ key: String) throws(SettingsError) -> any TOMLValueConvertible {
            guard let value = table[key] else { throw SettingsError("\(file): a key holds a NUL character (\\u0000); remove it") }
            return value
        }

        func string(_ value: any TOMLValueConvertible, _ key: String) throws(SettingsError) -> String {
            guard let string = value.string else { throw wrongType(value, key, "a string") }
            return string
        }

        func bool(_ value: any TOMLValueConvertible, _ key: String) throws(SettingsError) -> Bool {
            guard let bool = value.bool else { throw wrongType(value, key, "true or false") }
            return bool
        }

        func wrongType(_ value: any TOMLValueConvertible, _ key: String, _ expected: String) -> SettingsError {
            let kind = "\(value.type)"
            let found = value.type == .int ? "\(value.int!)" : ("aeiou".contains(kind.first!) ? "an " : "a ") + kind
            return SettingsError("\(file): \(Self.shown(key)) must be \(expected), not \(found)")
        }

        func unknown(_ key: String) -> SettingsError {
            SettingsError(
                "\(file): unknown setting \(Self.shown(key)) (known: view, color, poll.interval, poll.exec, poll.on_change, poll.live, poll.desktop, poll.storm)"
            )
        }

        /// A key as written when it is plain, else quoted with escapes: the error stays one line.
        static func shown(_ key: String) -> String {
            key.unicodeScalars.allSatisfy { $0.value > 0x20 && $0.value != 0x7f && $0 != "\"" } ? key : String(reflecting: key)
        }
    }
}

/// A settings file notty cannot use: one line naming the file, the place and what to change.
public struct SettingsError: Error, CustomStringConvertible, Equatable {
    public let description: String
    public init(_ description: String) { self.description = description }
}
