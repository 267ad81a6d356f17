import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import NottyCore
import NottyTestSupport
import Testing

@testable import NottyHTTP
@testable import NottySecrets
@testable import NottyService
@testable import NottyServicePostgres
@testable import NottyServiceSQLite

/// A webhook fixture (Tests/NottyWebhooksTests/Fixtures, see its README).
func webhookFixture(_ name: String) throws -> String {
    let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("NottyWebhooksTests/Fixtures/\(name)")
    return try String(contentsOf: url, encoding: .utf8)
}

/// HMAC-SHA256 of `body` keyed with `secret`, hex, by openssl (not by the code under test).
func opensslHMAC(_ body: String, secret: String) async throws -> String {
    let directory = Repository.temporaryDirectory("notty-hmac")
    defer { try? FileManager.default.removeItem(at: directory) }
    let file = directory.appendingPathComponent("body")
    try Data(body.utf8).write(to: file)
    let result = try await Repository.run(["openssl", "dgst", "-sha256", "-hmac", secret, "-r", file.path])
    guard result.status == 0, let hex = result.output.split(separator: " ").first else { throw SupportError("openssl: \(result.output)") }
    return String(hex)
}

extension World {
    /// Makes a webhook for the world's app; returns its path (`/v1/hooks/…`) and the subscription id.
    func webhook(_ client: any TestClientProtocol, secret: String? = nil) async throws -> (path: String, id: String) {
        let secretField = secret.map { #","secret":"\#($0)""# } ?? ""
        let made = try await client.call(
            .post, "/v1/me/subscriptions", token: userToken,
            json: #"{"targetHostName":"\#(host)","platform":"webhook"\#(secretField)}"#)
        guard made.status == .created, let url = made.string("webhookUrl"), let range = url.range(of: "/v1/hooks/") else {
            throw SupportError("webhook: \(made.status) \(made.text)")
        }
        return (String(url[range.lowerBound...]), made.string("userNotificationSubscriptionId")!)
    }

    func notification(_ client: any TestClientProtocol, _ id: String) async throws -> UserNotification {
        try await client.call(.get, "/v1/me/notifications/\(id)", token: userToken).decode(UserNotification.self)
    }

    func counts(_ client: any TestClientProtocol) async throws -> ViewCounts {
        try await client.call(.get, "/v1/me/notifications/counts", token: userToken).decode(ViewCounts.self)
    }
}

extension TestClientProtocol {
    func hook(_ path: String, _ body: String, headers: [String: String] = [:]) async throws -> Reply {
        try await call(.post, path, body: Data(body.utf8), headers: headers)
    }

    func call(_ method: HTTPRequest.Method, _ uri: String, body: Data, headers extra: [String: String]) async throws -> Reply {
        var headers = HTTPFields()
        for (name, value) in extra { headers[HTTPField.Name(name)!] = value }
        let response = try await executeRequest(uri: uri, method: method, headers: headers, body: ByteBuffer(bytes: body))
        return Reply(status: response.status, headers: response.headers, text: String(buffer: response.body))
    }
}

extension Reply {
    var ids: [String] {
        guard case .array(let items)? = self["ids"] else { return [] }
        return items.compactMap { if case .string(let id) = $0 { id } else { nil } }
    }
}

@Suite("Webhooks (PROTOCOL.md §7.2)", .timeLimit(.minutes(5)))
struct WebhookTests {
    @Test(
        "a webhook's URL is shown once and only its hash is stored; the app must exist; revoking it makes the URL 404", arguments: Backend.available)
    func lifecycle(backend: Backend) async throws {
        let harness = try await ServiceHarness(backend)
        try await harness.router { client in
            let world = try await harness.world(client)
            let (path, id) = try await world.webhook(client)
            let token = String(path.dropFirst("/v1/hooks/".count))
            #expect(token.count >= 43)
            let stored = try #require(try await harness.storage.subscription(webhookHash: Secrets.tokenHash(token)))
            #expect(stored.id == id && stored.webhookHash != token)
            let list = try await client.call(.get, "/v1/me/subscriptions", token: world.userToken)
            #expect(list.text.contains(id) && !list.text.contains(token) && list.text.contains(#""platform":"webhook""#))
            let sent = try await client.hook(path, "Backup failed\nnas-1: disk full")
            #expect(sent.status == .ok, "\(sent.text)")
            let n = try await world.notification(client, try #require(sent.ids.first))
            #expect(n.payload.visualContent == VisualContent(title: "Backup failed", body: "nas-1: disk full") && n.targetHostName == world.host)
            // Refused: no app, no targetHostName, a secret on a device registration.
            let noApp = try await client.call(
                .post, "/v1/me/subscriptions", token: world.userToken, json: #"{"targetHostName":"nope.example","platform":"webhook"}"#)
            #expect(noApp.status == .notFound)
            let noHost = try await client.call(.post, "/v1/me/subscriptions", token: world.userToken, json: #"{"platform":"webhook"}"#)
            #expect(noHost.status == .badRequest)
            let secretOnDevice = try await client.call(
                .post, "/v1/me/subscriptions", token: world.userToken, json: #"{"platform":"polling","secret":"s"}"#)
            #expect(secretOnDevice.status == .badRequest)
            // Unknown token, then the revoked one.
            #expect(try await client.hook("/v1/hooks/not-a-token", "x").status == .notFound)
            #expect(try await client.call(.delete, "/v1/me/subscriptions/\(id)", token: world.userToken).status == .noContent)
            let revoked = try await client.hook(path, "Backup failed")
            #expect(revoked.status == .notFound && revoked.errorCode == "itemNotFound")
        }
    }

    @Test(
        "GitHub: with a secret the signature must match (else 401, nothing written); a passing run after a failure dismisses it; ping is nothing",
        arguments: Backend.available)
    func github(backend: Backend) async throws {
        let harness = try await ServiceHarness(backend)
        try await harness.router { client in
            let world = try await harness.world(client)
            let (path, _) = try await world.webhook(client, secret: "It's a Secret to Everybody")
            let failure = try webhookFixture("github-workflow_run-completed-failure.json")
            let signature = try await opensslHMAC(failure, secret: "It's a Secret to Everybody")
            func github(_ body: String, _ event: String, signature: String?) async throws -> Reply {
                var headers = ["X-GitHub-Event": event, "Content-Type": "application/json", "X-GitHub-Delivery": UUID().uuidString]
                if let signature { headers["X-Hub-Signature-256"] = "sha256=\(signature)" }
                return try await client.hook(path, body, headers: headers)
            }
            #expect(try await github(failure, "workflow_run", signature: nil).status == .unauthorized)
            #expect(try await github(failure, "workflow_run", signature: String(repeating: "0", count: 64)).status == .unauthorized)
            #expect(try await github(failure + " ", "workflow_run", signature: signature).status == .unauthorized)  // a changed body
            #expect(try await world.counts(client).all == 0)
            let failed = try await github(failure, "workflow_run", signature: signature)
            #expect(failed.status == .ok, "\(failed.text)")
            let id = try #require(failed.ids.first)
            var n = try await world.notification(client, id)
            #expect(n.payload.visualContent?.title == "✗ test on octo-org/octo-repo@master (failure)" && n.priority == .high)
            #expect(n.launchUrl == "https://github.com/octo-org/octo-repo/actions/runs/289782451" && n.userActionState == .noInteraction)
            let success = try webhookFixture("github-workflow_run-completed-success.json")
            let passed = try await github(success, "workflow_run", signature: try opensslHMAC(success, secret: "It's a Secret to Everybody"))
            #expect(passed.ids == [id])
            n = try await world.notification(client, id)
            #expect(n.payload.visualContent?.title == "✓ test on octo-org/octo-repo@master" && n.userActionState == .dismissed)
            let ping = try webhookFixture("github-ping.json")
            let pinged = try await github(ping, "ping", signature: try opensslHMAC(ping, secret: "It's a Secret to Everybody"))
            #expect(pinged.status == .ok && pinged.ids.isEmpty)
            #expect(try await world.counts(client).all == 1)
        }
    }

    @Test("GitLab: with a secret X-Gitlab-Token must equal it; other kinds send it as a bearer token", arguments: Backend.available)
    func secrets(backend: Backend) async throws {
        let harness = try await ServiceHarness(backend)
        try await harness.router { client in
            let world = try await harness.world(client)
            let (path, _) = try await world.webhook(client, secret: "s3cret")
            let mr = try webhookFixture("gitlab-merge_request.json")
            #expect(try await client.hook(path, mr, headers: ["X-Gitlab-Event": "Merge Request Hook"]).status == .unauthorized)
            #expect(
                try await client.hook(path, mr, headers: ["X-Gitlab-Event": "Merge Request Hook", "X-Gitlab-Token": "s3creT"]).status == .unauthorized
            )
            let ok = try await client.hook(path, mr, headers: ["X-Gitlab-Event": "Merge Request Hook", "X-Gitlab-Token": "s3cret"])
            #expect(ok.status == .ok && ok.ids.count == 1)
            #expect(try await client.hook(path, "Backup failed").status == .unauthorized)
            #expect(try await client.hook(path, "Backup failed", headers: ["Authorization": "Bearer s3cret"]).status == .ok)
            #expect(try await world.counts(client).all == 2)
        }
    }

    @Test(
        "Alertmanager: one notification per alert; resolved moves them to Dismissed with the service's clock, and a later user change still wins",
        arguments: Backend.available)
    func alerts(backend: Backend) async throws {
        let harness = try await ServiceHarness(backend)
        try await harness.router { client in
            let world = try await harness.world(client)
            let (path, _) = try await world.webhook(client)
            let firing = try webhookFixture("alertmanager-firing.json")
            let fired = try await client.hook(path, firing, headers: ["Content-Type": "application/json"])
            #expect(fired.status == .ok && fired.ids.count == 2, "\(fired.text)")
            let cpu = try await world.notification(client, fired.ids[0])
            #expect(cpu.appNotificationId == "alert-3b1a8e2f4c5d6e7f" && cpu.groupName == "HighCPUUsage" && cpu.priority == .high)
            let resolved = try await client.hook(path, firing.replacingOccurrences(of: #""firing""#, with: #""resolved""#))
            #expect(resolved.ids == fired.ids)
            let counts = try await world.counts(client)
            #expect(counts.dismissed == 2 && counts.unread == 0, "\(counts)")
            #expect(try await world.notification(client, fired.ids[0]).payload.visualContent?.title.hasPrefix("✓ Resolved: HighCPUUsage") == true)
            let undo = try await client.call(
                .patch, "/v1/me/notifications/\(fired.ids[0])", token: world.userToken, json: #"{"userActionState":"NoInteraction"}"#)
            #expect(undo.status == .ok && undo.string("userActionState") == "NoInteraction")
        }
    }

    @Test(
        "a group of 50 alerts is 50 notifications from one request; one bad alert in it refuses the request and writes nothing",
        arguments: Backend.available)
    func groups(backend: Backend) async throws {
        let harness = try await ServiceHarness(backend)
        try await harness.router { client in
            let world = try await harness.world(client)
            let (path, _) = try await world.webhook(client)
            let alerts = (0..<50).map { #"{"status":"firing","labels":{"alertname":"Probe\#($0)","severity":"warning"},"fingerprint":"f\#($0)"}"# }
            var bad = alerts
            bad[37] = #"{"status":"firing","labels":{"alertname":37}}"#
            let refused = try await client.hook(path, #"{"status":"firing","alerts":[\#(bad.joined(separator: ","))]}"#)
            #expect(refused.status == .badRequest && refused.errorCode == "badRequest" && refused.text.contains("alerts[37]"), "\(refused.text)")
            #expect(try await world.counts(client).all == 0)
            let sent = try await client.hook(path, #"{"status":"firing","alerts":[\#(alerts.joined(separator: ","))]}"#)
            #expect(sent.status == .ok && Set(sent.ids).count == 50)
            #expect(try await world.counts(client).unread == 50)
        }
    }

    @Test(
        "malformed, truncated, wrongly typed, non-UTF-8 and huge bodies: 400 or 413 with the envelope, never a 5xx, the store unchanged",
        arguments: Backend.available)
    func badBodies(backend: Backend) async throws {
        let harness = try await ServiceHarness(backend) { $0.maxWebhookBodyBytes = 64 * 1024 }
        try await harness.router { client in
            let world = try await harness.world(client)
            let (path, _) = try await world.webhook(client)
            let pr = try webhookFixture("github-pull_request-opened.json")
            let cases: [(Data, [String: String])] = [
                (Data(#"{"title":5}"#.utf8), [:]),
                (Data(#"{"status":"firing","alerts":[1,2]}"#.utf8), [:]),
                (Data(#"{"status":"firing","alerts":[{"labels":"x"}]}"#.utf8), [:]),
                (Data("   ".utf8), [:]),
                (Data([0x42, 0xFF, 0xFE, 0x00]), [:]),
                (Data(pr.utf8.prefix(500)), ["X-GitHub-Event": "pull_request"]),
                (Data(#"{"action":"opened","pull_request":{"number":"two"}}"#.utf8), ["X-GitHub-Event": "pull_request"]),
                (Data("[1,2".utf8), ["X-Gitlab-Event": "Pipeline Hook"]),
                (Data(#"{"title":"t","url":"file:///etc/passwd"}"#.utf8), [:]),
                (Data(#"{"title":"t","id":"\#(String(repeating: "i", count: 300))"}"#.utf8), [:]),
                (Data(#"{"title":"t","expires":"1999-01-01T00:00:00Z"}"#.utf8), [:]),
            ]
            for (body, headers) in cases {
                let reply = try await client.call(.post, path, body: body, headers: headers)
                #expect(
                    reply.status == .badRequest && reply.errorCode == "badRequest",
                    "\(String(decoding: body.prefix(80), as: UTF8.self)): \(reply.status) \(reply.text)")
            }
            let huge = try await client.call(.post, path, body: Data(repeating: UInt8(ascii: "x"), count: 64 * 1024 + 1), headers: [:])
            #expect(huge.status == .contentTooLarge && huge.errorCode == "payloadTooLarge")
            #expect(try await world.counts(client).all == 0)
        }
    }

    @Test("the app's publish rate applies: 429 with Retry-After, counting each notification")
    func rateLimit() async throws {
        let harness = try await ServiceHarness {
            $0.publishRate = 0.01; $0.publishBurst = 3
        }
        try await harness.router { client in
            let world = try await harness.world(client)
            let (path, _) = try await world.webhook(client)
            let two = #"{"status":"firing","alerts":[{"labels":{"alertname":"A"}},{"labels":{"alertname":"B"}}]}"#
            #expect(try await client.hook(path, two).status == .ok)
            let limited = try await client.hook(path, two)
            #expect(limited.status == .tooManyRequests && limited.headers[.retryAfter] != nil)
            #expect(try await client.hook(path, "one more fits").status == .ok)
            #expect(try await world.counts(client).all == 3)
        }
    }

    @Test("a logged path shows a secret segment (a webhook token, an ntfy topic) by its first four characters only; ids stay whole")
    func redactedPaths() {
        let token = "A7txrVO5mngAFE8szYSELTkWUS6YbtgrzK1-dF3rlvg"
        #expect(EnvelopeMiddleware.redacted("/v1/hooks/\(token)") == "/v1/hooks/A7tx…")
        #expect(EnvelopeMiddleware.redacted("/\(token)/json") == "/A7tx…/json")
        #expect(EnvelopeMiddleware.redacted("/v1/calendars/\(token).ics") == "/v1/calendars/A7tx….ics", "PROTOCOL.md §15: a calendar URL is a secret")
        let id = "5f0c6a1e-3b7d-8e2f-9a41-c0d2e3f4a5b6"
        #expect(EnvelopeMiddleware.redacted("/v1/me/notifications/\(id)") == "/v1/me/notifications/\(id)")
        #expect(EnvelopeMiddleware.redacted("/healthz") == "/healthz")
    }
}
