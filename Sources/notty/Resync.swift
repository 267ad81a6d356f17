import ArgumentParser
import Foundation
import NottyCommandLine
import NottyCore
import NottyPOSIX
import NottyStore
import NottySync

struct Resync: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "resync",
        abstract: "Rebuild this device's store from the service, keeping the changes not sent yet.",
        discussion: """
            For a store notty cannot use (damaged: a truncated file, garbage pages; or written \
            by a newer notty), or whenever this device's copy is in doubt. The changes made \
            here that had not reached the service are read out of the old store first, as far \
            as they can be read, and sent with their own ids (never applied twice). The old \
            files are kept beside it (store.sqlite.before-resync-TIME). Stop notty poll and the \
            center on this device first. Needs the service: the history is pulled anew.
            """)

    func run() async throws {
        try await reportingErrors {
            let device = Device()
            _ = try device.credentials()  // signed in, before anything is moved
            let path = device.paths.store
            let (salvaged, complete) =
                FileManager.default.fileExists(atPath: path) ? try await offThePool { LocalStore.salvageOutbox(path: path) } : ([], true)
            let aside: String?
            do {
                aside = try LocalStore.setAside(path: path)
            } catch {
                throw CLIError("\(error)")
            }
            let (_, store, engine) = try await device.session()
            let queued = try await store.perform { try $0.requeue(salvaged) }
            let summary: SyncSummary
            do {
                summary = try await engine.sync()
            } catch {
                throw CLIError(
                    "the new store holds the \(queued) change(s) kept, but the service could not be reached (\(explained(error))): run notty sync when it can"
                )
            }
            let counts = try await store.perform { try $0.counts() }
            let unread = complete ? "" : " (the rest of the old outbox could not be read)"
            say(
                "rebuilt the local store from the service: \(counts.all) notification(s), \(counts.unread) unread; kept \(queued) change(s) not sent yet\(unread), sent \(summary.sent)"
                    + (aside.map { "; the old store is at \($0)" } ?? ""))
        }
    }
}
