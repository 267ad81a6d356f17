import Foundation
import NottyCore
import NottyPOSIX
import NottyService
import NottyServicePostgres
import NottyServiceSQLite
import NottyTestSupport

/// `notty-bench instances`: SQLite (one instance) against PostgreSQL (one and two instances
/// sharing one database), in one run, two ways:
///
/// - **many users**: 1,000 users, each subscribed to the app, and 64 clients publishing to
///   users picked at random, while a device of another user measures publish → doorbell
///   (across instances when there are two); with the CPU each publish cost the service and
///   PostgreSQL;
/// - **one user** (the hot path of earlier rounds): 64 clients publishing to one user, then
///   publish → doorbell one at a time with no other load.
///
/// PostgreSQL is `--postgres URL` (an empty database is created on that server), else a
/// throwaway cluster started with `.ci/postgres-server` (fsync on, synchronous commit).
struct InstancesBench {
    var quick: Bool
    var postgresServer: String?
    var users = 1000
    /// Rounds of the many-user load on each backend (alternating); the tables show the medians.
    var roundCount = 3

    /// The round whose CPU per publish (service and PostgreSQL together) is the median.
    static func median(_ rows: [Row]) -> Row {
        func perPublish(_ row: Row) -> Double { (row.serviceCPU + (row.postgresCPU ?? 0)) / Double(max(1, row.throughput.ok + row.bell.count)) }
        let sorted = rows.sorted { perPublish($0) < perPublish($1) }
        var row = sorted[sorted.count / 2]
        if rows.count > 1 { row.name += " (median of \(rows.count))" }
        return row
    }

    struct Row {
        var name: String
        var throughput: HTTPLoad.Result
        var bell: [Double]
        var bellKind: String
        /// CPU seconds of the `notty serve` processes and of PostgreSQL's, over the run.
        var serviceCPU = 0.0
        var postgresCPU: Double?
    }

    func run() async throws {
        let seconds = quick ? 3.0 : 8.0
        let bells = quick ? 200 : 1000
        print(
            "notty-bench instances — real `notty serve` processes on 127.0.0.1, \(ProcessInfo.processInfo.activeProcessorCount) cores; 64 concurrent publishing clients for \(Int(seconds)) s each"
        )
        var many: [Row] = [], one: [Row] = [], rounds: [[Row]] = []

        // Both backends are up at once, and the many-user load alternates between them for
        // `rounds` rounds: on a shared machine, CPU per publish varies by a tenth or more from
        // one minute to the next, so each backend's figure is the median of its rounds, taken
        // side by side.
        let sqlite = try await ServiceBench.start()
        // A throwaway cluster lives until this process exits.
        let server = if let postgresServer { postgresServer } else { try await TestPostgres.Cluster.start().url }
        let database = try await TestPostgres.createDatabase(on: server)
        let first = try await ServiceBench.start(environment: ["NOTTY_POSTGRES_URL": database])
        let twoDirectory = Repository.temporaryDirectory("notty-bench-two")
        var two: ServeProcess?
        do {
            let sqliteSubscriptions = try await addUsers(to: sqlite)
            let postgresSubscriptions = try await addUsers(to: first)
            _ = try await sqlite.throughput(seconds: 1, subscriptions: sqliteSubscriptions, tag: "w")  // warm-up, not counted
            _ = try await first.throughput(seconds: 1, subscriptions: postgresSubscriptions, tag: "w")
            for round in 1...max(1, roundCount) {
                rounds.append([
                    try await underLoad(
                        sqlite, name: "SQLite, 1 instance", servers: [sqlite.base], subscriptions: sqliteSubscriptions,
                        devicePort: sqlite.port, bellKind: "same instance", seconds: seconds, postgres: false, tag: "m\(round)-"),
                    try await underLoad(
                        first, name: "PostgreSQL, 1 instance", servers: [first.base], subscriptions: postgresSubscriptions,
                        devicePort: first.port, bellKind: "same instance", seconds: seconds, postgres: true, tag: "p\(round)-"),
                ])
            }
            many = (0..<2).map { column in Self.median(rounds.map { $0[column] }) }

            let burst = try await sqlite.throughput(seconds: seconds, tag: "s")
            let bell = try await sqlite.doorbellLatencies(count: bells, tag: "sbell")
            one.append(Row(name: "SQLite, 1 instance", throughput: burst, bell: bell, bellKind: "same instance"))

            let postgresBurst = try await first.throughput(seconds: seconds, tag: "ps")
            let postgresBell = try await first.doorbellLatencies(count: bells, tag: "pbell")
            one.append(Row(name: "PostgreSQL, 1 instance", throughput: postgresBurst, bell: postgresBell, bellKind: "same instance"))

            let second = try await ServeProcess(sharingStorageOf: first.serve, directory: twoDirectory, extraArguments: ServiceBench.unlimited)
            two = second
            many.append(
                try await underLoad(
                    first, name: "PostgreSQL, 2 instances", servers: [first.base, second.url], subscriptions: postgresSubscriptions,
                    devicePort: second.port, bellKind: "across instances", seconds: seconds, postgres: true,
                    otherService: second.process?.pid, tag: "q"))
            let shared = try await first.throughput(seconds: seconds, servers: [first.base, second.url], tag: "qs")
            let across = try await first.doorbellLatencies(count: bells, publishVia: first.base, devicePort: second.port, tag: "xbell")
            one.append(Row(name: "PostgreSQL, 2 instances", throughput: shared, bell: across, bellKind: "across instances"))
        } catch {
            print("benchmark failed: \(error)")
        }
        await sqlite.stop()
        await two?.stop()
        try? FileManager.default.removeItem(at: twoDirectory)
        await first.stop()

        if !rounds.isEmpty {
            print("")
            print("CPU per publish in each round (many users; SQLite and PostgreSQL alternating):")
            for (index, round) in rounds.enumerated() {
                let figures = round.map { row in
                    let published = Double(row.throughput.ok + row.bell.count)
                    let postgres = row.postgresCPU.map { String(format: " + PostgreSQL %.0f µs", $0 / published * 1e6) } ?? ""
                    return String(format: "%@ %.0f/s, service %.0f µs%@", row.name, row.throughput.rate, row.serviceCPU / published * 1e6, postgres)
                }
                print("  round \(index + 1): " + figures.joined(separator: "; "))
            }
            let ratios = rounds.map { round in
                (round[1].serviceCPU + (round[1].postgresCPU ?? 0)) / Double(round[1].throughput.ok + round[1].bell.count)
                    / (round[0].serviceCPU / Double(round[0].throughput.ok + round[0].bell.count))
            }
            print(
                String(
                    format: "  PostgreSQL (service + PostgreSQL) ÷ SQLite, CPU per publish: %@; median %.2f×",
                    ratios.map { String(format: "%.2f×", $0) }.joined(separator: ", "), ratios.sorted()[ratios.count / 2]))
        }
        print("")
        print("Many users: \(users) users, 64 clients publishing to users at random for \(Int(seconds)) s; publish → doorbell measured meanwhile")
        print("")
        print(
            "| storage | publishes/s | publish p50 | publish p99 | publish → doorbell p50 | p99 | doorbell | CPU per publish: service | PostgreSQL |")
        print("|---|---|---|---|---|---|---|---|---|")
        for row in many {
            let published = Double(row.throughput.ok + row.bell.count)
            let postgres = row.postgresCPU.map { String(format: "%.0f µs", $0 / published * 1e6) } ?? "—"
            print(
                String(
                    format: "| %@ | %.0f (%d in %.1f s, %d non-201) | %.2f ms | %.2f ms | %.2f ms | %.2f ms | %@ (%d) | %.0f µs | %@ |",
                    row.name, row.throughput.rate, row.throughput.ok, row.throughput.elapsed, row.throughput.other,
                    percentile(row.throughput.latencies, 50), percentile(row.throughput.latencies, 99),
                    percentile(row.bell, 50), percentile(row.bell, 99), row.bellKind, row.bell.count,
                    row.serviceCPU / published * 1e6, postgres))
        }
        print("")
        print("One user: 64 clients publishing to one user for \(Int(seconds)) s; then publish → doorbell one at a time, no other load")
        print("")
        print("| storage | publishes/s | publish p50 | publish p99 | publish → doorbell p50 | p99 | doorbell |")
        print("|---|---|---|---|---|---|---|")
        for row in one {
            print(
                String(
                    format: "| %@ | %.0f (%d in %.1f s, %d non-201) | %.2f ms | %.2f ms | %.2f ms | %.2f ms | %@ |",
                    row.name, row.throughput.rate, row.throughput.ok, row.throughput.elapsed, row.throughput.other,
                    percentile(row.throughput.latencies, 50), percentile(row.throughput.latencies, 99),
                    percentile(row.bell, 50), percentile(row.bell, 99), row.bellKind))
        }
    }

    /// 64 clients publishing to `subscriptions` at random through `servers` for `seconds`, while
    /// the bench's own user's device on `devicePort` times publish → doorbell, one at a time,
    /// published through the first server. CPU is read from /proc before and after.
    func underLoad(
        _ bench: ServiceBench, name: String, servers: [String], subscriptions: [String], devicePort: Int, bellKind: String,
        seconds: Double, postgres: Bool, otherService: pid_t? = nil, tag: String
    ) async throws -> Row {
        let services = [bench.serve.process?.pid, otherService].compactMap { $0 }
        let serviceBefore = services.map(cpuSeconds(pid:)).reduce(0, +)
        let postgresBefore = cpuSeconds(processesNamed: "postgres")
        let deadline = ContinuousClock.now + .seconds(seconds)
        async let load = bench.throughput(seconds: seconds, servers: servers, subscriptions: subscriptions, tag: tag)
        let bell = try await bench.doorbellLatencies(
            count: .max, deadline: deadline, publishVia: servers[0], devicePort: devicePort, tag: tag + "bell")
        let result = try await load
        let serviceCPU = services.map(cpuSeconds(pid:)).reduce(0, +) - serviceBefore
        let postgresAfter = cpuSeconds(processesNamed: "postgres")
        return Row(
            name: name, throughput: result, bell: bell, bellKind: bellKind, serviceCPU: serviceCPU,
            postgresCPU: postgres && postgresAfter.processes > 0 ? postgresAfter.seconds - postgresBefore.seconds : nil)
    }

    func addUsers(to bench: ServiceBench) async throws -> [String] {
        try await bench.addUsers(count: users)
    }
}
