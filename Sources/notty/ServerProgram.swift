import ArgumentParser
import Foundation
import NottyCommandLine
import NottyCore
import NottyPOSIX

/// `notty-server`, the program with the service's code: `notty serve`, `notty admin` and the
/// demo's embedded service run it, so that every other command starts without the service's
/// libraries (Hummingbird, PostgresNIO, swift-crypto, Prometheus) loaded.
enum ServerProgram {
    /// `notty-server` in the folder of this `notty` (symbolic links followed), else on `PATH`.
    static func path() throws -> String {
        let me = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        let folder = (me as NSString).deletingLastPathComponent
        var candidates = [(folder as NSString).appendingPathComponent("notty-server")]
        for directory in (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":") where !directory.isEmpty {
            candidates.append(String(directory) + "/notty-server")
        }
        if let found = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) { return found }
        if let built = try buildInSourceTree(folder) { return built }
        throw CLIError(
            "notty serve, notty admin and notty demo run notty-server, which is neither in \(folder) nor on PATH: install it beside notty (README, Installing)"
        )
    }

    /// In a source checkout, `swift run notty demo` (or `serve`) builds `notty` alone, since
    /// nothing that `notty` links needs `notty-server`: build it beside `notty` once, with
    /// SwiftPM's output on stderr. Nil when `folder` is not SwiftPM's
    /// `PACKAGE/.build…/TRIPLE/debug|release`.
    private static func buildInSourceTree(_ folder: String) throws -> String? {
        let configuration = (folder as NSString).lastPathComponent
        let scratch = ((folder as NSString).deletingLastPathComponent as NSString).deletingLastPathComponent
        let package = (scratch as NSString).deletingLastPathComponent
        guard ["debug", "release"].contains(configuration), (scratch as NSString).lastPathComponent.hasPrefix(".build"),
            FileManager.default.fileExists(atPath: package + "/Package.swift")
        else { return nil }
        warn("building notty-server (the service's program) beside notty, once: a few minutes the first time")
        let ended: ChildProcess.Termination
        do {
            ended = try ChildProcess.start(
                "/usr/bin/env",
                ["swift", "build", "--package-path", package, "--scratch-path", scratch, "-c", configuration, "--product", "notty-server"],
                stdin: .inherit, stdout: .descriptor(STDERR_FILENO)
            ).wait()
        } catch {
            throw CLIError("cannot run swift build for notty-server: \(error)")
        }
        let built = (folder as NSString).appendingPathComponent("notty-server")
        guard ended.code == 0, FileManager.default.isExecutableFile(atPath: built) else {
            throw CLIError("swift build --product notty-server failed (its output is above)")
        }
        return built
    }

    /// Replaces this process with `notty-server arguments…` (same process id, signals, files).
    static func exec(_ arguments: [String]) -> Never {
        do {
            let path = try path()
            var argv: [UnsafeMutablePointer<CChar>?] = ([path] + arguments).map { strdup($0) } + [nil]
            execv(path, &argv)
            warn("cannot run \(path): \(String(cString: strerror(errno)))")
        } catch {
            warn("\(error)")
        }
        exit(1)
    }
}

/// `notty serve` as listed in `notty --help`; `Notty.main` hands it to `notty-server` before
/// parsing, so its options and help are the server's own.
struct Serve: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve", abstract: ServerCommand.serveAbstract,
        discussion: "Run by notty-server, installed beside notty: notty serve --help lists its settings.")
    @Argument(parsing: .captureForPassthrough) var arguments: [String] = []
    func run() throws { ServerProgram.exec(["serve"] + arguments) }
}

/// `notty admin` as listed in `notty --help` (see ``Serve``).
struct Admin: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "admin", abstract: ServerCommand.adminAbstract,
        discussion: "Run by notty-server, installed beside notty: notty admin --help lists its commands.")
    @Argument(parsing: .captureForPassthrough) var arguments: [String] = []
    func run() throws { ServerProgram.exec(["admin"] + arguments) }
}
