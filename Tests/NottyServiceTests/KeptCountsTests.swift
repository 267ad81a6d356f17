import Foundation
import NottyCore
import NottyTestSupport
import Testing

@testable import NottyHTTP
@testable import NottyService
@testable import NottyServicePostgres
@testable import NottyServiceSQLite

/// The counts `GET /v1/me/notifications/counts` reads are kept as data (``KeptCounts``): a
/// seeded sequence of everything that moves a row (publishes personal and for a team, re-publishes,
/// state changes one at a time and in batches, snoozes that end, expiries before and after the
/// sweeper, deletes, a member leaving and joining, history purged) and after every step each
/// member's counts are recounted from their rows and compared.
@Suite("Counts kept as data agree with a recount of the rows", .timeLimit(.minutes(5)))
struct KeptCountsTests {
    @Test("a seeded sequence of every kind of write; after each step the counts equal a recount", arguments: Backend.available)
    func recount(backend: Backend) async throws {
        for seed: UInt64 in [1, 2, 3] { try await Self.run(backend: backend, seed: seed, steps: 160) }
    }

    static func run(backend: Backend, seed: UInt64, steps: Int) async throws {
        let clock = ManualClock(Date(timeIntervalSince1970: 1_800_000_000))
        let harness = try await ServiceHarness(backend, clock: clock)
        try await harness.router { client in
            let (alice, bob) = try await harness.aliceAndBobInOps(client)
            let subscribed = try await client.call(
                .post, "/v1/me/subscriptions", token: alice.userToken, json: #"{"targetHostName":"\#(alice.host)","team":"ops"}"#)
            var team = alice
            team.unsId = try #require(subscribed.string("userNotificationSubscriptionId"))
            let members = [(alice, try await alice.userId(client)), (bob, try await bob.userId(client))]

            var random = SeededRandom(seed: seed)
            // Each member's live notifications at the last recount (what they can act on), and
            // every id ever published (acting on one gone is a write too: it must count nothing).
            var live: [String: [String]] = [:]
            var ids: [String] = []
            var bobInTeam = true
            var kinds: [String: Int] = [:]
            var snoozedSeen = 0
            for step in 0..<steps {
                clock.advance(by: 7)
                let (actor, actorId) = members[Int.random(in: 0..<2, using: &random)]
                let target = (Int.random(in: 0..<10, using: &random) == 0 ? ids : live[actorId, default: []]).randomElement(using: &random)
                let roll = Int.random(in: 0..<100, using: &random)
                let kind: String
                switch roll {
                case 0..<30:
                    kind = "publish"
                    let publisher = [alice, bob, team][Int.random(in: 0..<3, using: &random)]
                    // Some expire within a minute or two; some reuse an id (a re-publish).
                    let expiry =
                        Bool.random(using: &random)
                        ? #","expirationDateTime":"\#(ISOTime.format(clock.now().addingTimeInterval(Double.random(in: 10..<120, using: &random))))""#
                        : ""
                    let reply = try await publisher.publish(
                        client, id: "n\(Int.random(in: 0..<(step + 5), using: &random))",
                        extra: expiry + (Bool.random(using: &random) ? #","priority":"High""# : ""))
                    if let id = reply.string("id") { ids.append(id) }
                case 30..<65:
                    kind = "patch"
                    guard let target else { continue }
                    let state = [
                        #"{"readState":"Read"}"#, #"{"readState":"Unread"}"#, #"{"userActionState":"Activated","readState":"Read"}"#,
                        #"{"userActionState":"Dismissed"}"#, #"{"userActionState":"NoInteraction"}"#,
                        #"{"userActionState":"Snoozed","snoozedUntil":"\#(ISOTime.format(clock.now().addingTimeInterval(Double.random(in: 5..<60, using: &random))))"}"#,
                    ].randomElement(using: &random)!
                    _ = try await client.call(.patch, "/v1/me/notifications/\(target)", token: actor.userToken, json: state)
                case 65..<75:
                    kind = "batch"
                    let some = (0..<3).compactMap { _ in live[actorId, default: []].randomElement(using: &random) }
                    let mutations = some.enumerated().map { index, id in
                        index == 2 && Bool.random(using: &random)
                            ? #"{"id":"\#(id)","op":"delete","mutationId":"m\#(step)-\#(index)"}"#
                            : #"{"id":"\#(id)","readState":"\#(Bool.random(using: &random) ? "Read" : "Unread")","userActionState":"\#(Bool.random(using: &random) ? "Dismissed" : "NoInteraction")","mutationId":"m\#(step)-\#(index)"}"#
                    }
                    _ = try await client.call(
                        .post, "/v1/me/notifications/batch", token: actor.userToken, json: #"{"mutations":[\#(mutations.joined(separator: ","))]}"#)
                case 75..<82:
                    kind = "delete"
                    guard let target else { continue }
                    _ = try await client.call(.delete, "/v1/me/notifications/\(target)", token: actor.userToken)
                case 82..<90:
                    kind = "sweep"
                    _ = try await harness.service.maintenance.expireDue()
                    if Bool.random(using: &random) { try await harness.service.maintenance.purgeHistory() }
                case 90..<95:
                    kind = "membership"
                    if bobInTeam {
                        #expect(try await client.call(.delete, "/v1/teams/ops/members/bob", token: bob.userToken).status == .noContent)
                    } else {
                        #expect(try await client.call(.post, "/v1/teams/ops/members", token: alice.userToken, json: #"{"user":"bob"}"#).status == .ok)
                    }
                    bobInTeam.toggle()
                default:
                    kind = "time"
                    clock.advance(by: Double.random(in: 10..<90, using: &random))
                }
                kinds[kind, default: 0] += 1
                let now = clock.now()
                for (member, userId) in members {
                    let rows = try await harness.storage.list(userId: userId, view: .all, top: 10_000, skip: 0, now: now)
                    live[userId] = rows.map(\.id)
                    var recounted = ViewCounts()
                    for n in rows { recounted.add(n, now: now) }
                    let kept = try await harness.storage.counts(userId: userId, now: now)
                    #expect(
                        kept == recounted,
                        "seed \(seed), step \(step) (\(kind)), \(member.userToken == alice.userToken ? "alice" : "bob"): kept \(kept), rows \(recounted)"
                    )
                    if kept != recounted { return }
                    let routed = try await client.call(.get, "/v1/me/notifications/counts", token: member.userToken).decode(ViewCounts.self)
                    #expect(routed == kept)
                    if kept.snoozed > 0 { snoozedSeen += 1 }
                }
            }
            // The sequence did what it says: every kind of write, snoozes and expiries among them.
            #expect(kinds.count == 7 && snoozedSeen > 0, "\(kinds), running snoozes seen \(snoozedSeen) times")
        }
    }
}
