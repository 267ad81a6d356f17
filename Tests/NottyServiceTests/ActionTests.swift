import Foundation
import HummingbirdTesting
import NottyCore
import NottyOutbound
import NottyTestSupport
import Synchronization
import Testing

@testable import NottyHTTP
@testable import NottyService
@testable import NottyServicePostgres

/// An outbound client that records each request and answers `status` after `delay` (so that
/// presses arriving together find a run in flight).
final class ActionTarget: OutboundHTTP {
    private let sent = Mutex<[OutboundRequest]>([])
    let status: Mutex<Int>
    let delay: Duration

    init(status: Int = 200, delay: Duration = .zero) {
        self.status = Mutex(status)
        self.delay = delay
    }

    func send(_ request: OutboundRequest) async throws(OutboundError) -> OutboundResponse {
        sent.withLock { $0.append(request) }
        if delay > .zero { try? await Task.sleep(for: delay) }
        return OutboundResponse(status: status.withLock { $0 }, body: Data("a body nobody keeps".utf8))
    }

    var requests: [OutboundRequest] { sent.withLock { $0 } }
}

extension World {
    func press(_ client: any TestClientProtocol, _ id: String, _ n: Int) async throws -> Reply {
        try await client.call(.post, "/v1/me/notifications/\(id)/actions/\(n)", token: userToken)
    }
}

let actionsExtra =
    #","actions":[{"action":"http","label":"Silence 1h","url":"http://127.0.0.1:9/api/v2/silences","method":"post","headers":{"Authorization":"Bearer s3cret-token"},"body":"{\"matchers\":[]}","clear":true},{"action":"view","label":"Runbook","url":"https://wiki.example.com/runbook"}]"#

@Suite("Actions (PROTOCOL.md §12)", .timeLimit(.minutes(5)))
struct ActionTests {
    @Test(
        "an http action runs once on the service: devices see its label only, the request carries its method, headers and body, the outcome travels in the feed, clear dismisses everywhere",
        arguments: Backend.available)
    func pressOnce(backend: Backend) async throws {
        let target = ActionTarget()
        let harness = try await ServiceHarness(backend, outbound: target)
        try await harness.router { client in
            let world = try await harness.world(client)
            let published = try await world.publish(client, id: "alert-1", title: "Disk full", extra: actionsExtra)
            #expect(published.status == .created, "\(published.text)")
            let id = try #require(published.string("id"))
            // What devices see: labels, the view action's URL, never the http action's secrets.
            for reply in [
                published, try await client.call(.get, "/v1/me/notifications/\(id)", token: world.userToken),
                try await client.call(.get, "/v1/me/notifications/changes", token: world.userToken),
            ] {
                #expect(!reply.text.contains("s3cret"), "\(reply.text)")
                #expect(!reply.text.contains("api/v2/silences"), "\(reply.text)")
            }
            let shown = try await world.notification(client, id)
            #expect(shown.actions?.map(\.label) == ["Silence 1h", "Runbook"])
            #expect(shown.actions?.first?.url == nil)
            #expect(shown.actions?.last?.url == "https://wiki.example.com/runbook")

            let pressed = try await world.press(client, id, 1)
            #expect(pressed.status == .ok, "\(pressed.text)")
            #expect(pressed.string("status") == "done", "\(pressed.text)")
            #expect(pressed["httpStatus"] == .number(200), "\(pressed.text)")
            #expect(!pressed.text.contains("a body nobody keeps"))
            let request = try #require(target.requests.first)
            #expect(request.method == "POST")
            #expect(request.url == "http://127.0.0.1:9/api/v2/silences")
            #expect(request.headers.contains(OutboundHeader("Authorization", "Bearer s3cret-token")))
            #expect(request.headers.contains(OutboundHeader("Content-Type", "application/json")))
            #expect(request.body == Data(#"{"matchers":[]}"#.utf8))
            #expect(request.timeout == .seconds(15))

            // Pressed again: the recorded outcome, nothing runs.
            let again = try await world.press(client, id, 1)
            #expect(again.string("status") == "done")
            #expect(target.requests.count == 1)
            // clear: dismissed everywhere; the outcome is on the notification and in the feed.
            let after = try await world.notification(client, id)
            #expect(after.userActionState == .dismissed)
            #expect(after.readState == .read)
            #expect(after.actions?.map(\.label) == ["Silence 1h", "Runbook"], "a state change kept the actions")
            #expect(after.actionResults?.map(\.status) == [.done])
            #expect(after.actionResults?.first?.label == "Silence 1h")
            let feed = try await client.call(.get, "/v1/me/notifications/changes", token: world.userToken).decode(ChangesPage.self)
            #expect(feed.changes.first { $0.id == id }?.actionResults?.first?.httpStatus == 200)

            // A view action is the device's to open; unknown numbers and ids are clear refusals.
            #expect(try await world.press(client, id, 2).status == .badRequest)
            #expect(try await world.press(client, id, 3).status == .notFound)
            #expect(try await world.press(client, id, 4).status == .badRequest)
            #expect(try await world.press(client, "no-such-id", 1).status == .notFound)
            #expect(target.requests.count == 1)

            // A re-publish is a new occurrence: its actions run again.
            let republished = try await world.publish(client, id: "alert-1", title: "Disk full again", extra: actionsExtra)
            #expect(republished.string("id") == id)
            #expect(try await world.notification(client, id).actionResults == nil)
            #expect(try await world.press(client, id, 1).string("status") == "done")
            #expect(target.requests.count == 2)
        }
    }

    @Test(
        "a failed run is recorded with its status and runs again on the next press; a notification without clear stays", arguments: Backend.available)
    func failureRunsAgain(backend: Backend) async throws {
        let target = ActionTarget(status: 503)
        let harness = try await ServiceHarness(backend, outbound: target)
        try await harness.router { client in
            let world = try await harness.world(client)
            let extra = #","actions":[{"action":"http","label":"Restart","url":"http://127.0.0.1:9/restart"}]"#
            let id = try #require(try await world.publish(client, id: "svc", extra: extra).string("id"))
            let failed = try await world.press(client, id, 1)
            #expect(failed.string("status") == "failed", "\(failed.text)")
            #expect(failed["httpStatus"] == .number(503))
            #expect(failed.string("error") == "HTTP 503")
            #expect(try await world.notification(client, id).actionResults?.first?.status == .failed)
            target.status.withLock { $0 = 204 }
            #expect(try await world.press(client, id, 1).string("status") == "done")
            #expect(target.requests.count == 2)
            let after = try await world.notification(client, id)
            #expect(after.userActionState == .noInteraction)
            #expect(after.actionResults?.first?.httpStatus == 204)
        }
    }

    @Test("ten presses at the same instant make one request", arguments: Backend.available)
    func concurrentPresses(backend: Backend) async throws {
        let target = ActionTarget(delay: .milliseconds(300))
        let harness = try await ServiceHarness(backend, outbound: target)
        try await harness.router { client in
            let world = try await harness.world(client)
            let id = try #require(try await world.publish(client, id: "deploy", extra: actionsExtra).string("id"))
            let statuses = try await withThrowingTaskGroup(of: String?.self) { group in
                for _ in 0..<10 { group.addTask { try await world.press(client, id, 1).string("status") } }
                return try await group.reduce(into: [String?]()) { $0.append($1) }
            }
            #expect(target.requests.count == 1, "\(statuses)")
            #expect(statuses.allSatisfy { $0 == "done" || $0 == "running" }, "\(statuses)")
            #expect(statuses.filter { $0 == "done" }.count >= 1)
        }
    }

    @Test(
        "two instances on one PostgreSQL: presses through both at once make one request",
        .enabled(if: TestPostgres.testsRun, "PostgreSQL is not available here"))
    func twoInstances() async throws {
        let target = ActionTarget(delay: .milliseconds(300))
        let one = try await ServiceHarness(.postgres, outbound: target)
        let two = try await ServiceHarness(sharingDatabaseOf: one, outbound: target)
        try await one.router { c1 in
            try await two.router { c2 in
                let world = try await one.world(c1)
                let id = try #require(try await world.publish(c1, id: "page", extra: actionsExtra).string("id"))
                let statuses = try await withThrowingTaskGroup(of: String?.self) { group in
                    for i in 0..<10 { group.addTask { try await world.press(i % 2 == 0 ? c1 : c2, id, 1).string("status") } }
                    return try await group.reduce(into: [String?]()) { $0.append($1) }
                }
                #expect(target.requests.count == 1, "\(statuses)")
                #expect(try await world.notification(c2, id).actionResults?.first?.status == .done)
            }
        }
    }

    @Test(
        "the outbound policy: the service never calls a link-local address or itself, and with --outbound-allow only what is allowed; a refusal is a failed outcome, no request"
    )
    func safety() async throws {
        let policy = try OutboundPolicy(
            allow: ["127.0.0.1", "10.0.0.0/8", "hooks.example.com"], listeners: [.init(host: "127.0.0.1", port: 8787)],
            publicURL: "https://notty.example.com")
        let target = RecordingOutbound(policy: policy)
        let harness = try await ServiceHarness(.sqlite, outbound: target)
        try await harness.router { client in
            let world = try await harness.world(client)
            for (n, url, why) in [
                (0, "http://169.254.169.254/latest/meta-data", "link-local"), (1, "http://[fe80::1]:8080/x", "link-local"),
                (2, "http://127.0.0.1:8787/v1/me", "own listening address"), (3, "https://notty.example.com/v1/me", "own address (--public-url)"),
                (4, "http://192.168.1.10/x", "not among the hosts"),
            ] {
                let extra = #","actions":[{"action":"http","label":"Go","url":"\#(url)"}]"#
                let id = try #require(try await world.publish(client, id: "s\(n)", extra: extra).string("id"))
                let reply = try await world.press(client, id, 1)
                #expect(reply.string("status") == "failed", "\(url): \(reply.text)")
                #expect(reply.string("error")?.hasPrefix("refused: not allowed: ") == true, "\(url): \(reply.text)")
                #expect(reply.string("error")?.contains(why) == true, "\(url): \(reply.text)")
            }
            #expect(target.requests.isEmpty)
            let allowed = try #require(
                try await world.publish(client, id: "ok", extra: #","actions":[{"action":"http","label":"Go","url":"http://127.0.0.1:9000/x"}]"#)
                    .string("id"))
            #expect(try await world.press(client, allowed, 1).string("status") == "done")
            #expect(target.requests.count == 1)
        }
    }

    @Test("bad actions are refused with what is wrong, in each door's dialect, and nothing is stored", arguments: Backend.available)
    func refusals(backend: Backend) async throws {
        let harness = try await ServiceHarness(backend, outbound: ActionTarget())
        try await harness.router { client in
            let world = try await harness.world(client)
            let four = Array(repeating: #"{"action":"view","label":"x","url":"https://a.example"}"#, count: 4).joined(separator: ",")
            for (actions, says) in [
                ("[\(four)]", "at most 3"), (#"[{"action":"broadcast","label":"x"}]"#, "broadcast"),
                (#"[{"action":"http","label":"x","url":"ftp://a.example/"}]"#, "http or https"),
                (#"[{"action":"http","label":"x","url":"https://a.example","headers":{"Bad Name":"v"}}]"#, "header name"),
                (#"[{"action":"http","url":"https://a.example"}]"#, "needs a label"), (#"{"action":"view"}"#, "array"),
            ] {
                let reply = try await world.publish(client, id: "bad", extra: #","actions":\#(actions)"#)
                #expect(reply.status == .badRequest, "\(actions): \(reply.text)")
                #expect(reply.text.contains(says), "\(actions): \(reply.text)")
            }
            // ntfy's header, simple and JSON forms, and a JSON publish.
            let topic = try await world.hookToken(client)
            let simple = try await client.call(
                .post, "/\(topic)", body: Data("door".utf8),
                headers: [
                    "Actions":
                        #"view, Open portal, https://home.example.com/, clear=true; http, Close door, https://api.example.com/door, method=PUT, headers.Authorization=Bearer zAzsx1sk, body='{"open": false, "why": "a, b"}'"#
                ])
            #expect(simple.status == .ok, "\(simple.text)")
            let bad = try await client.call(
                .post, "/\(topic)", body: Data("door".utf8), headers: ["Actions": "http, Close, https://a.example, headers.=x"])
            #expect(bad.status == .badRequest, "\(bad.text)")
            #expect(bad.text.contains("header name"), "\(bad.text)")
            let unknown = try await client.call(.post, "/\(topic)", body: Data("x".utf8), headers: ["X-Actions": "dance, Now, https://a.example"])
            #expect(unknown.status == .badRequest)
            #expect(unknown.text.contains("\"code\""), "ntfy's error JSON: \(unknown.text)")
            let json =
                #"{"topic":"\#(topic)","message":"deploy?","actions":[{"action":"http","label":"Approve","url":"https://ci.example.com/approve","clear":true}]}"#
            #expect(try await client.call(.post, "/", body: Data(json.utf8), headers: ["Content-Type": "application/json"]).status == .ok)
            // The generic JSON webhook.
            let (path, _) = try await world.webhook(client)
            let hooked = try await client.hook(
                path, #"{"title":"Backup","actions":[{"action":"http","label":"Retry","url":"https://nas.example/retry"}]}"#,
                headers: ["Content-Type": "application/json"])
            #expect(hooked.status.code < 300, "\(hooked.text)")
            let badHook = try await client.hook(
                path, #"{"title":"Backup","actions":[{"action":"http","label":"Retry","url":"nope"}]}"#,
                headers: ["Content-Type": "application/json"])
            #expect(badHook.status == .badRequest)

            let seen = try await client.call(.get, "/v1/me/notifications", token: world.userToken).decode(NotificationList.self).value
            #expect(seen.count == 3, "\(seen.map(\.displayTitle))")
            let door = try #require(seen.first { $0.payload.visualContent?.body?.contains("door") == true || $0.displayTitle.contains("door") })
            #expect(door.actions?.map(\.label) == ["Open portal", "Close door"])
            #expect(door.launchUrl == "https://home.example.com/")
            let alice = try #require(try await harness.storage.user(name: "alice"))
            let stored = try #require(try await harness.storage.notification(id: door.id, userId: alice.id))
            let sealed = try #require(stored.actions)
            #expect(sealed.filter { $0.kind == .http }.allSatisfy { $0.headers.isEmpty && $0.sealed != nil }, "kept sealed: \(sealed)")
            let close = try #require(try await harness.service.secrets.opened(sealed).last)
            #expect(close.method == "PUT")
            #expect(close.headers == ["Authorization": "Bearer zAzsx1sk"])
            #expect(close.body == #"{"open": false, "why": "a, b"}"#)
            #expect(seen.contains { $0.actions?.first?.label == "Approve" && $0.actions?.first?.clear == true })
            #expect(seen.contains { $0.actions?.first?.label == "Retry" })
        }
    }
}
