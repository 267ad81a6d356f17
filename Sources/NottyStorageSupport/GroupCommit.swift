import Foundation
import Synchronization

/// The queue of a group-committing writer, the same for both backends.
///
/// Writers queue jobs from any task. The one that queues into an idle queue is told to start
/// the single drainer; the drainer takes batches (at most `maxBatch` jobs, in the order they
/// were queued), writes each batch in one transaction, and stops when a take finds nothing.
/// So at most one transaction per backend writes users' feeds at a time, and a burst of
/// writes costs one commit per batch instead of one each.
package final class GroupCommitQueue<Job: Sendable>: Sendable {
    private struct State: ~Copyable {
        var jobs: [Job] = []
        var draining = false
    }

    let maxBatch: Int
    private let state = Mutex(State())

    package init(maxBatch: Int) {
        self.maxBatch = maxBatch
    }

    /// Queues `job`; `true` when the caller must start the drainer (nobody is draining).
    package func append(_ job: Job) -> Bool {
        state.withLock { state in
            state.jobs.append(job)
            if state.draining { return false }
            state.draining = true
            return true
        }
    }

    /// The drainer's next batch, oldest first; empty when the queue is empty, and then the
    /// drainer has stopped (the next `append` starts another).
    package func nextBatch() -> [Job] {
        state.withLock { state in
            if state.jobs.isEmpty {
                state.draining = false
                return []
            }
            let batch = Array(state.jobs.prefix(maxBatch))
            state.jobs.removeFirst(batch.count)
            return batch
        }
    }
}

/// What a queued job produced, set by the drainer and read by the caller after the commit.
package final class JobOutcome<T: Sendable>: Sendable {
    private let stored = Mutex<Result<T, any Error>?>(nil)

    package init() {}

    package func set(_ result: Result<T, any Error>) {
        stored.withLock { $0 = result }
    }

    /// The result, or `missing` when the job never ran.
    package func result(missing: @autoclosure () -> any Error) -> Result<T, any Error> {
        stored.withLock { $0 } ?? .failure(missing())
    }
}

/// Holds a callback set after start-up. (The callback is kept in a box of its own: reading a
/// closure straight through `Mutex.withLock`'s `inout` re-wraps it in reabstraction thunks on
/// every call, and the chain grows without end; a box is read as one reference.)
package final class HandlerSlot<Handler: Sendable>: Sendable {
    private final class Box: Sendable {
        let handler: Handler
        init(_ handler: Handler) { self.handler = handler }
    }
    private let stored = Mutex<Box?>(nil)

    package init() {}

    package func set(_ handler: Handler) {
        let box = Box(handler)
        stored.withLock { $0 = box }
    }

    package var handler: Handler? {
        stored.withLock { $0 }?.handler
    }
}
