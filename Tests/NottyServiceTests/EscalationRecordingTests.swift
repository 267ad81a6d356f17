import Foundation
import NottyCore
import NottyPaging
import NottyRecords
import NottyService
import NottyTestSupport
import Testing

/// What escalation's storage keeps when its steps interleave as they do on a busy service: the
/// engine's planner, sender and recorder each run on their own, so a change may be planned
/// only after a page about it has been recorded.
@Suite("Escalation's records in storage (PROTOCOL.md §11)", .timeLimit(.minutes(5)))
struct EscalationRecordingTests {
    @Test(
        "a read that comes while its page is on its way, planned only after the page is recorded, still sends the page's retraction",
        arguments: Backend.available)
    func readWhilePaging(backend: Backend) async throws {
        let directory = Repository.temporaryDirectory("notty-escalation-records")
        defer { try? FileManager.default.removeItem(at: directory) }
        let storage = try await backend.makeStorage(in: directory)
        let outcome = await Result {
            try await storage.createUser(UserRecord(id: "u-1", userName: "alice", displayName: "Alice", passwordHash: "x"))
            let start = Date()
            let rule = EscalationRule(id: "rule-1", name: "disk", afterSeconds: 5, targets: ["command:apprise"], createdDateTime: start)
            #expect(try await storage.insertEscalationRule(rule, userId: "u-1", limit: EscalationRule.maxRulesPerUser))
            func plan(at now: Date) async throws {
                _ = try await storage.planEscalations(userIds: ["u-1"], limit: 100, now: now) { input in
                    EscalationPlanner.plan(input) { "d-" + UUID().uuidString }
                }
            }
            try await plan(at: start)  // the user's escalation cursor starts here
            let request = PublishRequest(
                appNotificationId: "disk", priority: .high,
                payload: NotificationPayload(rawContent: nil, visualContent: VisualContent(title: "Disk full", body: nil)))
            let published = try await storage.publish(
                PublishInput(userId: "u-1", hostName: "h.example", request: request, expiration: start.addingTimeInterval(3600), now: start))
            try await plan(at: start)  // its clock starts
            let due = start.addingTimeInterval(6)
            let fired = try await storage.fireDueEscalations(now: due, limit: 10) { [due] track in
                EscalationPlanner.fire(track, now: due) { "d-" + UUID().uuidString }
            }
            #expect(fired == 1)
            // The page is on its way (claimed) when the notification is read on a device…
            let page = try #require(try await storage.claimEscalationDeliveries(now: due, lease: due.addingTimeInterval(60), limit: 10).first)
            #expect(page.event == .escalated)
            let read = Mutation(id: published.id, change: StateChange(readState: .read), mutationId: "m-1")
            _ = try await storage.mutate(userId: "u-1", mutations: [read], now: due)
            // …and the page is recorded (its log moves the notification in the feed) before the
            // planner gets to the read.
            let log = EscalationRecord(target: "command:apprise", rule: "disk", at: due, outcome: "delivered")
            try await storage.finishEscalationDeliveries([FinishedDelivery(delivery: page, result: .delivered, log: log)], now: due)
            try await plan(at: due)
            let after = try await storage.claimEscalationDeliveries(
                now: due.addingTimeInterval(1), lease: due.addingTimeInterval(61), limit: 10)
            #expect(after.map(\.event) == [.handled], "the read was not planned: \(after.map(\.event))")
            #expect(after.first?.target == "command:apprise")
        }
        try? await storage.close()
        try outcome.get()
    }
}
