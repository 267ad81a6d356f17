import Foundation
import Logging
import NottyCore
import NottyTestSupport
import Synchronization
import Testing

@testable import NottyService

/// A part of the service asks for its storage concerns only, so a test hands it a small fake of
/// them: here maintenance, which needs retention and sign-in guesses and nothing else.
final class FakeMaintenanceStorage: MaintenanceStorage {
    let calls = Mutex<[String]>([])
    let guesses: [GuessRecord]
    init(guesses: [GuessRecord]) { self.guesses = guesses }

    func expire(now: Date) async throws -> Int {
        calls.withLock { $0.append("expire \(Int(now.timeIntervalSince1970))") }
        return 3
    }
    func purgeHistory(before: Date) async throws { calls.withLock { $0.append("purge before \(Int(before.timeIntervalSince1970))") } }
    func guesses(keys: [String]) async throws -> [GuessRecord] { guesses.filter { keys.contains($0.key) } }
    func updateGuesses(keys: [String], _ update: @escaping @Sendable (String, GuessRecord?) -> GuessRecord?) async throws {}
    func allGuesses() async throws -> [GuessRecord] { guesses }
    func forgetGuesses(keys: [String]?) async throws -> Int {
        calls.withLock { $0.append("forget \((keys ?? []).sorted().joined(separator: ","))") }
        return keys?.count ?? 0
    }
}

@Suite("Each part of the service takes only its storage concerns")
struct StorageConcernTests {
    @Test("maintenance on a fake of its two concerns: expiry at the clock's now, history before the retention, only old failed sign-ins forgotten")
    func maintenanceOnAFake() async throws {
        let clock = ManualClock(Date(timeIntervalSince1970: 1_800_000_000))
        var config = ServiceConfig()
        config.historyRetention = 86_400
        // No database at all: the core holds no storage, the part only the fake of its concerns.
        let core = ServiceCore(
            credentialsStamp: { 0 }, config: config, clock: clock, metrics: ServiceMetrics(), logger: Logger(label: "test"), secrets: .ephemeral())
        let now = clock.now()
        let fake = FakeMaintenanceStorage(guesses: [
            GuessRecord(key: "user:old", failures: 1, windowStart: now - 30 * 86_400, lockedUntil: nil, strikes: 0),
            GuessRecord(key: "user:recent", failures: 2, windowStart: now - 10, lockedUntil: nil, strikes: 0),
        ])
        let maintenance = Maintenance(core: core, storage: fake)
        #expect(try await maintenance.expireDue() == 3)
        try await maintenance.purgeHistory()
        #expect(fake.calls.withLock { $0 } == ["expire 1800000000", "purge before 1799913600", "forget user:old"])
    }
}
