import Foundation
import NottyCore
import NottyPOSIX
import NottyStore
import NottyTestSupport

/// `notty-bench start`: what a user pays each time `notty` starts, and what it weighs, in one
/// run, beside a static "hello" built the same way (`scripts/start-table` builds both, strips
/// them and runs this): `notty --version` and `notty count --format tmux` (whole processes,
/// medians of 30), the center's first full frame (120×40, median of 5), the initial sync of
/// the history (`notty login`, whole process, median of 3), and the sizes of the binaries,
/// the .deb and the container image when they are given. `NOTTY_BENCH_KEEP_HOME=DIR` keeps a
/// copy of the device's home (its store as `notty login` left it) in DIR.
struct StartBench {
    let service: ServiceBench
    let count: Int
    let notty: URL
    let hello: URL?
    let server: URL?
    let deb: URL?
    let image: String?

    func run() async throws {
        try await service.publishHistory(count)
        try await service.spreadStates()
        // The initial sync: the whole `notty login` process into an empty store (3 times; the
        // last store stays, as a user's would, for the rows below).
        var syncs: [Double] = []
        var home = service.directory
        for round in 0..<3 {
            home = service.directory.appendingPathComponent("start-\(round)")
            let cli = NottyCLI(home: home, binary: notty)
            syncs.append(try milliseconds { try cli.loginWaiting(service.base, device: "start-\(round)") })
            if round < 2 { try? FileManager.default.removeItem(at: home) }
        }
        if let keep = ProcessInfo.processInfo.environment["NOTTY_BENCH_KEEP_HOME"] {
            try? FileManager.default.removeItem(atPath: keep)
            try FileManager.default.copyItem(atPath: home.path, toPath: keep)
            print("the device's home (store, credentials) copied to \(keep)")
        }
        let environment = ProcessInfo.processInfo.environment.merging(["NOTTY_HOME": home.path]) { $1 }
        let (counts, newest) = try await LocalStore.open(path: home.appendingPathComponent("store.sqlite").path).perform {
            (try $0.counts(), try $0.window(view: .unread, limit: 1).first?.payload.visualContent?.title)
        }
        guard let newest else { throw SupportError("no unread notification to look for") }

        let version = try (0..<30).map { _ in try wallTime(notty.path, ["--version"], environment: environment) }
        let hellos = try hello.map { hello in try (0..<30).map { _ in try wallTime(hello.path, [], environment: environment) } }
        let badge = try (0..<30).map { _ in try wallTime(notty.path, ["count", "--format", "tmux"], environment: environment) }
        let frames = try (0..<5).map { _ in try firstFrame(notty, home: home, newest: newest) }

        func ms(_ values: [Double]) -> String { String(format: "%.1f ms", percentile(values, 50)) }
        func mb(_ url: URL?) -> String {
            guard let url, let size = try? FileManager.default.attributesOfItem(atPath: url.path)[.size] as? Int else { return "—" }
            return String(format: "%.1f MB", Double(size) / 1_000_000)
        }
        var imageSize = "—"
        if let image, let run = try? Repository.runWaiting(["podman", "image", "inspect", "--format", "{{.Size}}", image]), run.status == 0,
            let bytes = Double(run.output.trimmingCharacters(in: .whitespacesAndNewlines))
        {
            imageSize = String(format: "%.1f MB", bytes / 1_000_000)
        }
        let rows: [(String, String, String, String)] = [
            ("notty --version, whole process (median of 30)", ms(version), hellos.map(ms) ?? "—", "≤ 3 ms"),
            ("notty count --format tmux, whole process (median of 30)", ms(badge), "—", "≤ 5 ms"),
            ("the center's first full frame, 120×40 (median of 5)", ms(frames), "—", "≤ 15 ms"),
            ("initial sync: notty login, whole process (median of 3)", String(format: "%.2f s", percentile(syncs, 50) / 1000), "—", "≤ 2 s"),
            ("notty", mb(notty), mb(hello), "≤ 25 MB"),
            ("notty-server", mb(server), "—", "≤ 40 MB"),
            ("the .deb", mb(deb), "—", "≤ 15 MB"),
            ("the container image", imageSize, "—", "≤ 45 MB"),
        ]
        print("")
        print(
            "notty-bench start — \(notty.path); \(counts.all) notifications, \(counts.unread) Unread; \(ProcessInfo.processInfo.activeProcessorCount) cores"
        )
        print(
            "  initial syncs: \(syncs.map { String(format: "%.2f", $0 / 1000) }.joined(separator: ", ")) s; frames: \(frames.map { String(format: "%.1f", $0) }.joined(separator: ", ")) ms"
        )
        let width = rows.map(\.0.count).max() ?? 0
        print("  " + "what".padding(toLength: width, withPad: " ", startingAt: 0) + "  this build   a static hello   target")
        for (what, figure, hello, target) in rows {
            print(
                "  " + what.padding(toLength: width, withPad: " ", startingAt: 0) + "  " + figure.padding(toLength: 11, withPad: " ", startingAt: 0)
                    + "  " + hello.padding(toLength: 15, withPad: " ", startingAt: 0) + "  " + target)
        }
    }
}
