import Foundation

/// Opens a notification's link (PROTOCOL.md §7.1): `$BROWSER` when set (a program and its words,
/// split on spaces; the first of a `:`-separated list), else `xdg-open`, with the URL as one
/// argument and never through a shell. Answers nil when it started, else one line saying why not.
public enum LinkOpener {
    public static func open(_ url: String, environment: [String: String] = ProcessInfo.processInfo.environment) -> String? {
        var command: [String] = []
        if let browser = environment["BROWSER"], !browser.isEmpty {
            let first = browser.split(separator: ":").first.map(String.init) ?? browser
            command = first.split(separator: " ").map(String.init)
        } else {
            command = ["xdg-open"]
        }
        guard let program = command.first, let path = resolve(program, path: environment["PATH"] ?? "/usr/bin:/bin") else {
            return environment["BROWSER"] == nil
                ? "cannot open the link: no xdg-open (install xdg-utils) and no $BROWSER set"
                : "cannot open the link: $BROWSER (\(command.first ?? "")) is not a program on PATH"
        }
        do {
            // Reaped by its own thread when it ends; nothing waits for it.
            _ = try ChildProcess.start(path, Array(command.dropFirst()) + [url], stdin: .null, stdout: .null, stderr: .null)
        } catch {
            return "cannot open the link: \(error)"
        }
        return nil
    }

    private static func resolve(_ program: String, path: String) -> String? {
        if program.contains("/") { return FileManager.default.isExecutableFile(atPath: program) ? program : nil }
        for directory in path.split(separator: ":") {
            let candidate = "\(directory)/\(program)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }
}
