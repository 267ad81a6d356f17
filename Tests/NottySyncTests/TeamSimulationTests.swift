import Foundation
import NottyCore
import NottyService
import NottyStore
import NottySync
import NottyTestSupport
import Testing

/// The seeded simulation with a team (PROTOCOL.md §13.1): alice (owner) and bob share the team
/// ops; each has two devices. Apps publish to each of them and to the team; members act on
/// their devices online and offline, through a network that loses, repeats and reorders;
/// bob leaves the team and joins again. When everything is quiet, each device holds exactly
/// what the service has for its user, and the team's notifications have one state.
@Suite("Seeded simulation: a team, members who come and go")
struct TeamSimulationTests {
    @Test(
        "2 members × 2 devices, personal and team notifications, offline changes, bob leaving and rejoining: every device converges",
        arguments: SimulationTests.ciSeeds)
    func converges(seed: UInt64) async throws {
        let failure = try await Self.simulate(seed: seed, steps: 200)
        #expect(failure == nil, "seed \(seed) (replay with this seed): \(failure ?? "")")
    }

    static func simulate(seed: UInt64, steps: Int) async throws -> String? {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("notty-teamsim-\(seed)-\(UUID().uuidString.prefix(6))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let clock = ManualClock(Date(timeIntervalSince1970: 1_800_000_000))
        let (service, alice, app, personal) = try await inProcessService(in: directory, clock: clock)
        let bob = try await service.admin.addUser(name: "bob", password: "s3cret-pw")
        let bobs = try await service.inbox.createSubscription(userId: bob.id, body: Data(#"{"targetHostName":"ci.example.com"}"#.utf8))
            .userNotificationSubscriptionId
        try await service.teams.create(name: "ops", owner: "alice")
        _ = try await service.teams.setMember(team: "ops", by: alice.id, body: Data(#"{"user":"bob"}"#.utf8))
        let team = try await service.inbox.createSubscription(
            userId: alice.id, body: Data(#"{"targetHostName":"ci.example.com","team":"ops"}"#.utf8)
        ).userNotificationSubscriptionId

        let network = SimulatedNetwork(seed: seed)
        let users = [alice.id, alice.id, bob.id, bob.id]  // devices 0, 1: alice's; 2, 3: bob's
        let devices = try users.enumerated().map { index, user in
            let store = try LocalStore(path: directory.appendingPathComponent("device\(index).sqlite").path)
            return SimulatedDevice(
                index: index, store: store,
                engine: SyncEngine(
                    store: store, transport: SimulatedTransport(service: service, userId: user, device: index, network: network), pageSize: 7,
                    initialPageSize: 11, batchSize: 5))
        }
        var bobInTeam = true, published = 0, teamPublished = 0, membershipChanges = 0
        for step in 0..<steps {
            clock.advance(by: 1)
            network.step = step
            let now = clock.now()
            let roll = Int.random(in: 0..<100, using: &network.random)
            let device = devices[Int.random(in: 0..<devices.count, using: &network.random)]
            switch roll {
            case 0..<20:  // an app publishes to alice, to bob or to the team
                let to = Int.random(in: 0..<3, using: &network.random)
                let uns = [personal, bobs, team][to]
                let priority = network.chance(0.3) ? #","priority":"High""# : ""
                let body = #"{"appNotificationId":"n\#(step)"\#(priority),"payload":{"visualContent":{"title":"step \#(step)"}}}"#
                _ = try await service.publishing.publish(app: app, unsId: uns, body: Data(body.utf8))
                published += 1
                if to == 2 { teamPublished += 1 }
            case 20..<55:  // a member acts on a device (online or not)
                let rows = try (await device.store.perform { try $0.window(view: .all, limit: 30, now: now) })
                guard let target = rows.randomElement(using: &network.random) else { break }
                let action: LocalChange =
                    switch Int.random(in: 0..<7, using: &network.random) {
                    case 6:  // snoozed for a few steps or past the end of the run
                        .patch(
                            StateChange(
                                userActionState: .snoozed,
                                snoozedUntil: now.addingTimeInterval(Double.random(in: 3..<400, using: &network.random).rounded())))
                    case 0: .patch(StateChange(readState: .read))
                    case 1: .patch(StateChange(readState: .unread))
                    case 2: .patch(StateChange(readState: .read, userActionState: .activated))
                    case 3: .patch(StateChange(userActionState: .dismissed))
                    case 4: .patch(StateChange(userActionState: .noInteraction))
                    default: network.chance(0.3) ? .delete : .patch(StateChange(userActionState: .dismissed))
                    }
                _ = try await device.store.perform { try $0.record([(target.id, action)], now: now) }
            case 55..<75:  // a device syncs (may fail half way)
                _ = try? await device.engine.sync()
            case 75..<82:  // a device only flushes
                _ = try? await device.engine.flush()
            case 82..<86:  // bob leaves the team, or joins it again
                if bobInTeam {
                    try await service.teams.removeMember(team: "ops", by: bob.id, user: "bob")
                } else {
                    _ = try await service.teams.setMember(team: "ops", by: alice.id, body: Data(#"{"user":"bob"}"#.utf8))
                }
                bobInTeam.toggle()
                membershipChanges += 1
            default:  // a device goes offline or comes back
                if network.offline.contains(device.index) { network.offline.remove(device.index) } else { network.offline.insert(device.index) }
            }
        }

        // Quiet: everyone online, no faults; sync until every outbox is empty and nothing moves.
        network.offline = []
        network.faults = false
        var settled = false
        var last: [String] = []
        for _ in 0..<20 where !settled {
            last = []
            for device in devices {
                do { _ = try await device.engine.sync() } catch { last.append("device \(device.index) sync: \(error)") }
            }
            var done = true
            for (index, device) in devices.enumerated() {
                let latest = String(try await service.inbox.latestCursor(userId: users[index]))
                let pending = try (await device.store.perform { try $0.outboxCount() })
                let cursor = try (await device.store.perform { try $0.cursor() })
                if pending != 0 || cursor != latest {
                    done = false
                    last.append("device \(index): cursor \(cursor ?? "-"), latest \(latest), outbox \(pending)")
                }
            }
            settled = done
        }
        if !settled { return "20 quiet rounds did not settle every device on its user's latest cursor: \(last)" }
        // Each device holds exactly its user's notifications as the service has them: the team's
        // among them (one state for both members) while bob is in the team, and not when he left.
        var teamStates: [String: String] = [:]
        for (index, device) in devices.enumerated() {
            let truth = try await service.inbox.list(userId: users[index], view: .all, top: 10_000, skip: 0)
            let local = try (await device.store.perform { try $0.window(view: .all, limit: 10_000, now: clock.now()) })
            if local.count != truth.count {
                let extra = local.filter { l in !truth.contains { $0.id == l.id } }
                let missing = truth.filter { t in !local.contains { $0.id == t.id } }
                return
                    "device \(index): \(local.count) notifications, the service \(truth.count); only on the device \(extra), only on the service \(missing); bob in team \(bobInTeam)"
            }
            for (mine, theirs) in zip(local, truth) where mine != theirs {
                return "device \(index) differs on \(theirs.id):\n  device  \(mine)\n  service \(theirs)"
            }
            for n in truth where n.team != nil {
                let state = "\(n.readState) \(n.userActionState)"
                if let other = teamStates[n.id], other != state { return "team notification \(n.id): \(other) for one member, \(state) for another" }
                teamStates[n.id] = state
            }
            // The counts each side keeps as data (the service's `view_counts`, the device's block
            // counts and its High Unread) equal a recount of the rows.
            let now = clock.now()
            var recounted = ViewCounts()
            for n in truth { recounted.add(n, now: now) }
            let kept = try await service.inbox.counts(userId: users[index])
            if kept != recounted { return "user of device \(index): the service keeps \(kept), its rows count \(recounted)" }
            let badge = try (await device.store.perform { try $0.badge(view: .unread, now: now) })
            let highUnread = truth.filter { NotificationView.unread.contains($0, now: now) && $0.priority == .high }.count
            if badge.counts != recounted || badge.highUnread != highUnread {
                return "device \(index): keeps \(badge.counts) and \(badge.highUnread) High, its rows count \(recounted) and \(highUnread)"
            }
            let teamRows = truth.filter { $0.team == "ops" }.count
            if index >= 2 && !bobInTeam && teamRows > 0 { return "device \(index): bob left the team but still has \(teamRows) of its notifications" }
        }
        if teamPublished == 0 || membershipChanges == 0 || published < 10 {
            return
                "the simulation published \(teamPublished) team notifications and changed membership \(membershipChanges) times: it tests too little"
        }
        return nil
    }
}
