import Foundation
import NottyCore
import NottySync
import NottyTestSupport
import Testing

@Suite("Heartbeats end to end: notty heartbeat, curl as the job, notty serve and two devices (PROTOCOL.md §16.3)", .timeLimit(.minutes(5)))
struct HeartbeatEndToEndTests {
    @Test(
        "notty heartbeat add prints a ping URL that curl pings; no ping for every + grace and B has 'NAME: no ping for …'; the next ping dismisses it on B; /fail reports at once; pause, --list, remove (then 404); bad input is one line"
    )
    func heartbeat() async throws {
        let world = try await TwoDevices()
        let bad = try await world.a.run(["heartbeat", "add", "nightly", "--every", "5s"])
        #expect(bad.status != 0 && bad.err.contains("--every is from 10s to 30d") && bad.err.split(separator: "\n").count == 1, "\(bad.err)")

        let made = try await world.a.run(["heartbeat", "add", "nightly", "--every", "10s", "--grace", "0s", "--message", "the nightly export"])
        #expect(made.status == 0, "\(made.err)")
        let url = try #require(made.out.split(separator: "\n").last.map(String.init), "\(made.out)")
        #expect(url.hasPrefix("\(world.service.url)/v1/heartbeats/"), "\(made.out)")
        let taken = try await world.a.run(["heartbeat", "add", "nightly", "--every", "1h"])
        #expect(taken.status != 0 && taken.err.contains("a heartbeat named nightly already"), "\(taken.err)")

        func curl(_ arguments: [String], _ target: String) async throws -> String {
            try await Repository.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}"] + arguments + [target]).output
        }
        #expect(try await curl([], url) == "200")
        let listed = try await world.a.run(["heartbeat", "--list"])
        #expect(listed.out.contains("nightly  every 10s, grace 0s  up  last ping "), "\(listed.out)")
        let info = try NottyJSON.decoder.decode(HeartbeatInfo.self, from: Data(try await world.a.run(["heartbeat", "--list", "--json"]).out.utf8))
        let due = try #require(info.lastPingDateTime).addingTimeInterval(10)

        // Watched through the service's API (one request a tick, not two processes), then on B.
        let bearer = try await token(world.service.url, ["grant_type": "password", "username": "alice", "password": "s3cret-pw"])
        func late() async throws -> UserNotification? {
            let answer = try await ServiceClient.send(
                .GET, world.service.url + "/v1/me/notifications/changes?since=0&limit=1000", headers: [("Authorization", "Bearer \(bearer)")])
            return try NottyJSON.decoder.decode(ChangesPage.self, from: answer.body).changes.first { $0.targetHostName == Heartbeat.hostName }
        }
        func onB() async throws -> UserNotification? {
            try await world.b.syncedNotifications().first { $0.targetHostName == Heartbeat.hostName }
        }
        // No ping for 10 s: published right after its due time, and B has it.
        var found: UserNotification?
        #expect(
            try await eventually(timeout: .seconds(60), every: .milliseconds(100)) {
                found = try await late()
                return found != nil
            })
        let notification = try #require(found)
        #expect(notification.payload.visualContent?.title.hasPrefix("nightly: no ping for 1") == true, "\(notification)")
        #expect(notification.payload.visualContent?.body == "the nightly export" && notification.priority == .high)
        let lateness = notification.createdDateTime.timeIntervalSince(due)
        print("a heartbeat's late notification was published \(lateness) s after its due time")
        #expect(lateness >= 0 && lateness < 10, "announced \(lateness) s after its due time")
        #expect(try await onB()?.id == notification.id)
        #expect(try await world.a.run(["heartbeat", "--list"]).out.contains("nightly  every 10s, grace 0s  late"))

        // The next ping: dismissed on B.
        #expect(try await curl(["-X", "POST", "-d", "ok"], url) == "200")
        #expect(try await eventually(timeout: .seconds(30), every: .milliseconds(100)) { try await late()?.userActionState == .dismissed })
        #expect(try await onB()?.userActionState == .dismissed)
        // A failure: at once, new again on B.
        #expect(try await curl([], url + "/fail") == "200")
        let failed = try await onB()
        #expect(
            failed?.payload.visualContent?.title == "nightly: reported a failure" && failed?.userActionState == .noInteraction,
            "\(String(describing: failed))")
        #expect(try await world.a.run(["heartbeat", "--list"]).out.contains("nightly  every 10s, grace 0s  failed"))

        let paused = try await world.a.run(["heartbeat", "pause", "nightly"])
        #expect(paused.status == 0 && paused.out.contains("paused"), "\(paused.out)\(paused.err)")
        let json = try await world.b.run(["heartbeat", "--list", "--json"])
        #expect(json.status == 0 && json.out.contains(#""state":"paused""#), "\(json.out)\(json.err)")
        let removed = try await world.a.run(["heartbeat", "remove", "nightly"])
        #expect(removed.status == 0 && removed.out.contains("removed nightly"))
        #expect(try await curl([], url) == "404")
        let missing = try await world.a.run(["heartbeat", "remove", "nightly"])
        #expect(missing.status != 0 && missing.err.contains("no heartbeat named nightly"), "\(missing.err)")
    }

    @Test(
        "a 10 s heartbeat with 2 s grace pinged once, the service killed (SIGKILL) and restarted before it is due: announced 12 s after the ping, once, and the next ping dismisses it on B"
    )
    func restart() async throws {
        let world = try await TwoDevices()
        let made = try await world.a.run(["heartbeat", "add", "etl", "--every", "10s", "--grace", "2s"])
        #expect(made.status == 0, "\(made.err)")
        let url = try #require(made.out.split(separator: "\n").last.map(String.init), "\(made.out)")
        func curl(_ target: String) async throws -> String {
            try await Repository.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", target]).output
        }
        #expect(try await curl(url) == "200")
        let info = try NottyJSON.decoder.decode(HeartbeatInfo.self, from: Data(try await world.a.run(["heartbeat", "--list", "--json"]).out.utf8))
        let due = try #require(info.lastPingDateTime).addingTimeInterval(12)
        #expect(info.dueDateTime == due, "due every + grace after the ping: \(info)")

        // Killed with no chance to finish anything, and started again on the same port and store.
        world.service.sigkill()
        try await world.service.start(port: world.service.port)
        let bearer = try await token(world.service.url, ["grant_type": "password", "username": "alice", "password": "s3cret-pw"])
        func late() async throws -> [UserNotification] {
            let answer = try await ServiceClient.send(
                .GET, world.service.url + "/v1/me/notifications/changes?since=0&limit=1000", headers: [("Authorization", "Bearer \(bearer)")])
            return try NottyJSON.decoder.decode(ChangesPage.self, from: answer.body).changes.filter { $0.targetHostName == Heartbeat.hostName }
        }
        var found: [UserNotification] = []
        #expect(
            try await eventually(timeout: .seconds(60), every: .milliseconds(100)) {
                found = try await late()
                return !found.isEmpty
            })
        let notification = try #require(found.first)
        let lateness = notification.createdDateTime.timeIntervalSince(due)
        print("after a restart, a heartbeat's late notification was published \(lateness) s after its due time")
        #expect(lateness >= 0 && lateness < 10, "announced \(lateness) s after its due time (12 s after the ping)")
        #expect(found.count == 1 && notification.payload.visualContent?.title.hasPrefix("etl: no ping for 1") == true, "\(found)")

        // The next ping dismisses it on B; it was announced once (one notification, never re-published).
        #expect(try await curl(url) == "200")
        #expect(
            try await eventually(timeout: .seconds(30), every: .milliseconds(100)) {
                try await world.b.syncedNotifications().first { $0.id == notification.id }?.userActionState == .dismissed
            })
        let after = try await late()
        #expect(after.count == 1 && after.first?.createdDateTime == notification.createdDateTime, "\(after)")
        let log = (try? String(contentsOf: world.service.log, encoding: .utf8)) ?? ""
        #expect(log.components(separatedBy: "heartbeats are late").count - 1 == 1, "announced more than once:\n\(log.suffix(2000))")
    }
}
