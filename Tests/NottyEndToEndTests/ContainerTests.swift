import Foundation
import NottyCore
import NottyTestSupport
import Testing

/// podman, when it is installed (`.ci/run` installs it; these machines need runc and explicit
/// limits: crun fails on hybrid cgroups, and the hard limit is 20,000 descriptors).
enum Podman {
    static let path = ["/usr/bin/podman", "/usr/local/bin/podman"].first { FileManager.default.isExecutableFile(atPath: $0) }
    /// In CI the container test must run.
    static let required = ProcessInfo.processInfo.environment["CI"] == "true"
    static let runFlags = ["--runtime", "runc", "--ulimit", "nofile=16384:16384", "--ulimit", "nproc=4096:4096"]

    /// Runs `podman arguments…` to its end: status and stdout+stderr.
    @discardableResult
    static func run(_ arguments: [String], input: String = "") async throws -> (status: Int32, output: String) {
        guard let path else { throw SupportError("podman is not installed (apt-get install -y podman runc)") }
        let ended = try await offThePool {
            try runToEnd(
                path, arguments, environment: ProcessInfo.processInfo.environment, name: "podman \(arguments.prefix(2).joined(separator: " "))",
                input: Data(input.utf8), sameStream: true)
        }
        return (ended.status, String(decoding: ended.out, as: UTF8.self))
    }
}

@Suite(
    "The service's container image", .timeLimit(.minutes(10)), .serialized,
    .enabled(
        if: Podman.path != nil || Podman.required, "SKIPPED LOUDLY: podman is not installed (apt-get install -y podman runc); .ci/run installs it"))
struct ContainerTests {
    @Test(
        "scripts/image builds it; run with a volume and NOTTY_PORT, notty admin through exec makes a user and an app; a publish reaches a device; restarted, the history is in the volume; healthy; SIGTERM stops it itself"
    )
    func imageRunsAndKeepsItsVolume() async throws {
        let tag = "notty-test-\(UUID().uuidString.prefix(8).lowercased())"
        let (container, volume) = (tag, "\(tag)-data")
        let directory = Repository.temporaryDirectory("notty-container")
        defer {
            for arguments in [
                ["rm", "-f", "-t", "0", container], ["volume", "rm", "-f", volume], ["rmi", "-f", "\(tag):latest", "\(tag):\(nottyVersionForTests)"],
            ] {
                _ = try? runToEnd(
                    Podman.path!, arguments, environment: ProcessInfo.processInfo.environment, name: "podman clean-up", sameStream: true)
            }
            try? FileManager.default.removeItem(at: directory)
        }
        // The binaries of this test run (always this build; scripts/image's default is the
        // release build scripts/package makes, which CI has built before the tests).
        let built = try await Repository.run([
            "scripts/image", "--binaries", Repository.nottyServerBinary.deletingLastPathComponent().path, "--tag", tag,
        ])
        try #require(built.status == 0, "scripts/image failed:\n\(built.output)")
        if let size = built.output.split(separator: "\n").last(where: { $0.contains("MB") }) { print("scripts/image (this test's build): \(size)") }

        let port = TestPostgres.freePort()
        let url = "http://127.0.0.1:\(port)"
        func start() async throws {
            let started = try await Podman.run(
                ["run", "-d", "--name", container] + Podman.runFlags + [
                    "-p", "127.0.0.1:\(port):9797", "-v", "\(volume):/var/lib/notty", "-e", "NOTTY_PORT=9797", "\(tag):latest",
                ])
            try #require(started.status == 0, "podman run: \(started.output)")
        }
        func healthy() async -> Bool {
            await eventually(timeout: .seconds(60)) {
                (try? await offThePool {
                    try runToEnd("/usr/bin/curl", ["-fsS", "--max-time", "5", "\(url)/healthz"], environment: [:], name: "curl")
                })?.status == 0
            }
        }
        // The container's log, for a failed expectation's message (evaluated only then).
        func logs() -> String {
            (try? runToEnd(
                Podman.path!, ["logs", container], environment: ProcessInfo.processInfo.environment, name: "podman logs", sameStream: true))
                .map { String(decoding: $0.out, as: UTF8.self) } ?? ""
        }
        try await start()
        #expect(await healthy(), "no /healthz on \(url) (NOTTY_PORT=9797 inside):\n\(logs())")

        let user = try await Podman.run(["exec", "-i", container, "notty", "admin", "user", "add", "alice"], input: "s3cret-pw\n")
        #expect(user.status == 0 && user.output.contains("added user alice"), "\(user.output)")
        let app = try await Podman.run(["exec", container, "notty", "admin", "app", "add", "ci.example.com", "--json"])
        guard case .object(let credentials)? = JSONValue(jsonText: app.output.trimmingCharacters(in: .whitespacesAndNewlines)),
            case .string(let clientId)? = credentials["client_id"], case .string(let secret)? = credentials["client_secret"]
        else {
            Issue.record("notty admin app add --json: \(app.output)")
            return
        }
        let device = NottyCLI(home: directory.appendingPathComponent("a"))
        try await device.login(url, device: "A")
        let uns = try await device.run(["subscribe", "--app", "ci.example.com"]).out.trimmingCharacters(in: .whitespacesAndNewlines)
        let published = try await device.run([
            "publish", "--server", url, "--client-id", clientId, "--client-secret=\(secret)", "--uns-id", uns,
            "--title", "Backup of db-1 failed", "--priority", "high",
        ])
        try #require(published.status == 0, "publish: \(published.err)")
        #expect(try await device.run(["sync"]).status == 0)
        #expect(try await device.run(["list", "--json"]).out.contains("Backup of db-1 failed"))

        let health = try await Podman.run(["healthcheck", "run", container])
        #expect(health.status == 0, "podman healthcheck run (notty-server healthcheck on NOTTY_PORT): \(health.output)")

        // Restarted: the same volume, the same history, the same user.
        #expect(try await Podman.run(["stop", "-t", "10", container]).status == 0)
        #expect(try await Podman.run(["rm", container]).status == 0)
        try await start()
        #expect(await healthy(), "no /healthz after the restart:\n\(logs())")
        let other = NottyCLI(home: directory.appendingPathComponent("b"))
        try await other.login(url, device: "B")
        #expect(try await other.run(["sync"]).status == 0)
        #expect(try await other.run(["list", "--json"]).out.contains("Backup of db-1 failed"), "the history did not survive the restart")

        // SIGTERM: notty-server (PID 1) stops by itself, exit status 0, long before podman's
        // 10 s would end in SIGKILL (status 137).
        let stopping = ContinuousClock.now
        #expect(try await Podman.run(["stop", "-t", "10", container]).status == 0)
        let took = ContinuousClock.now - stopping
        let status = try await Podman.run(["inspect", "--format", "{{.State.ExitCode}}", container]).output.trimmingCharacters(
            in: .whitespacesAndNewlines)
        print("podman stop (SIGTERM) of the notty container: \(took), exit status \(status)")
        #expect(status == "0", "notty-server did not stop on SIGTERM by itself (exit status \(status)):\n\(logs())")
    }
}

/// The version scripts/image tags the image with.
private let nottyVersionForTests: String = {
    let text = (try? String(contentsOf: Repository.root.appendingPathComponent("Sources/NottyCommandLine/CLI.swift"), encoding: .utf8)) ?? ""
    return text.firstMatch(of: /public let nottyVersion = "(.*)"/).map { String($0.1) } ?? "latest"
}()
