import Foundation
import HTTPTypes
import HummingbirdTesting
import NottyCore
import NottyTestSupport
import Testing

@testable import NottyService

extension World {
    /// Makes a heartbeat; its ping URL's path (`/v1/heartbeats/TOKEN`).
    func heartbeat(_ client: any TestClientProtocol, _ json: String, query: String = "") async throws -> String {
        let made = try await client.call(.post, "/v1/me/heartbeats", token: userToken, json: json)
        guard made.status == .created, let url = made.string("pingUrl"), let path = URLComponents(string: url)?.path else {
            throw SupportError("making a heartbeat: \(made.status) \(made.text)")
        }
        return path
    }

    /// The user's heartbeat notification (one a heartbeat), if any.
    func heartbeatNotification(_ client: any TestClientProtocol) async throws -> UserNotification? {
        try await all(client).first { $0.targetHostName == Heartbeat.hostName }
    }

    /// Runs the announcing job (the service's own runs beside it, every 250 ms) until the user's
    /// heartbeat notification is new since `after` (active, not dismissed); it, or nil after 10 s.
    func announced(_ client: any TestClientProtocol, by heartbeats: any HeartbeatService, after: Date? = nil) async throws -> UserNotification? {
        var found: UserNotification?
        _ = try await eventually(timeout: .seconds(10), every: .milliseconds(50)) {
            _ = try await heartbeats.announceOverdue()
            found = try await heartbeatNotification(client)
            return found.map { $0.userActionState == .noInteraction && $0.createdDateTime > (after ?? .distantPast) } ?? false
        }
        return found.flatMap { $0.userActionState == .noInteraction && $0.createdDateTime > (after ?? .distantPast) ? $0 : nil }
    }

    func heartbeats(_ client: any TestClientProtocol, team: String? = nil) async throws -> [HeartbeatInfo] {
        try await client.call(.get, "/v1/me/heartbeats" + (team.map { "?team=\($0)" } ?? ""), token: userToken).decode(HeartbeatList.self).value
    }
}

@Suite("Heartbeats: a job that stops pinging is noticed (PROTOCOL.md §16.3)", .timeLimit(.minutes(5)))
struct HeartbeatTests {
    @Test(
        "a heartbeat goes late once after every + grace (High, in the feed), a ping dismisses it everywhere, /fail reports at once, pause holds it, remove ends its URL; every refusal has words",
        arguments: Backend.available)
    func lifecycle(backend: Backend) async throws {
        let clock = ManualClock()
        let harness = try await ServiceHarness(backend, clock: clock)
        let heartbeats = harness.service.heartbeats
        try await harness.router { client in
            let alice = try await harness.world(client)
            // Refusals, each with words; nothing made.
            for (json, words) in [
                (#"{"name":"backup","every":5}"#, "every is required: the seconds between two pings, from 10"),
                (#"{"name":"a/b","every":60}"#, "without slashes"),
                (#"{"every":60}"#, "name is required"),
                (#"{"name":"backup","every":60,"priority":"urgent"}"#, "priority is high, normal or low"),
                (#"{"name":"backup","every":60,"grace":-1}"#, "grace is 0 to"),
                (#"{"name":"backup","every":60,"team":"ops"}"#, "no team named ops"),
            ] {
                let refused = try await client.call(.post, "/v1/me/heartbeats", token: alice.userToken, json: json)
                #expect([.badRequest, .notFound].contains(refused.status) && refused.text.contains(words), "\(json): \(refused.text)")
            }
            #expect(try await alice.heartbeats(client).isEmpty)

            let ping = try await alice.heartbeat(client, #"{"name":"backup","every":60,"message":"the nightly backup of db1"}"#)
            #expect(ping.hasPrefix("/v1/heartbeats/") && ping.count > 40)
            let again = try await client.call(.post, "/v1/me/heartbeats", token: alice.userToken, json: #"{"name":"backup","every":60}"#)
            #expect(again.status == .badRequest && again.text.contains("have a heartbeat named backup already"), "\(again.text)")
            var listed = try #require(try await alice.heartbeats(client).first)
            #expect(listed.name == "backup" && listed.every == 60 && listed.grace == 6 && listed.state == .up && listed.pingUrl == nil)

            // Pinged in every method; due every + grace after the last.
            for method in [HTTPRequest.Method.get, .head, .post] {
                let answer = try await client.call(method, ping)
                #expect(answer.status == .ok && answer.text == (method == .head ? "" : "OK\n"), "\(method)")
            }
            clock.advance(by: 65)
            _ = try await heartbeats.announceOverdue()
            #expect(try await alice.heartbeatNotification(client) == nil, "not yet due")
            clock.advance(by: 1.5)
            var late = try #require(try await alice.announced(client, by: heartbeats))
            clock.advance(by: 2)
            _ = try await heartbeats.announceOverdue()
            #expect(try await alice.heartbeatNotification(client) == late, "announced once")
            #expect(late.payload.visualContent?.title == "backup: no ping for 1m 6s" && late.priority == .high && late.groupName == "heartbeats")
            #expect(late.payload.visualContent?.body == "the nightly backup of db1" && late.userActionState == .noInteraction)
            listed = try #require(try await alice.heartbeats(client).first)
            #expect(listed.state == .late && !listed.failed)

            // The next ping dismisses it everywhere, naming the ping.
            #expect(try await client.call(.get, ping).status == .ok)
            late = try await alice.notification(client, late.id)
            #expect(late.userActionState == .dismissed && late.changedBy?.user == "heartbeat ping", "\(late)")
            #expect(try await alice.heartbeats(client).first?.state == .up)

            // A failure is reported at once (the same notification, new again); late then adds nothing.
            #expect(try await client.call(.post, ping + "/fail").status == .ok)
            var failed = try #require(try await alice.all(client).first { $0.targetHostName == Heartbeat.hostName })
            #expect(
                failed.id == late.id && failed.payload.visualContent?.title == "backup: reported a failure"
                    && failed.userActionState == .noInteraction)
            listed = try #require(try await alice.heartbeats(client).first)
            #expect(listed.state == .late && listed.failed)
            clock.advance(by: 600)
            _ = try await heartbeats.announceOverdue()
            #expect(try await alice.heartbeatNotification(client) == failed, "a failure out is not announced again as late")
            #expect(try await client.call(.head, ping).status == .ok)
            failed = try await alice.notification(client, failed.id)
            #expect(failed.userActionState == .dismissed)

            // Paused: never late; resumed: due every + grace from then.
            let paused = try await client.call(.post, "/v1/me/heartbeats/backup/pause", token: alice.userToken, json: "{}")
            #expect(paused.status == .ok && paused.string("state") == "paused", "\(paused.text)")
            clock.advance(by: 2000)
            _ = try await heartbeats.announceOverdue()
            #expect(try await alice.heartbeatNotification(client)?.userActionState == .dismissed, "paused: not announced")
            let resumed = try await client.call(.post, "/v1/me/heartbeats/backup/resume", token: alice.userToken, json: "{}")
            #expect(resumed.status == .ok && resumed.string("state") == "up", "\(resumed.status) \(resumed.text)")
            clock.advance(by: 60)
            _ = try await heartbeats.announceOverdue()
            #expect(try await alice.heartbeatNotification(client)?.userActionState == .dismissed, "resumed: not due yet")
            clock.advance(by: 7)
            late = try #require(try await alice.announced(client, by: heartbeats, after: failed.createdDateTime))

            // Removed: its notification taken back, its URL gone.
            #expect(try await client.call(.delete, "/v1/me/heartbeats/backup", token: alice.userToken).status == .noContent)
            #expect(try await alice.notification(client, late.id).userActionState == .dismissed)
            let gone = try await client.call(.get, ping)
            #expect(gone.status == .notFound && gone.text.contains("no such heartbeat"), "\(gone.text)")
            #expect(try await client.call(.delete, "/v1/me/heartbeats/backup", token: alice.userToken).status == .notFound)
            #expect(try await client.call(.get, "/v1/heartbeats/not-a-token").status == .notFound)
            #expect(try await client.call(.get, "/v1/me/heartbeats").status == .unauthorized)
            // No app may publish as the heartbeats.
            await #expect(throws: ServiceError.self) { _ = try await harness.service.admin.addApp(hostName: "Heartbeat.Notty") }
        }
    }

    @Test(
        "a team's heartbeat: its owners make, pause and remove it, a member lists it but may not change it, someone outside sees nothing; late, it reaches every member as the team's",
        arguments: Backend.available)
    func team(backend: Backend) async throws {
        let clock = ManualClock()
        let harness = try await ServiceHarness(backend, clock: clock)
        try await harness.router { client in
            let alice = try await harness.world(client)
            let bob = try await harness.world(client, user: "bob", app: (alice.clientId, alice.clientSecret))
            let carol = try await harness.world(client, user: "carol", app: (alice.clientId, alice.clientSecret))
            try await harness.service.teams.create(name: "ops", owner: "alice")
            #expect(try await client.call(.post, "/v1/teams/ops/members", token: alice.userToken, json: #"{"user":"bob"}"#).status == .ok)

            let denied = try await client.call(.post, "/v1/me/heartbeats", token: bob.userToken, json: #"{"name":"etl","every":30,"team":"ops"}"#)
            #expect(denied.status == .forbidden && denied.text.contains("only the owners of ops"), "\(denied.text)")
            _ = try await alice.heartbeat(client, #"{"name":"etl","every":30,"grace":0,"team":"ops","priority":"low"}"#)
            #expect(try await bob.heartbeats(client, team: "ops").map(\.name) == ["etl"])
            #expect(try await bob.heartbeats(client).isEmpty, "a team's heartbeat is not bob's own")
            for (method, path) in [
                (HTTPRequest.Method.post, "/v1/me/heartbeats/etl/pause?team=ops"), (.delete, "/v1/me/heartbeats/etl?team=ops"),
            ] {
                let refused = try await client.call(method, path, token: bob.userToken, json: "{}")
                #expect(refused.status == .forbidden, "\(path): \(refused.text)")
            }
            #expect(try await client.call(.get, "/v1/me/heartbeats?team=ops", token: carol.userToken).status == .notFound)
            #expect(try await client.call(.delete, "/v1/me/heartbeats/etl", token: carol.userToken).status == .notFound)

            clock.advance(by: 31)
            let late = try #require(try await bob.announced(client, by: harness.service.heartbeats))
            #expect(late.team == "ops" && late.priority == .low && late.payload.visualContent?.title == "etl: no ping for 31s", "\(late)")
            #expect(try await carol.all(client).isEmpty)
            #expect(try await client.call(.delete, "/v1/me/heartbeats/etl?team=ops", token: alice.userToken).status == .noContent)
            #expect(try await bob.notification(client, late.id).userActionState == .dismissed)
        }
    }

    @Test(
        "Opsgenie's Heartbeat API on a hook's key: Opsgenie's shapes and 422s, the key's feed only (another user's key sees none of it, a team's key makes the team's), a wrong key 401",
        arguments: Backend.available)
    func opsgenie(backend: Backend) async throws {
        let harness = try await ServiceHarness(backend)
        try await harness.router { client in
            let alice = try await harness.world(client)
            let bob = try await harness.world(client, user: "bob", app: (alice.clientId, alice.clientSecret))
            let key = try await alice.hookToken(client), bobKey = try await bob.hookToken(client)
            for (json, field) in [
                (#"{"interval":5}"#, "name"), (#"{"name":"etl","interval":5,"intervalUnit":"weeks"}"#, "intervalUnit"),
                (#"{"name":"etl","interval":0}"#, "interval"), (#"{"name":"etl","interval":50,"intervalUnit":"days"}"#, "interval"),
                (#"{"name":"etl","interval":5,"alertPriority":"P9"}"#, "alertPriority"), (#"{"name":"a/b","interval":5}"#, "name"),
            ] {
                let refused = try await client.opsgenie(.post, "/v2/heartbeats", key: key, json)
                guard case .object(let errors)? = refused["errors"] else {
                    Issue.record("\(json): \(refused.text)")
                    continue
                }
                #expect(refused.status == .unprocessableContent && errors[field] != nil, "\(json): \(refused.text)")
            }
            let made = try await client.opsgenie(
                .post, "/v2/heartbeats", key: key, #"{"name":"etl","interval":3,"intervalUnit":"hours","enabled":false}"#)
            #expect(made.status == .created && made.text.contains(#""enabled":false"#) && made.string("requestId") != nil, "\(made.text)")
            let got = try await client.opsgenie(.get, "/v2/heartbeats/etl", key: key)
            guard case .object(let data)? = got["data"] else { throw SupportError("\(got.text)") }
            #expect(
                data["interval"] == .number(3) && data["intervalUnit"] == .string("hours") && data["alertPriority"] == .string("P1"), "\(got.text)")
            #expect(try await alice.heartbeats(client).map(\.state) == [.paused])
            // Another user's key: none of it.
            #expect(try await client.opsgenie(.get, "/v2/heartbeats/etl", key: bobKey).status == .notFound)
            #expect(try await client.opsgenie(.post, "/v2/heartbeats/etl/ping", key: bobKey).status == .notFound)
            #expect(try await client.opsgenie(.delete, "/v2/heartbeats/etl", key: bobKey).status == .notFound)
            let bobs = try await client.opsgenie(.get, "/v2/heartbeats", key: bobKey)
            #expect(bobs.status == .ok && bobs.text.contains(#""heartbeats":[]"#), "\(bobs.text)")
            #expect(try await client.opsgenie(.get, "/v2/heartbeats", key: "not-a-key").status == .unauthorized)
            #expect(try await client.opsgenie(.get, "/v2/heartbeats", key: nil).status == .unauthorized)
            let renamed = try await client.opsgenie(.patch, "/v2/heartbeats/etl", key: key, #"{"name":"other"}"#)
            #expect(renamed.status == .unprocessableContent, "\(renamed.text)")
            let pinged = try await client.opsgenie(.get, "/v2/heartbeats/etl/ping", key: key)
            #expect(pinged.status == .accepted && pinged.string("result") == "PONG - Heartbeat received", "\(pinged.text)")
            #expect(try await client.opsgenie(.post, "/v2/heartbeats/etl/enable", key: key).status == .ok)
            #expect(try await alice.heartbeats(client).first?.lastPingDateTime != nil)

            // A team's key makes the team's heartbeat.
            try await harness.service.teams.create(name: "ops", owner: "alice")
            let hook = try await client.call(
                .post, "/v1/me/subscriptions", token: alice.userToken, json: #"{"targetHostName":"\#(alice.host)","platform":"webhook","team":"ops"}"#
            )
            let teamKey = String(try #require(hook.string("webhookUrl")?.split(separator: "/").last))
            #expect(
                try await client.opsgenie(.post, "/v2/heartbeats", key: teamKey, #"{"name":"backup","interval":1,"intervalUnit":"days"}"#).status
                    == .created)
            #expect(try await alice.heartbeats(client, team: "ops").map(\.name) == ["backup"])
            #expect(try await alice.heartbeats(client).map(\.name) == ["etl"])
            let deleted = try await client.opsgenie(.delete, "/v2/heartbeats/backup", key: teamKey)
            #expect(deleted.status == .ok && deleted.string("result") == "Deleted", "\(deleted.text)")
        }
    }

    @Test(
        "two instances on one PostgreSQL looking at once announce each late heartbeat once (neither runs its own job here)",
        .enabled(if: Backend.available.contains(.postgres)))
    func twoInstances() async throws {
        let clock = ManualClock()
        let first = try await ServiceHarness(.postgres, clock: clock)
        let second = try await ServiceHarness(sharingDatabaseOf: first)
        defer {
            Task {
                try? await first.storage.close()
                try? await second.storage.close()
            }
        }
        let alice = try await first.service.admin.addUser(name: "alice", password: "s3cret-alice")
        for n in 1...20 {
            _ = try await first.service.heartbeats.add(userId: alice.id, HeartbeatRequest(name: "job-\(n)", every: 10), baseURL: "http://127.0.0.1")
        }
        clock.advance(by: 16)
        async let one = first.service.heartbeats.announceOverdue()
        async let two = second.service.heartbeats.announceOverdue()
        let (a, b) = try await (one, two)
        #expect(a + b == 20, "\(a) + \(b)")
        let feed = try #require(try await first.storage.changes(userId: alice.id, since: 0, limit: 100))
        #expect(feed.changes.filter { $0.targetHostName == Heartbeat.hostName }.count == 20)
        clock.advance(by: 2)
        #expect(try await first.service.heartbeats.announceOverdue() + second.service.heartbeats.announceOverdue() == 0)
    }
}
