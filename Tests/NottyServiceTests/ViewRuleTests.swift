import Foundation
import NottyCore
import Testing

@testable import NottyHTTP
@testable import NottyService
@testable import NottyServicePostgres
@testable import NottyServiceSQLite

/// PROTOCOL.md §1's view rule is written once, in Core (`NotificationView.partition` and its SQL form
/// `sqlCondition`); this checks what each backend's SQL makes of every combination of states
/// against the Swift rule.
@Suite("The view rule in SQL agrees with Core's, on both backends", .timeLimit(.minutes(5)))
struct ViewRuleTests {
    @Test(
        "every read state × action × snooze (none, running, ended): list and counts put each notification where partition says",
        arguments: Backend.available)
    func everyCombination(backend: Backend) async throws {
        let clock = ManualClock()
        let harness = try await ServiceHarness(backend, clock: clock)
        try await harness.router { client in
            let world = try await harness.world(client)
            let actions: [(UserActionState, snoozeHours: Double?)] = [
                (.noInteraction, nil), (.activated, nil), (.dismissed, nil), (.snoozed, 1), (.snoozed, 5),
            ]
            var ids: [String] = []
            for read in [ReadState.unread, .read] {
                for (action, hours) in actions {
                    let published = try await world.publish(client, id: "\(read.rawValue)-\(action.rawValue)-\(hours ?? 0)")
                    let id = try #require(published.string("id"))
                    let until = hours.map { #","snoozedUntil":"\#(ISOTime.format(clock.now().addingTimeInterval($0 * 3600)))""# } ?? ""
                    let patched = try await client.call(
                        .patch, "/v1/me/notifications/\(id)", token: world.userToken,
                        json: #"{"readState":"\#(read.rawValue)","userActionState":"\#(action.rawValue)"\#(until)}"#)
                    #expect(patched.status == .ok, "\(patched.text)")
                    ids.append(id)
                }
            }
            // Two hours on: the 1-hour snoozes have ended, the 5-hour ones run.
            clock.advance(by: 2 * 3600)
            let now = clock.now()
            let all = try await harness.storage.list(
                userId: try #require(try await harness.storage.user(name: "alice")?.id), view: .all, top: 100, skip: 0, now: now)
            #expect(Set(all.map(\.id)) == Set(ids))
            var expected = ViewCounts()
            expected.all = all.count
            for n in all { expected[NotificationView.current(of: n, now: now)!] += 1 }
            #expect(expected.unread == 2 && expected.read == 2 && expected.snoozed == 2, "the combinations cover every view: \(expected)")
            let userId = try #require(try await harness.storage.user(name: "alice")?.id)
            #expect(try await harness.storage.counts(userId: userId, now: now) == expected)
            for view in NotificationView.allCases {
                let listed = try await harness.storage.list(userId: userId, view: view, top: 100, skip: 0, now: now)
                let wanted = all.filter { view.contains($0, now: now) }
                #expect(Set(listed.map(\.id)) == Set(wanted.map(\.id)), "\(view)")
            }
        }
    }
}
