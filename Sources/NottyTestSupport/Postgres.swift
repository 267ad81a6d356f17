import Foundation

/// PostgreSQL for tests and benchmarks: `$NOTTY_TEST_POSTGRES_URL` when set, else one
/// throwaway cluster per process started by `.ci/postgres-server` on 127.0.0.1 (stopped and
/// removed when the process exits). Each test takes a fresh database of its own.
public enum TestPostgres {
    /// Set (to 1) by `.ci/run`: a missing PostgreSQL fails the tests instead of skipping them.
    public static var required: Bool { ProcessInfo.processInfo.environment["NOTTY_REQUIRE_POSTGRES"] == "1" }

    /// Why PostgreSQL cannot be used here, or `nil` when it can. Cheap: looks for the programs only.
    public static let unavailableReason: String? = {
        if let url = ProcessInfo.processInfo.environment["NOTTY_TEST_POSTGRES_URL"], !url.isEmpty { return nil }
        guard findProgram("initdb", extraDirectories: postgresBinDirectories) != nil else {
            return "PostgreSQL's initdb was not found (apt-get install -y postgresql, or set NOTTY_TEST_POSTGRES_URL)"
        }
        guard psqlPath != nil else {
            return "psql was not found (apt-get install -y postgresql-client, or set NOTTY_TEST_POSTGRES_URL)"
        }
        return nil
    }()

    /// Whether tests that need PostgreSQL run here: when it is available, and always when it is
    /// ``required`` (its absence then fails them). Otherwise says loudly, once, that they are skipped.
    public static let testsRun: Bool = {
        if unavailableReason == nil || required { return true }
        FileHandle.standardError.write(Data("⚠️  SKIPPING the PostgreSQL tests: \(unavailableReason ?? "")\n".utf8))
        return false
    }()

    private static var postgresBinDirectories: [String] {
        let root = "/usr/lib/postgresql"
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []
        return versions.sorted { $0.compare($1, options: .numeric) == .orderedDescending }.map { "\(root)/\($0)/bin" }
    }

    private static func findProgram(_ name: String, extraDirectories: [String]) -> String? {
        let path = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":").map(String.init)
        return (path + extraDirectories).map { "\($0)/\(name)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// The shared cluster, started (off the cooperative pool) by the first test that asks.
    private static let started = Task<String, any Error> {
        if let url = ProcessInfo.processInfo.environment["NOTTY_TEST_POSTGRES_URL"], !url.isEmpty { return url }
        return try await Cluster.start(fast: true).url
    }

    /// The server's URL (its `postgres` database), starting the cluster on first use.
    public static func serverURL() async throws -> String {
        try await started.value
    }

    /// A cluster of its own (for tests that stop and start PostgreSQL), removed when the process exits.
    public final class Cluster: Sendable {
        public let url: String
        public let directory: String

        /// Creates and starts a cluster, waiting for `initdb` and `pg_ctl` on a thread of their
        /// own. `fast`: without fsync (`POSTGRES_SERVER_FAST=1` of `.ci/postgres-server`), for
        /// tests that never kill PostgreSQL itself; benchmarks keep it durable.
        public static func start(fast: Bool = false) async throws -> Cluster {
            try await offThePool { try Cluster(fast: fast) }
        }

        /// Creates and starts a cluster, holding the calling thread (``start(fast:)`` in tests).
        public init(fast: Bool = false) throws {
            if let reason = unavailableReason { throw SupportError("PostgreSQL is not available: \(reason)") }
            let directory = "/tmp/notty-pg-\(getpid())-\(UUID().uuidString.prefix(6))"
            var lastError = ""
            for _ in 0..<3 {
                let (status, output) = try Repository.runWaiting(
                    [".ci/postgres-server", directory, String(freePort()), String(getpid())],
                    environment: fast ? ["POSTGRES_SERVER_FAST": "1"] : [:])
                if status == 0, let url = output.split(separator: "\n").last(where: { $0.hasPrefix("postgres://") }) {
                    self.url = String(url)
                    self.directory = directory
                    return
                }
                lastError = output
                try? FileManager.default.removeItem(atPath: directory)
            }
            throw SupportError(".ci/postgres-server failed: \(lastError)")
        }

        /// Stops the server (a fast shutdown: connections are cut).
        public func stop() async throws {
            let (status, output) = try await Repository.run([".ci/postgres-server", "--stop", directory])
            guard status == 0 else { throw SupportError("stopping PostgreSQL failed: \(output)") }
        }

        /// Starts it again on the same port.
        public func start() async throws {
            let (status, output) = try await Repository.run([".ci/postgres-server", "--start", directory])
            guard status == 0 else { throw SupportError("starting PostgreSQL failed: \(output)") }
        }
    }

    /// A new database on `server` (default: the shared one); its URL. Empty, or a copy of
    /// `template` (a database nobody is connected to).
    public static func createDatabase(on server: String? = nil, template: String? = nil) async throws -> String {
        let server = if let server { server } else { try await serverURL() }
        let name = "notty_\(UUID().uuidString.prefix(12).lowercased().replacingOccurrences(of: "-", with: ""))"
        try await psql(server, "CREATE DATABASE \(name)" + (template.map { " TEMPLATE \($0)" } ?? ""))
        return url(server, database: name)
    }

    /// The name of a database on the shared server that `prepare` was given (as a URL) once,
    /// for ``createDatabase(on:template:)``: tests that each need a migrated store copy it
    /// instead of each running every migration (a hundred migrations at once, on 2 cores
    /// beside the rest of the suite, took over a minute each).
    public static func template(_ prepare: @escaping @Sendable (String) async throws -> Void) -> @Sendable () async throws -> String {
        let made = Task<String, any Error> {
            let url = try await createDatabase()
            try await prepare(url)
            let name = URLComponents(string: url)?.path.trimmingCharacters(in: CharacterSet(charactersIn: "/")) ?? ""
            // A copy needs the template to itself: a connection `prepare` left behind is ended.
            try await psql(try await serverURL(), "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '\(name)'")
            return name
        }
        return { try await made.value }
    }

    /// Where `psql` is, looked up once.
    public static let psqlPath = findProgram("psql", extraDirectories: postgresBinDirectories)

    /// Runs SQL with `psql` (stops at the first error).
    public static func psql(_ url: String, _ sql: String) async throws {
        let psql = psqlPath ?? "psql"
        let (status, output) = try await Repository.run([psql, "-X", "-q", "-v", "ON_ERROR_STOP=1", url, "-c", sql])
        guard status == 0 else { throw SupportError("psql failed (\(sql)): \(output)") }
    }

    /// `url` with its database replaced.
    public static func url(_ url: String, database: String) -> String {
        guard var components = URLComponents(string: url) else { return url }
        components.path = "/\(database)"
        return components.string ?? url
    }

    /// A TCP port that was free a moment ago on 127.0.0.1.
    public static func freePort() -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
        }
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
