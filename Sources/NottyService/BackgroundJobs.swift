import Foundation
import Logging
import NottySecrets

/// Work the service does by itself, on a schedule. Each job runs in a loop of its own, so a
/// slow one (a database that hesitates, a target that does not answer) never holds up another.
/// Rows that several instances share are claimed with a lease by the job that works on them
/// (delayed publishes: ``DelayedPublishStorage/claimDueDelayed(now:lease:limit:)``); work that
/// any instance may do twice harmlessly (expiry, forgetting old history) is not claimed.
public struct BackgroundJob: Sendable {
    public let name: String
    /// The pause between two runs (after a failure too).
    public let every: Duration
    /// The wait before the first run.
    public let firstAfter: Duration
    public let work: @Sendable () async throws -> Void

    public init(_ name: String, every: Duration, firstAfter: Duration = .zero, work: @escaping @Sendable () async throws -> Void) {
        self.name = name
        self.every = every
        self.firstAfter = firstAfter
        self.work = work
    }

    /// A job that is a loop of its own (it returns only when cancelled); started again a
    /// second later should it return early.
    public static func loop(_ name: String, _ body: @escaping @Sendable () async -> Void) -> BackgroundJob {
        BackgroundJob(name, every: .seconds(1)) { await body() }
    }
}

/// The service's background jobs (what `notty serve` runs beside serving).
public struct BackgroundJobs: Sendable {
    public let jobs: [BackgroundJob]
    let logger: Logger

    /// How often an idle ntfy stream says it is alive (ntfy's default).
    public static let keepalive: Duration = .seconds(45)

    /// The service's jobs (ten): expiry and held publishes every half second; late heartbeats
    /// every quarter second; ntfy streams' keepalives; closing streams whose token ended (every 250 ms, PROTOCOL.md §15); forgetting old
    /// history hourly; the errands requests hand off; following a key rotation made
    /// elsewhere; Web Push's retries; and paging's engine, with jobs of its own.
    public init(service: NotificationService) {
        self.init(
            jobs: [
                BackgroundJob("expiry", every: .milliseconds(500)) { _ = try await service.maintenance.expireDue() },
                BackgroundJob("delayed publishes", every: .milliseconds(500)) { _ = try await service.publishing.publishDueDelayed() },
                BackgroundJob("keepalive", every: Self.keepalive, firstAfter: Self.keepalive) { service.hub.tick() },
                // Revoked, expired or disabled: the streams opened with it close (PROTOCOL.md §15).
                BackgroundJob("ended streams", every: .milliseconds(250)) { try await service.auth.closeEndedStreams() },
                BackgroundJob("history", every: .seconds(3600)) { try await service.maintenance.purgeHistory() },
                // What requests and changes hand off (Errands): owned here, ended with the rest.
                BackgroundJob.loop("errands") { await service.core.errands.serve() },
                // Secrets at rest: a rotation run elsewhere (notty admin rotate-key) made a new key
                // the store's; this instance seals with it from now on.
                BackgroundJob("secret key", every: .seconds(10), firstAfter: .seconds(10)) {
                    if try await SecretKeeping.follow(service.secrets, storage: service.storage) {
                        service.logger.notice(
                            "secrets are sealed with a new key from now on (a rotation)", metadata: ["key": "\(service.secrets.primary.id)"])
                    }
                },
                // Web Push: what failed for now, tried again; what a stopped instance left.
                BackgroundJob.loop("web push") { await service.webPush.runRetries() },
                // Paging: one engine, its own jobs in a group of their own (Paging.jobs).
                BackgroundJob.loop("paging") { await BackgroundJobs(jobs: service.paging.jobs, logger: service.logger).run() },
            ]
                // Heartbeats (PROTOCOL.md §16.3): one look over the due times, announced within a tick.
                + service.heartbeats.jobs, logger: service.logger)
    }

    public init(jobs: [BackgroundJob], logger: Logger) {
        self.jobs = jobs
        self.logger = logger
    }

    /// Runs every job until the task is cancelled; a job that fails is logged and runs again
    /// at its next turn.
    public func run() async {
        await withTaskGroup(of: Void.self) { group in
            for job in jobs {
                group.addTask { [logger] in
                    if job.firstAfter > .zero { try? await Task.sleep(for: job.firstAfter) }
                    while !Task.isCancelled {
                        do {
                            try await job.work()
                        } catch {
                            // Stopping (the service shuts down): not a failure.
                            if Task.isCancelled { return }
                            logger.warning("background job failed; will retry", metadata: ["job": "\(job.name)", "error": "\(error)"])
                        }
                        try? await Task.sleep(for: job.every)
                    }
                }
            }
        }
    }
}
