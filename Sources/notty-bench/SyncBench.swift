import Foundation
import NottyStore
import NottyTestSupport

/// `notty-bench sync`: the initial sync of a large history, as a user meets it — the whole
/// `notty login` process (sign in, register the device, pull everything into an empty store)
/// and `notty sync` into an empty store of a device already signed in. With `--baseline PATH`
/// another `notty` build is timed in the same run, the two alternated round by round.
struct SyncBench {
    let service: ServiceBench
    let count: Int
    let rounds: Int
    let builds: [(name: String, binary: URL)]

    func run() async throws {
        print(
            "notty-bench sync — real `notty serve` (SQLite) on 127.0.0.1:\(service.port), \(ProcessInfo.processInfo.activeProcessorCount) cores, \(rounds) rounds alternating \(builds.map(\.name).joined(separator: " / "))"
        )
        try await service.publishHistory(count)
        try await service.spreadStates()
        print("history: \(count) notifications with every state")
        var login: [String: [Double]] = [:], sync: [String: [Double]] = [:]
        for round in 0..<rounds {
            for build in builds {
                let home = service.directory.appendingPathComponent("sync-\(build.name)-\(round)")
                let cli = NottyCLI(home: home, binary: build.binary)
                let store = home.appendingPathComponent("store.sqlite").path
                login[build.name, default: []].append(
                    try milliseconds {
                        try cli.loginWaiting(service.base, device: "sync-\(build.name)-\(round)")
                    })
                try verify(store)
                for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: store + suffix) }
                sync[build.name, default: []].append(
                    try milliseconds {
                        try check(cli.runWaiting(["sync"]), "sync")
                    })
                try verify(store)
                try? FileManager.default.removeItem(at: home)
            }
        }
        for build in builds {
            let seconds = { (samples: [Double]) in samples.map { String(format: "%.2f", $0 / 1000) }.joined(separator: ", ") }
            print(
                "\(build.name): `notty login` of \(count) (whole process) \(seconds(login[build.name] ?? [])) s; `notty sync` into an empty store \(seconds(sync[build.name] ?? [])) s"
            )
        }
    }

    private func check(_ result: NottyCLI.Result, _ what: String) throws {
        guard result.status == 0 else { throw SupportError("notty \(what) failed: \(result.err)") }
    }

    /// The store holds the whole history, in the right views.
    private func verify(_ path: String) throws {
        let counts = try LocalStore(path: path).counts()
        let unread = count / 20 * 7 + max(0, count % 20 - 13)  // of every 20, 7 (see spreadStates)
        guard counts.all == count, counts.unread == unread else {
            throw SupportError("the store holds \(counts), expected \(count) notifications")
        }
    }
}
