import Foundation
import NottyComposition
import NottyCore
import NottyRecords
import NottyService
import NottyServiceSQLite
import NottyStore
import NottySync
import NottyTestSupport
import Testing

/// The network between the simulated devices and the service: offline periods, lost answers,
/// duplicated and reordered batches. Owned by the (sequential) simulation.
///
/// Everything the seed decides comes from it alone. The simulation's own choices draw from
/// `random` in its one sequential loop. The transport's faults do not draw from that stream:
/// a sync engine reads its next page ahead in a task of its own, which may still be running
/// (abandoned) when the loop draws again, so its faults come from a generator keyed by what is
/// asked (``faults(for:)``), the same whichever task asks first.
final class SimulatedNetwork: @unchecked Sendable {
    let seed: UInt64
    var random: SeededRandom
    var offline: Set<Int> = []
    var faults = true
    /// The simulation's current step (part of every fault's key).
    var step = 0
    init(seed: UInt64) {
        self.seed = seed
        random = SeededRandom(seed: seed)
    }

    func chance(_ p: Double) -> Bool { faults && Double.random(in: 0..<1, using: &random) < p }

    /// The fault generator for one call: seeded by the seed, the step and `key` (FNV-1a, not
    /// Swift's per-process `Hasher`).
    func faults(for key: String) -> SimulatedFaults {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in "\(seed)/\(step)/\(key)".utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return SimulatedFaults(random: SeededRandom(seed: hash), on: faults)
    }
}

/// The faults of one transport call (``SimulatedNetwork/faults(for:)``).
struct SimulatedFaults {
    var random: SeededRandom
    let on: Bool
    mutating func chance(_ p: Double) -> Bool { on && Double.random(in: 0..<1, using: &random) < p }
}

/// ``SyncTransport`` straight into an in-process service, through the simulated network.
struct SimulatedTransport: SyncTransport {
    let service: NotificationService
    let userId: String
    let device: Int
    let network: SimulatedNetwork

    func reach() throws {
        if network.offline.contains(device) { throw SyncError.unreachable("device \(device) is offline") }
    }

    func changes(since: String?, limit: Int) async throws -> ChangesPage {
        try reach()
        let page: ChangesPage
        do {
            page = try await service.inbox.changes(userId: userId, cursor: try service.inbox.parseFeedCursor(since), limit: limit)
        } catch let error as ServiceError where error.code == "cursorExpired" {
            throw SyncError.cursorExpired
        }
        var faults = network.faults(for: "changes/\(device)/\(since ?? "-")/\(limit)")
        if faults.chance(0.1) { throw SyncError.unreachable("answer lost") }
        return page
    }

    func batch(_ mutations: [Mutation]) async throws -> [MutationResult] {
        try reach()
        var faults = network.faults(for: "batch/\(device)/" + mutations.map { "\($0.changedAt ?? 0)" }.joined(separator: ","))
        var sent = mutations
        if faults.chance(0.2) { sent.shuffle(using: &faults.random) }
        var results = try await service.inbox.mutate(userId: userId, sent)
        if faults.chance(0.2) { results = try await service.inbox.mutate(userId: userId, sent) }  // delivered twice
        if faults.chance(0.15) { throw SyncError.unreachable("answer lost after the service applied it") }
        return results
    }

    func preferences() async throws -> [PreferenceEntry] {
        try reach()
        return try await service.inbox.preferences(userId: userId).preferences
    }

    func setPreferences(_ entries: [PreferenceEntry]) async throws -> [PreferenceEntry] {
        try reach()
        let items = entries.map { JSONValue.object(["key": .string($0.key), "value": $0.value, "changedAt": .string(ISOTime.format($0.changedAt))]) }
        let body = Data(JSONValue.object(["preferences": .array(items)]).jsonText.utf8)
        var faults = network.faults(
            for: "preferences/\(device)/" + entries.map { "\($0.key)@\(ISOTime.millis($0.changedAt))" }.joined(separator: ","))
        let answer = try await service.inbox.setPreferences(userId: userId, body: body).preferences
        if faults.chance(0.15) { throw SyncError.unreachable("answer lost after the service applied it") }
        return answer
    }
}

/// An in-process service on SQLite in `directory`, with user alice, the app ci.example.com
/// (signed in) and alice's subscription to it.
func inProcessService(in directory: URL, clock: ManualClock) async throws
    -> (service: NotificationService, user: UserRecord, app: AppRecord, uns: String)
{
    var config = ServiceConfig()
    config.bcryptCost = 4
    config.publishBurst = 100_000
    let service = NotificationService(
        storage: try SQLiteStorage(path: directory.appendingPathComponent("server.sqlite").path), config: config, clock: clock,
        secrets: .ephemeral())
    let user = try await service.admin.addUser(name: "alice", password: "s3cret-pw")
    let (clientId, secret) = try await service.admin.addApp(hostName: "ci.example.com")
    let appToken = try await service.auth.token(form: ["grant_type": "client_credentials", "client_id": clientId, "client_secret": secret])
        .access_token
    let app = try await service.auth.authenticateApp(bearer: appToken)
    let uns = try await service.inbox.createSubscription(userId: user.id, body: Data(#"{"targetHostName":"ci.example.com"}"#.utf8))
        .userNotificationSubscriptionId
    return (service, user, app, uns)
}

/// One simulated device: its own store and sync engine.
struct SimulatedDevice {
    let index: Int
    let store: LocalStore
    let engine: SyncEngine
}

/// What PROTOCOL.md §1's rules make of every change in the simulation (one change per second).
struct Expected: CustomStringConvertible {
    var read = (step: -1, value: ReadState.unread)
    var action = (step: -1, value: UserActionState.noInteraction, until: Date?.none)
    var deleted = false

    mutating func publish(at step: Int) {
        read = (step, .unread)
        action = (step, .noInteraction, nil)
    }

    mutating func apply(_ change: LocalChange, at step: Int) {
        switch change {
        case .delete:
            deleted = true
        case .patch(let patch):
            if let value = patch.readState, step >= read.step { read = (step, value) }
            if let value = patch.userActionState, step >= action.step { action = (step, value, value == .snoozed ? patch.snoozedUntil : nil) }
        }
    }

    var description: String { "read \(read.value)@\(read.step), action \(action.value)@\(action.step) until \(String(describing: action.until))" }
}

@Suite("Sync simulation")
struct SimulationTests {
    static let ciSeeds: [UInt64] = [1, 2, 3, 42, 1337, 2026]

    /// `NOTTY_SIM_SEEDS=N` (scripts/simulate N [FIRST]): N more seeds, from `NOTTY_SIM_FIRST`
    /// (10000 unless given), in ``manySeeds``.
    static let extraSeeds = Int(ProcessInfo.processInfo.environment["NOTTY_SIM_SEEDS"] ?? "") ?? 0
    static let firstExtraSeed = UInt64(ProcessInfo.processInfo.environment["NOTTY_SIM_FIRST"] ?? "") ?? 10_000

    @Test("3 devices, random offline periods, lost/duplicated/reordered deliveries: every store ends equal to the service", arguments: ciSeeds)
    func converges(seed: UInt64) async throws {
        let failure = try await Self.simulate(seed: seed, devices: 3, steps: 250).failure
        #expect(failure == nil, "seed \(seed) (replay with this seed): \(failure ?? "")")
    }

    @Test(
        "A seed fixes the whole run: the same seed twice gives the same trace, step by step, and the same end state", arguments: [UInt64(7), 12190])
    func deterministic(seed: UInt64) async throws {
        let first = try await Self.simulate(seed: seed, devices: 3, steps: 250)
        let second = try await Self.simulate(seed: seed, devices: 3, steps: 250)
        #expect(first.failure == nil && second.failure == nil, "\(first.failure ?? "") \(second.failure ?? "")")
        #expect(first.trace.count > 250, "the trace notes every step and the end state")
        if let index = zip(first.trace, second.trace).enumerated().first(where: { $0.element.0 != $0.element.1 })?.offset {
            Issue.record("seed \(seed) diverged at trace line \(index):\n  first  \(first.trace[index])\n  second \(second.trace[index])")
        }
        #expect(first.trace.count == second.trace.count)
    }

    /// `NOTTY_SIM_SEED=S` replays one seed (as a failure prints it).
    static let replaySeed = UInt64(ProcessInfo.processInfo.environment["NOTTY_SIM_SEED"] ?? "")

    @Test("One seed replayed (NOTTY_SIM_SEED=S)", .enabled(if: replaySeed != nil))
    func replay() async throws {
        let failure = try await Self.simulate(seed: Self.replaySeed!, devices: 3, steps: 250).failure
        #expect(failure == nil, "seed \(Self.replaySeed!): \(failure ?? "")")
    }

    @Test("Many seeds (NOTTY_SIM_SEEDS=N), two at a time: every one converges", .enabled(if: extraSeeds > 0))
    func manySeeds() async throws {
        let seeds = (0..<UInt64(Self.extraSeeds)).map { Self.firstExtraSeed + $0 }
        let start = ContinuousClock.now
        var failures: [String] = []
        var next = seeds.makeIterator()
        try await withThrowingTaskGroup(of: String?.self) { group in
            // Two at a time (one per core): all at once would run out of file descriptors.
            for _ in 0..<2 {
                if let seed = next.next() {
                    group.addTask { try await Self.simulate(seed: seed, devices: 3, steps: 250).failure.map { "seed \(seed): \($0)" } }
                }
            }
            while let result = try await group.next() {
                if let result { failures.append(result) }
                if let seed = next.next() {
                    group.addTask { try await Self.simulate(seed: seed, devices: 3, steps: 250).failure.map { "seed \(seed): \($0)" } }
                }
            }
        }
        report("simulation: \(seeds.count) seeds (\(seeds.first!)…\(seeds.last!)), \(failures.count) failed, in \(start.duration(to: .now))")
        #expect(failures.isEmpty, "\(failures.count) seeds failed (replay with the seed):\n\(failures.prefix(20).joined(separator: "\n"))")
    }

    /// What one run did (a line per step, then the end state, in terms the seed decides:
    /// appNotificationIds and cursors, not the service's random ids) and the first difference
    /// between a store and the service, or nil.
    struct Outcome {
        var failure: String?
        var trace: [String]
    }

    /// Runs one simulation.
    static func simulate(seed: UInt64, devices deviceCount: Int, steps: Int) async throws -> Outcome {
        var trace: [String] = []
        let failure = try await simulate(seed: seed, devices: deviceCount, steps: steps, trace: &trace)
        return Outcome(failure: failure, trace: trace)
    }

    private static func simulate(seed: UInt64, devices deviceCount: Int, steps: Int, trace: inout [String]) async throws -> String? {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("notty-sim-\(seed)-\(UUID().uuidString.prefix(6))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        // One clock for everyone, one second per step: every change has its own time, so the
        // state §1's rules give is known exactly (the `expected` model below).
        let clock = ManualClock(Date(timeIntervalSince1970: 1_800_000_000))
        let (service, user, app, uns) = try await inProcessService(in: directory, clock: clock)

        let network = SimulatedNetwork(seed: seed)
        let devices = try (0..<deviceCount).map { index in
            let store = try LocalStore(path: directory.appendingPathComponent("device\(index).sqlite").path)
            return SimulatedDevice(
                index: index, store: store,
                engine: SyncEngine(
                    store: store, transport: SimulatedTransport(service: service, userId: user.id, device: index, network: network), pageSize: 7,
                    initialPageSize: 11, batchSize: 5))
        }
        var appIds: [String] = []
        var frames: [DoorbellFrame] = []
        var expected: [String: Expected] = [:]
        var current: [String: String] = [:]  // appNotificationId → id
        // Preferences (PROTOCOL.md §9) are set from a stream of their own, so that a seed's other
        // draws are the ones it made before they were simulated.
        var preferenceRandom = SeededRandom(seed: seed ^ 0x7072_6566_6572_656e)
        var expectedPreferences: [String: JSONValue] = [:]

        func outcome<T>(_ body: () async throws -> T) async -> String {
            do { return "ok \(try await body())" } catch { return "failed \(error)" }
        }
        for step in 0..<steps {
            clock.advance(by: 1)
            network.step = step
            let now = clock.now()
            let roll = Int.random(in: 0..<100, using: &network.random)
            let device = devices[Int.random(in: 0..<deviceCount, using: &network.random)]
            var line = "\(step) roll \(roll) device \(device.index):"
            defer { trace.append(line) }
            switch roll {
            case 0..<18:  // an app server publishes, or re-publishes an earlier appNotificationId
                let reuse = !appIds.isEmpty && network.chance(0.35)
                let appId = reuse ? appIds.randomElement(using: &network.random)! : "n\(step)"
                if !reuse { appIds.append(appId) }
                let body = #"{"appNotificationId":"\#(appId)","payload":{"visualContent":{"title":"step \#(step)","body":"seed \#(seed)"}}}"#
                let before = try await service.inbox.latestCursor(userId: user.id)
                let stored = try await service.publishing.publish(app: app, unsId: uns, body: Data(body.utf8))
                expected[stored.id, default: Expected()].publish(at: step)
                current[appId] = stored.id
                let page = try await service.inbox.changes(userId: user.id, since: before, limit: 5000)
                frames.append(DoorbellFrame(type: "changes", cursor: page.cursor, previousCursor: String(before), changes: page.changes))
                line += " publish \(appId) after \(before) → \(page.cursor)"
            case 18..<21:  // the app deletes one
                if let appId = appIds.randomElement(using: &network.random) {
                    line +=
                        " app deletes \(appId): "
                        + (await outcome { try await service.publishing.deleteByApp(app: app, unsId: uns, appNotificationId: appId) })
                    if let id = current[appId] { expected[id]?.deleted = true }
                }
            case 21..<55:  // the user acts on a device (online or not)
                let rows = try (await device.store.perform { try $0.window(view: .all, limit: 30, now: now) })
                guard let target = rows.randomElement(using: &network.random) else { break }
                let action: LocalChange
                switch Int.random(in: 0..<7, using: &network.random) {
                case 0: action = .patch(StateChange(readState: .read))
                case 1: action = .patch(StateChange(readState: .unread))
                case 2: action = .patch(StateChange(readState: .read, userActionState: .activated))
                case 3: action = .patch(StateChange(userActionState: .dismissed))
                case 4: action = .patch(StateChange(userActionState: .snoozed, snoozedUntil: now.addingTimeInterval(36_000 + Double(step))))
                case 5: action = .patch(StateChange(userActionState: .noInteraction))
                default: action = network.chance(0.5) ? .delete : .patch(StateChange(readState: .read))
                }
                let recorded = try !(await device.store.perform { try $0.record([(target.id, action)], now: now) }).isEmpty
                if recorded { expected[target.id]?.apply(action, at: step) }
                line += " user \(action) on \(target.appNotificationId): \(recorded ? "recorded" : "not recorded")"
            case 55..<70:  // a device syncs (may fail half way)
                line += " sync: " + (await outcome { try await device.engine.sync() })
            case 70..<78:  // a device only flushes
                line += " flush: " + (await outcome { try await device.engine.flush() })
            case 78..<90:  // a doorbell frame arrives: late, twice, or out of order
                if !frames.isEmpty {
                    let frame = network.chance(0.5) ? frames.randomElement(using: &network.random)! : frames.last!
                    line += " frame \(frame.previousCursor ?? "-")→\(frame.cursor): " + (await outcome { try await device.engine.receive(frame) })
                }
            default:  // a device goes offline or comes back
                if network.offline.contains(device.index) { network.offline.remove(device.index) } else { network.offline.insert(device.index) }
                line += network.offline.contains(device.index) ? " goes offline" : " comes back"
            }
            // The user sets a preference on a device (online or not): quiet, or a mute.
            if Int.random(in: 0..<100, using: &preferenceRandom) < 12 {
                let setter = devices[Int.random(in: 0..<deviceCount, using: &preferenceRandom)]
                let key = ["quiet", "mute.app.ci.example.com", "mute.group.deploys"][Int.random(in: 0..<3, using: &preferenceRandom)]
                let value: JSONValue =
                    if Int.random(in: 0..<3, using: &preferenceRandom) == 0 { .null } else if key == "quiet" {
                        Interruptions.quietValue(
                            until: now.addingTimeInterval(Double(Int.random(in: 60...7200, using: &preferenceRandom))),
                            strict: Bool.random(using: &preferenceRandom))
                    } else { Interruptions.muteValue(until: Bool.random(using: &preferenceRandom) ? nil : now.addingTimeInterval(3600)) }
                let entry = try (await setter.store.perform { try $0.setPreference(key: key, value: value, now: now) })
                expectedPreferences[key] = value
                line += "; device \(setter.index) sets \(key) = \(value.jsonText) at \(ISOTime.millis(entry.changedAt))"
            }
        }

        // Quiet: everyone online, no faults; sync until every outbox is empty and nothing moves.
        network.offline = []
        network.faults = false
        var settled = false
        for round in 0..<20 where !settled {
            for device in devices { try await device.engine.sync() }
            let pending = try devices.reduce(0) { $0 + (try $1.store.outboxCount()) + (try $1.store.pendingPreferences().count) }
            let latest = String(try await service.inbox.latestCursor(userId: user.id))
            settled = try pending == 0 && devices.allSatisfy({ try $0.store.cursor() == latest })
            let cursors = try devices.map { try $0.store.cursor() ?? "-" }
            trace.append("quiet round \(round): pending \(pending), latest \(latest), cursors \(cursors)")
        }
        if !settled { return "20 quiet rounds did not settle every device on the service's latest cursor" }

        let truth = try await service.inbox.list(userId: user.id, view: .all, top: 10_000, skip: 0)
        trace += truth.map {
            "end \($0.appNotificationId) \($0.readState) \($0.userActionState) \(String(describing: $0.snoozedUntil)) \($0.lastModifiedDateTime)"
        }
        let truthCounts = try await service.inbox.counts(userId: user.id)
        for device in devices {
            if try (await device.store.perform { try $0.outboxCount() }) != 0 { return "device \(device.index): outbox not empty" }
            let local = try (await device.store.perform { try $0.window(view: .all, limit: 10_000, now: clock.now()) })
            if local.count != truth.count { return "device \(device.index): \(local.count) notifications, service \(truth.count)" }
            for (mine, theirs) in zip(local, truth) where mine != theirs {
                return "device \(device.index) differs on \(theirs.id):\n  device  \(mine)\n  service \(theirs)"
            }
            let localCounts = try (await device.store.perform { try $0.counts(now: clock.now()) })
            if localCounts != truthCounts { return "device \(device.index): counts \(localCounts) vs \(truthCounts)" }
        }
        // Preferences: the last one set of each key, on the service and on every device.
        let servicePreferences = try await service.inbox.preferences(userId: user.id).preferences
        trace += servicePreferences.map { "end preference \($0.key) = \($0.value.jsonText) at \(ISOTime.millis($0.changedAt))" }
        let serviceValues = Dictionary(servicePreferences.map { ($0.key, $0.value) }, uniquingKeysWith: { first, _ in first })
        for (key, want) in expectedPreferences where (serviceValues[key] ?? .null) != want {
            return "preference \(key): the service has \(serviceValues[key]?.jsonText ?? "nothing"), the last set was \(want.jsonText)"
        }
        for device in devices {
            let local = try (await device.store.perform { try $0.preferences() })
            if local.map(\.key) != servicePreferences.map(\.key) || local.map(\.value) != servicePreferences.map(\.value) {
                return "device \(device.index): preferences \(local) vs the service's \(servicePreferences)"
            }
        }
        // No lost update, nothing applied twice: the service holds what §1's rules give for
        // every change the devices made, whatever the network did to them.
        let byId = Dictionary(uniqueKeysWithValues: truth.map { ($0.id, $0) })
        for (id, want) in expected {
            guard let got = byId[id] else {
                if !want.deleted { return "\(id) is missing at the service but was never deleted" }
                continue
            }
            if want.deleted { return "\(id) was deleted but is back" }
            if got.readState != want.read.value || got.userActionState != want.action.value || got.snoozedUntil != want.action.until {
                return
                    "\(id): service has \(got.readState)/\(got.userActionState)/\(String(describing: got.snoozedUntil)), the last changes were \(want)"
            }
        }
        if truth.isEmpty && steps > 50 { return "the simulation published nothing that survived: it tests nothing" }
        if expectedPreferences.isEmpty && steps > 100 { return "the simulation set no preference: it tests none" }
        return nil
    }
}

/// A transport that notes the limit of every page asked for.
struct CountingTransport: SyncTransport {
    let inner: SimulatedTransport
    let limits = Locked<[Int]>([])
    func changes(since: String?, limit: Int) async throws -> ChangesPage {
        limits.update { $0.append(limit) }
        return try await inner.changes(since: since, limit: limit)
    }
    func batch(_ mutations: [Mutation]) async throws -> [MutationResult] { try await inner.batch(mutations) }
    func preferences() async throws -> [PreferenceEntry] { try await inner.preferences() }
    func setPreferences(_ entries: [PreferenceEntry]) async throws -> [PreferenceEntry] { try await inner.setPreferences(entries) }
}

@Suite("A first sync through the engine")
struct FirstSyncTests {
    @Test("poll and pull into an empty store both take the whole history in large pages and leave no index put off")
    func pollFromTheStart() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("notty-first-\(UUID().uuidString.prefix(6))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let (service, user, app, uns) = try await inProcessService(in: directory, clock: ManualClock(Date(timeIntervalSince1970: 1_800_000_000)))
        for n in 0..<120 {
            _ = try await service.publishing.publish(
                app: app, unsId: uns, body: Data(#"{"appNotificationId":"n\#(n)","payload":{"rawContent":"x"}}"#.utf8))
        }
        let network = SimulatedNetwork(seed: 1)
        network.faults = false
        for (index, name) in ["poll", "pull"].enumerated() {
            let store = try await LocalStore.open(path: directory.appendingPathComponent("\(name).sqlite").path)
            let transport = CountingTransport(inner: SimulatedTransport(service: service, userId: user.id, device: index, network: network))
            let engine = SyncEngine(store: store, transport: transport, pageSize: 7, initialPageSize: 50)
            let pulled = name == "poll" ? try await engine.pullIfChanged().summary.pulled : try await engine.pull().pulled
            #expect(pulled == 120, "\(name)")
            #expect(transport.limits.value == [50, 50, 50], "\(name): pages of the initial size from the start")
            #expect(try (await store.perform { try $0.counts() }).unread == 120, "\(name)")
            #expect(try (await store.perform { try $0.deferIndexesIfEmpty() }) == false, "\(name): the store has rows and a cursor")
            try (await store.perform { try $0.buildDeferredIndexes() })  // nothing left to make: a no-op
            #expect(try (await store.perform { try $0.counts() }).unread == 120, "\(name)")
        }
    }
}
