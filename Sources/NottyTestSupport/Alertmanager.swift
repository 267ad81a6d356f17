import Foundation
import NottyPOSIX

/// A real Prometheus Alertmanager (Debian `prometheus-alertmanager`) on 127.0.0.1 with one
/// webhook receiver, for tests: alerts are posted to its API (`amtool` or `POST /api/v2/alerts`)
/// and it delivers them as Alertmanager does in production. Grouping waits are short (1 s) so
/// tests do not wait for minutes. Stopped by ``stop()`` (and deinit).
// @unchecked: its processes are set while it starts and read when it stops, from one task
public final class TestAlertmanager: @unchecked Sendable {
    public static let binary = ["/usr/bin/prometheus-alertmanager", "/usr/bin/alertmanager"].first {
        FileManager.default.isExecutableFile(atPath: $0)
    }
    public static let available = binary != nil && FileManager.default.isExecutableFile(atPath: "/usr/bin/amtool")
    /// In CI the Alertmanager tests must run.
    public static let required = ProcessInfo.processInfo.environment["CI"] == "true"

    public let url: String
    public let directory: URL
    private var process: ChildProcess?

    /// Starts Alertmanager sending every alert group (grouped by `groupBy`) to `webhook`,
    /// resolved ones too.
    /// `port`: where it listens (a free one when nil), so that what is made before it (a
    /// webhook that silences through it) can name it.
    public convenience init(webhook: String, groupBy: [String] = ["alertname"], port chosen: Int? = nil) async throws {
        try await self.init(
            receiver: """
                webhook_configs:
                  - url: '\(webhook)'
                    send_resolved: true
                """, groupBy: groupBy, port: chosen)
    }

    /// Starts Alertmanager sending every alert group to the receiver whose configuration (its
    /// `*_configs`, as YAML at the receiver's level) is `receiver`: `pagerduty_configs` or
    /// `opsgenie_configs` aimed at `notty serve`, say.
    public init(receiver: String, groupBy: [String] = ["alertname"], port chosen: Int? = nil) async throws {
        guard let binary = Self.binary else {
            throw SupportError("prometheus-alertmanager is not installed (apt-get install -y prometheus-alertmanager)")
        }
        directory = Repository.temporaryDirectory("notty-alertmanager")
        let config = directory.appendingPathComponent("alertmanager.yml")
        try """
        route:
          receiver: notty
          group_by: [\(groupBy.map { "'\($0)'" }.joined(separator: ", "))]
          group_wait: 1s
          group_interval: 1s
          repeat_interval: 4h
        receivers:
          - name: notty
        \(receiver.split(separator: "\n").map { "    " + $0 }.joined(separator: "\n"))
        """.write(to: config, atomically: true, encoding: .utf8)
        let port = chosen ?? TestPostgres.freePort()
        url = "http://127.0.0.1:\(port)"
        process = try startLogged(
            binary,
            [
                "--config.file=\(config.path)", "--storage.path=\(directory.appendingPathComponent("data").path)",
                "--web.listen-address=127.0.0.1:\(port)", "--cluster.listen-address=", "--log.level=debug",
            ], log: directory.appendingPathComponent("alertmanager.log"), environment: [:])
        let ready = await eventually(timeout: .seconds(20)) { [url] in
            (try? await Repository.run(["curl", "-sf", "\(url)/-/ready"]))?.status == 0
        }
        guard ready else {
            let log = self.log
            stop()
            throw SupportError("alertmanager did not start:\n\(log)")
        }
    }

    /// Alertmanager's own log (its deliveries are logged at debug level).
    public var log: String { (try? String(contentsOf: directory.appendingPathComponent("alertmanager.log"), encoding: .utf8)) ?? "" }

    /// Posts alerts to `POST /api/v2/alerts` (a JSON array in Alertmanager's API format).
    public func post(_ alertsJSON: String) async throws {
        let file = directory.appendingPathComponent("alerts-\(UUID().uuidString).json")
        try alertsJSON.write(to: file, atomically: true, encoding: .utf8)
        let result = try await Repository.run([
            "curl", "-sS", "-f", "-H", "Content-Type: application/json", "--data-binary", "@\(file.path)", "\(url)/api/v2/alerts",
        ])
        guard result.status == 0 else { throw SupportError("posting alerts to Alertmanager: \(result.output)") }
    }

    /// `amtool` against this Alertmanager.
    @discardableResult
    public func amtool(_ arguments: [String]) async throws -> String {
        let result = try await Repository.run(["amtool", "--alertmanager.url=\(url)"] + arguments)
        guard result.status == 0 else { throw SupportError("amtool \(arguments.joined(separator: " ")): \(result.output)") }
        return result.output
    }

    public func stop() {
        if let process { terminate(process) }
        process = nil
        try? FileManager.default.removeItem(at: directory)
    }

    deinit { stop() }
}
