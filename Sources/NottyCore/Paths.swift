import Foundation

/// Where a device keeps its files (PROTOCOL.md §4 "Files"): everything in `$NOTTY_HOME` when set,
/// else XDG: settings and credentials in `$XDG_CONFIG_HOME/notty/`, the store in
/// `$XDG_DATA_HOME/notty/`.
public struct ClientPaths: Sendable, Equatable {
    public var configDirectory: String
    public var dataDirectory: String

    public init(configDirectory: String, dataDirectory: String) {
        self.configDirectory = configDirectory
        self.dataDirectory = dataDirectory
    }

    public init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        func value(_ key: String) -> String? { environment[key].flatMap { $0.isEmpty ? nil : $0 } }
        if let home = value("NOTTY_HOME") {
            self.init(configDirectory: home, dataDirectory: home)
            return
        }
        // $HOME first: NSHomeDirectory() reads the password database and ignores it.
        let home = value("HOME") ?? NSHomeDirectory()
        self.init(
            configDirectory: (value("XDG_CONFIG_HOME") ?? home + "/.config") + "/notty",
            dataDirectory: (value("XDG_DATA_HOME") ?? home + "/.local/share") + "/notty")
    }

    public var settings: String { configDirectory + "/config.toml" }
    public var credentials: String { configDirectory + "/credentials.json" }
    public var store: String { dataDirectory + "/store.sqlite" }
    public var serverDatabase: String { dataDirectory + "/server.sqlite" }
}
