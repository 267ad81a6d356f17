import Foundation
import NottyTestSupport

/// `notty-bench instances`: publish throughput with one SQLite instance, one PostgreSQL
/// instance and two PostgreSQL instances sharing one database, and the publish → doorbell
/// latency within an instance and across instances, side by side.
///
/// PostgreSQL is `--postgres URL` (an empty database is created on that server), else a
/// throwaway cluster started with `.ci/postgres-server` (fsync on, synchronous commit).
struct InstancesBench {
    var quick: Bool
    var postgresServer: String?

    struct Row {
        var name: String
        var throughput: HTTPLoad.Result
        var bell: [Double]
        var bellKind: String
    }

    func run() async throws {
        let seconds = quick ? 2.0 : 6.0
        let bells = quick ? 200 : 1000
        print("notty-bench instances — real `notty serve` processes on 127.0.0.1, \(ProcessInfo.processInfo.activeProcessorCount) cores; 64 concurrent publishing clients for \(Int(seconds)) s each")
        var rows: [Row] = []

        let sqlite = try await ServiceBench.start()
        do {
            let burst = try await sqlite.throughput(seconds: seconds, tag: "s")
            let bell = try await sqlite.doorbellLatencies(count: bells, tag: "sbell")
            rows.append(Row(name: "SQLite, 1 instance", throughput: burst, bell: bell, bellKind: "same instance"))
        }
        await sqlite.stop()

        // A throwaway cluster lives until this process exits.
        let server = try postgresServer ?? TestPostgres.Cluster().url
        let database = try TestPostgres.createDatabase(on: server)
        let one = try await ServiceBench.start(environment: ["NOTTY_POSTGRES_URL": database])
        let twoDirectory = Repository.temporaryDirectory("notty-bench-two")
        var two: ServeProcess?
        do {
            let burst = try await one.throughput(seconds: seconds, tag: "p")
            let bell = try await one.doorbellLatencies(count: bells, tag: "pbell")
            rows.append(Row(name: "PostgreSQL, 1 instance", throughput: burst, bell: bell, bellKind: "same instance"))

            let second = try await ServeProcess(sharingStorageOf: one.serve, directory: twoDirectory, extraArguments: ServiceBench.unlimited)
            two = second
            let shared = try await one.throughput(seconds: seconds, servers: [one.base, second.url], tag: "q")
            let across = try await one.doorbellLatencies(count: bells, publishVia: one.base, devicePort: second.port, tag: "xbell")
            rows.append(Row(name: "PostgreSQL, 2 instances", throughput: shared, bell: across, bellKind: "across instances"))
        } catch {
            print("benchmark failed: \(error)")
        }
        two?.stop()
        try? FileManager.default.removeItem(at: twoDirectory)
        await one.stop()

        print("")
        print("| storage | publishes/s (64 clients) | publish → doorbell p50 | p99 | doorbell |")
        print("|---|---|---|---|---|")
        for row in rows {
            print(String(format: "| %@ | %.0f (%d in %.1f s, %d non-201) | %.2f ms | %.2f ms | %@ |",
                         row.name, row.throughput.rate, row.throughput.ok, row.throughput.elapsed, row.throughput.other,
                         percentile(row.bell, 50), percentile(row.bell, 99), row.bellKind))
        }
    }
}
