import Foundation
import Logging
import NottyService
import NottyTestSupport
import Synchronization
import Testing

@Suite("Background jobs: each on its own", .timeLimit(.minutes(2)))
struct BackgroundJobsTests {
    @Test("a job that never finishes holds up no other; a failing job runs again at its next turn; cancelling ends them all")
    func independent() async throws {
        let fastRuns = Atomic<Int>(0), failures = Atomic<Int>(0), stuckStarted = Atomic<Bool>(false)
        let jobs = BackgroundJobs(
            jobs: [
                BackgroundJob("stuck", every: .milliseconds(10)) {
                    stuckStarted.store(true, ordering: .relaxed)
                    try await Task.sleep(for: .seconds(3600))  // a target that never answers
                },
                BackgroundJob("fast", every: .milliseconds(10)) { fastRuns.add(1, ordering: .relaxed) },
                BackgroundJob("failing", every: .milliseconds(10)) {
                    failures.add(1, ordering: .relaxed)
                    throw CancellationError()
                },
                BackgroundJob("later", every: .milliseconds(10), firstAfter: .seconds(3600)) { Issue.record("ran before its first wait") },
            ], logger: Logger(label: "test"))
        let running = Task { await jobs.run() }
        #expect(
            await eventually(timeout: .seconds(30)) {
                stuckStarted.load(ordering: .relaxed) && fastRuns.load(ordering: .relaxed) >= 5 && failures.load(ordering: .relaxed) >= 3
            }, "fast ran \(fastRuns.load(ordering: .relaxed)) times, failing \(failures.load(ordering: .relaxed)) times")
        running.cancel()
        await running.value  // every loop ended, the stuck one too
    }
}
