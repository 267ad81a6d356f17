import Foundation

/// Work that a request or a change hands off so as not to wait for it (a device's last-seen
/// time, a poll request to the ntfy upstream, re-reading connected users after a resync): each
/// errand runs in a task of the background jobs' group (``BackgroundJobs``), so that it is
/// owned, and ends with the service. Handed off while no jobs run (a `notty admin` command),
/// an errand waits until they do.
public final class Errands: Sendable {
    public typealias Work = @Sendable () async -> Void
    private let stream: AsyncStream<Work>
    private let continuation: AsyncStream<Work>.Continuation

    init() {
        (stream, continuation) = AsyncStream.makeStream(of: Work.self)
    }

    /// Runs `work` soon, in the background jobs' group.
    package func run(_ work: @escaping Work) {
        continuation.yield(work)
    }

    /// What the background job does: each errand in a task of its own, until cancelled.
    func serve() async {
        await withDiscardingTaskGroup { group in
            for await work in stream {
                group.addTask { await work() }
            }
        }
    }
}
