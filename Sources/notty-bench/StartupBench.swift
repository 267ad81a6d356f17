import Foundation
import NottyCore
import NottyPOSIX
import NottyStore
import NottyTestSupport

/// Start-up and memory of the device's program (issues 20 and 16) for one build of `notty` or
/// two alternated round by round (`--baseline PATH`): `notty --version` (wall time and maximum
/// resident memory, 20 runs a round; /usr/bin/time from Debian's `time`), the center's first full frame with the whole history and
/// its resident memory then, and the resident memory of `notty poll --live --desktop` once its
/// first popup is up (on a real session bus with dunst when they are installed, else
/// `notty poll --live`).
struct StartupBench {
    let service: ServiceBench
    let device: SyncedDevice
    let builds: [(name: String, binary: URL)]
    let rounds: Int

    func run() async throws {
        let desktop = TestDesktop.available ? try await TestDesktop() : nil
        defer { desktop?.stop() }
        if desktop == nil { print("startup: no dbus-daemon, Xvfb or dunst: poll runs without --desktop") }
        let store = try await LocalStore.open(path: device.storePath)
        guard let newest = try (await store.perform { try $0.window(view: .unread, limit: 1) }).first?.payload.visualContent?.title else {
            throw SupportError("no unread notification to look for")
        }
        var figures: [String: [String: [Double]]] = [:]
        func add(_ build: String, _ what: String, _ value: Double) { figures[build, default: [:]][what, default: []].append(value) }

        for round in 0..<rounds {
            for build in builds {
                for _ in 0..<20 {
                    let (ms, resident) = try runToEnd(build.binary.path, ["--version"])
                    add(build.name, "version ms", ms)
                    add(build.name, "version MiB", Double(resident) / 1_048_576)
                }

                let frame = try firstFrame(build.binary, home: device.home, newest: newest) { center in
                    add(build.name, "frame MiB", Double(memory(pid: center).resident) / 1_048_576)
                }
                add(build.name, "frame ms", frame)

                let cli = NottyCLI(home: device.home, binary: build.binary)
                let log = device.home.appendingPathComponent("startup-poll.log")
                let poll = try cli.start(
                    ["poll", "--live"] + (desktop == nil ? [] : ["--desktop"]), log: log, environment: desktop?.environment ?? [:])
                defer {
                    poll.signal(SIGTERM)
                    poll.wait()
                }
                let (published, text) = try await service.request(
                    .POST, "/beta/me/notifications", token: service.appToken,
                    body: #"{"appNotificationId":"startup-\#(round)-\#(build.name)","payload":{"visualContent":{"title":"Start-up \#(round)"}}}"#,
                    headers: [("X-UNS-ID", service.unsId)])
                guard published == 201, case .object(let object)? = JSONValue(jsonText: text), case .string(let id)? = object["id"] else {
                    throw SupportError("publish answered \(published): \(text.prefix(200))")
                }
                let deadline = ContinuousClock.now + .seconds(20)
                while ContinuousClock.now < deadline {
                    if desktop == nil
                        ? (try (await store.perform { try $0.notification(id: id) }) != nil)
                        : (try (await store.perform { try $0.popups() }).contains { $0.notificationId == id })
                    {
                        break
                    }
                    try await Task.sleep(for: .milliseconds(20))
                }
                try await Task.sleep(for: .milliseconds(500))
                add(build.name, "poll MiB", Double(memory(pid: poll.pid).resident) / 1_048_576)
            }
        }

        print("")
        print("start-up and memory, \(rounds) round(s) alternated, \(device.count) notifications in the store:")
        for build in builds {
            let f = figures[build.name] ?? [:]
            func median(_ key: String) -> Double { percentile(f[key] ?? [], 50) }
            func list(_ key: String) -> String { (f[key] ?? []).map { String(format: "%.1f", $0) }.joined(separator: ", ") }
            print(
                String(
                    format:
                        "  %@ (%@): notty --version median %.2f ms, max resident %.1f MiB; first full frame %@ ms, resident %@ MiB; poll --live%@ resident %@ MiB",
                    build.name, build.binary.path, median("version ms"), median("version MiB"), list("frame ms"), list("frame MiB"),
                    desktop == nil ? "" : " --desktop", list("poll MiB")))
        }
    }

    /// Runs a command to its end with its output thrown away: its wall time, and its maximum
    /// resident memory as GNU time reports it (the `wait4` of a child spawned from here would
    /// count this process's memory too: `posix_spawn` runs the child in it until `exec`).
    private func runToEnd(_ path: String, _ arguments: [String]) throws -> (milliseconds: Double, resident: Int) {
        let elapsed = try wallTime(path, arguments)
        let report = device.home.appendingPathComponent("time.txt").path
        try wallTime("/usr/bin/time", ["-f", "%M", "-o", report, path] + arguments)
        let kib = (try? String(contentsOfFile: report, encoding: .utf8)).flatMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) } ?? 0
        return (elapsed, kib * 1024)
    }
}
