import Foundation
import NottyCore
import NottyDBus
import NottyDesktop
import NottyPoll
import NottyStore
import NottyTestSupport
import Synchronization
import Testing

/// A clock that moves only when told: sleepers wake when it is moved past their deadline.
final class ManualClock: PollClock {
    private struct Sleeper {
        let deadline: Date
        let continuation: CheckedContinuation<Void, any Error>
    }
    private let state: Mutex<(now: Date, next: Int, sleepers: [Int: Sleeper])>

    init(_ now: Date) { state = Mutex((now, 0, [:])) }

    func now() -> Date { state.withLock { $0.now } }

    func sleep(until deadline: Date) async throws {
        let id = state.withLock { state in
            defer { state.next += 1 }; return state.next
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let due = state.withLock { state -> Bool in
                    if deadline <= state.now || Task.isCancelled { return true }
                    state.sleepers[id] = Sleeper(deadline: deadline, continuation: continuation)
                    return false
                }
                if due { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0.sleepers.removeValue(forKey: id) }?.continuation.resume(throwing: CancellationError())
        }
        try Task.checkCancellation()
    }

    /// Moves the clock to `date`, waking every sleeper whose deadline it passed.
    func advance(to date: Date) {
        let woken = state.withLock { state -> [Sleeper] in
            state.now = date
            let due = state.sleepers.filter { $0.value.deadline <= date }
            for id in due.keys { state.sleepers[id] = nil }
            return Array(due.values)
        }
        for sleeper in woken { sleeper.continuation.resume() }
    }

    var sleepers: Int { state.withLock { $0.sleepers.count } }
}

/// The commands `notty poll` would have run.
final class RecordedJobs: CommandJobs {
    private let jobs = Mutex<[CommandRunner.Job]>([])
    func submit(_ job: CommandRunner.Job) { jobs.withLock { $0.append(job) } }
    var all: [CommandRunner.Job] { jobs.withLock { $0 } }
    func of(_ option: String) -> [CommandRunner.Job] { all.filter { $0.option == option } }
}

/// What the popups were told.
actor RecordedPopups: PollPopups {
    private(set) var arrivals: [[String]] = []
    private(set) var summaries: [QuietSummary] = []
    func arrived(_ notifications: [(UserNotification, NotificationView?)], at now: Date) { arrivals.append(notifications.map(\.0.id)) }
    func storeChanged(now: Date) {}
    func show(_ summary: QuietSummary) { summaries.append(summary) }
    func stop() {}
}

/// A notification daemon that answers every popup with a new id.
final class RecordedBus: PopupBus {
    private let calls = Mutex<(next: UInt32, shown: [(content: PopupContent, replacing: UInt32)])>((1, []))
    func notify(_ content: PopupContent, replacing: UInt32) async throws -> UInt32 {
        calls.withLock { calls in
            calls.shown.append((content, replacing))
            defer { calls.next += 1 }
            return replacing != 0 ? replacing : calls.next
        }
    }
    func close(_ popupId: UInt32) {}
    func stop() {}
    var shown: [(content: PopupContent, replacing: UInt32)] { calls.withLock { $0.shown } }
}

@Suite("notty poll's decisions (PollReporter), on a manual clock")
struct PollReporterTests {
    let directory = Repository.temporaryDirectory("notty-reporter")
    let start = Date(timeIntervalSince1970: 1_900_000_000)

    /// A device's store after its first sync (of nothing: a first sync is never news).
    func store() async throws -> LocalStore {
        let store = try await LocalStore.open(path: directory.appendingPathComponent("store.sqlite").path)
        _ = try await store.perform { try $0.apply(page: ChangesPage(changes: [], cursor: "0", hasMore: false), since: nil) }
        return store
    }

    func notification(_ n: Int, group: String? = nil, read: ReadState = .unread, action: UserActionState = .noInteraction, at: Date)
        -> UserNotification
    {
        .fixture(
            id: UserNotification.fixtureId(n), appNotificationId: "a\(n)", app: "mon.example.com", group: group, title: "Disk \(n) full",
            body: "on web-\(n)", created: at, modified: at, expires: at.addingTimeInterval(86_400), read: read, action: action)
    }

    /// The service's changes reach the store as a sync would write them.
    func arrive(_ store: LocalStore, _ notifications: [UserNotification], page: Int) async throws {
        _ = try await store.perform {
            try $0.apply(page: ChangesPage(changes: notifications, cursor: String(page), hasMore: false), since: String(page - 1))
        }
    }

    @Test(
        "while quiet, what arrives in Unread is kept (a JSON line) but held back: no --exec, no popup; when quiet ends by the clock, one summary, once"
    )
    func heldBackThenOneSummary() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try await store()
        let clock = ManualClock(start), jobs = RecordedJobs(), popups = RecordedPopups()
        let lines = Mutex<[String]>([])
        let reporter = PollReporter(
            store: store, exec: "notify-send \"$NOTTY_TITLE\"", onChange: nil, jobs: jobs, popups: popups,
            clock: clock, output: { line in lines.withLock { $0.append(line) } })
        await reporter.begin()
        let end = start.addingTimeInterval(3_600)
        _ = try await store.perform { try $0.setQuiet(until: end, now: start) }
        try await arrive(store, [notification(1, at: start), notification(2, at: start.addingTimeInterval(1))], page: 1)
        await reporter.report()

        #expect(jobs.all.isEmpty, "quiet holds --exec back")
        #expect(await popups.arrivals == [[]], "and the popups")
        #expect(lines.withLock { $0.count } == 2, "each is still a JSON line")
        #expect(try await store.perform { try $0.holdsForQuiet() })
        #expect(await popups.summaries.isEmpty, "no summary while quiet")

        // One is read elsewhere meanwhile: the summary is of what is still Unread.
        try await arrive(store, [notification(2, read: .read, at: start.addingTimeInterval(1))], page: 2)
        await reporter.report()
        #expect(await popups.summaries.isEmpty)

        // Quiet's end, by the clock alone: the wait armed by the report sums up.
        clock.advance(to: end.addingTimeInterval(1))
        #expect(await eventually(timeout: .seconds(60)) { await popups.summaries.count == 1 })
        let summary = try #require(await popups.summaries.first)
        #expect(summary.notifications.map(\.id) == [UserNotification.fixtureId(1)])
        #expect(summary.title == "1 notification while quiet")
        let summaryJobs = jobs.of("--exec")
        #expect(summaryJobs.count == 1)
        #expect(summaryJobs.first?.variables["NOTTY_SUMMARY"] == "1")
        #expect(summaryJobs.first?.variables["NOTTY_IDS"] == UserNotification.fixtureId(1))

        // Never twice: another report, and more time.
        await reporter.report()
        clock.advance(to: end.addingTimeInterval(7_200))
        await reporter.summarizeQuiet()
        #expect(await popups.summaries.count == 1)
        #expect(jobs.of("--exec").count == 1)
        await reporter.end()
    }

    @Test("not quiet: what arrives in Unread runs --exec and reaches the popups; what arrives handled elsewhere is only marked")
    func announcedWhenNotQuiet() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try await store()
        let jobs = RecordedJobs(), popups = RecordedPopups()
        let reporter = PollReporter(
            store: store, exec: "true", onChange: nil, jobs: jobs, popups: popups, clock: ManualClock(start), output: { _ in })
        try await arrive(store, [notification(9, at: start)], page: 1)
        await reporter.begin()  // what the store held before is not news
        try await arrive(store, [notification(1, at: start), notification(2, action: .dismissed, at: start)], page: 2)
        await reporter.report()
        #expect(jobs.of("--exec").map { $0.variables["NOTTY_ID"] } == [UserNotification.fixtureId(1)])
        #expect(
            await popups.arrivals.map { Set($0) } == [[UserNotification.fixtureId(1), UserNotification.fixtureId(2)]],
            "the dismissed one is told too (its popup, if any, closes)")
        await reporter.report()
        #expect(jobs.all.count == 1, "announced once")
        await reporter.end()
    }

    @Test("--on-change runs once per notification and round, with its state now, whatever changed between two reports")
    func onChangeOnce() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try await store()
        let jobs = RecordedJobs()
        let reporter = PollReporter(store: store, exec: nil, onChange: "log", jobs: jobs, popups: nil, clock: ManualClock(start), output: { _ in })
        try await arrive(store, [notification(1, at: start), notification(2, at: start)], page: 1)
        await reporter.begin()
        // Read, then dismissed, on other devices, before the next report.
        try await arrive(store, [notification(1, read: .read, at: start)], page: 2)
        try await arrive(store, [notification(1, read: .read, action: .dismissed, at: start)], page: 3)
        await reporter.report()
        let changes = jobs.of("--on-change")
        #expect(changes.count == 1)
        #expect(changes.first?.variables["NOTTY_ID"] == UserNotification.fixtureId(1))
        #expect(changes.first?.variables["NOTTY_STATE"] == "dismissed")
        await reporter.report()
        #expect(jobs.of("--on-change").count == 1, "nothing changed since")
        // This device's own change is reported too.
        _ = try await store.perform { try $0.record([(UserNotification.fixtureId(2), .patch(StateChange(readState: .read)))]) }
        await reporter.report()
        #expect(jobs.of("--on-change").map { $0.variables["NOTTY_STATE"] } == ["dismissed", "read"])
        await reporter.end()
    }

    @Test("a storm: more popups of one app and group than the limit fold into one popup with the count; quiet's end does not replay them")
    func storm() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try await store()
        let bus = RecordedBus()
        let popups = await DesktopPopups.start(store: store, bus: bus, signals: AsyncStream { $0.finish() }, storm: 3, changed: {})
        let reporter = PollReporter(
            store: store, exec: nil, onChange: nil, jobs: RecordedJobs(), popups: popups, clock: ManualClock(start), output: { _ in })
        await reporter.begin()
        try await arrive(store, (1...10).map { notification($0, group: "HighCPU", at: start.addingTimeInterval(Double($0))) }, page: 1)
        await reporter.report()
        let shown = bus.shown
        let distinct = shown.filter { $0.replacing == 0 }.count
        #expect(distinct <= 4, "at most the limit's single popups and the storm's one (\(distinct) popups)")
        #expect(shown.last?.content.summary == "HighCPU ×10")
        #expect(try await store.perform { try $0.popups() }.count == 10, "every notification is tracked under the storm's popup")
        await reporter.end()
        await popups.stop()
    }
}
