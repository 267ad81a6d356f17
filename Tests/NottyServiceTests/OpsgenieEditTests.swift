import Foundation
import HTTPTypes
import HummingbirdTesting
import NottyCore
import NottyTestSupport
import Testing

@testable import NottyHTTP
@testable import NottyService

@Suite("Opsgenie's alert edits, notes, count and responders (PROTOCOL.md §16.2)", .timeLimit(.minutes(5)))
struct OpsgenieEditTests {
    @Test(
        "notes, tags, details, message, description and priority change the alert on every device and keep its state; the same open alias counts; notes list newest first; past notty's limits is 422 and changes nothing",
        arguments: Backend.available)
    func edits(backend: Backend) async throws {
        let harness = try await ServiceHarness(backend)
        try await harness.router { client in
            let alice = try await harness.world(client)
            let key = try await alice.hookToken(client)
            func call(_ method: HTTPRequest.Method, _ path: String, _ json: String = "") async throws -> Reply {
                try await client.opsgenie(method, path, key: key, json)
            }
            func alert() async throws -> [String: JSONValue] {
                let got = try await call(.get, "/v2/alerts/db?identifierType=alias")
                guard case .object(let alert)? = got["data"] else {
                    Issue.record("\(got.text)")
                    return [:]
                }
                return alert
            }
            let made = try await call(
                .post, "/v2/alerts", #"{"message":"DB slow","alias":"db","priority":"P3","tags":["db"],"note":"paged by cron","user":"cron"}"#)
            #expect(made.status == .accepted, "\(made.text)")
            let id = try #require(try await alice.all(client).first?.id)
            let created = try await alice.notification(client, id)
            // Acknowledged first: an edit keeps that (and the creation time: nothing pops up or escalates again).
            #expect(try await call(.post, "/v2/alerts/db/acknowledge?identifierType=alias", #"{"user":"ann"}"#).status == .accepted)

            let note = try await call(.post, "/v2/alerts/db/notes?identifierType=alias", #"{"note":"looking into it","user":"ann"}"#)
            #expect(note.status == .accepted, "\(note.text)")
            let status = try await call(.get, "/v2/alerts/requests/\(try #require(note.string("requestId")))")
            guard case .object(let data)? = status["data"] else { return }
            #expect(data["action"] == .string("AddNote") && data["status"] == .string("Added note"), "\(status.text)")
            #expect(try await call(.post, "/v2/alerts/\(id)/tags", #"{"tags":["prod","db","prod"],"note":"tagged"}"#).status == .accepted)
            #expect(try await call(.post, "/v2/alerts/\(id)/details", #"{"details":{"host":"db1","load":"9"}}"#).status == .accepted)
            #expect(try await call(.delete, "/v2/alerts/\(id)/details?keys=load").status == .accepted)
            #expect(try await call(.put, "/v2/alerts/\(id)/message", #"{"message":"DB very slow"}"#).status == .accepted)
            #expect(try await call(.put, "/v2/alerts/\(id)/description", #"{"description":"p99 is 4 s"}"#).status == .accepted)
            #expect(try await call(.put, "/v2/alerts/\(id)/priority", #"{"priority":"P2"}"#).status == .accepted)

            let edited = try await alice.notification(client, id)
            #expect(edited.readState == .read && edited.createdDateTime == created.createdDateTime, "\(edited)")
            #expect(edited.lastModifiedDateTime >= created.lastModifiedDateTime && edited.priority == .high)
            #expect(edited.payload.visualContent?.title == "DB very slow")
            #expect(
                edited.payload.visualContent?.body
                    == "p99 is 4 s\ntags: db, prod\nhost: db1\nnote (cron): paged by cron\nnote (ann): looking into it\nnote (Opsgenie API): tagged",
                "\(edited.payload.visualContent?.body ?? "")")
            var shown = try await alert()
            #expect(shown["count"] == .number(1) && shown["priority"] == .string("P2") && shown["description"] == .string("p99 is 4 s"))
            #expect(shown["tags"] == .array([.string("db"), .string("prod")]) && shown["details"] == .object(["host": .string("db1")]))
            #expect(shown["acknowledged"] == .bool(true))
            #expect(try await call(.delete, "/v2/alerts/\(id)/tags?tags=db").status == .accepted)
            #expect(try await alert()["tags"] == .array([.string("prod")]))

            func notes(_ query: String = "") async throws -> [String] {
                let reply = try await call(.get, "/v2/alerts/db/notes?identifierType=alias" + query)
                guard reply.status == .ok, case .array(let items)? = reply["data"] else {
                    Issue.record("\(query): \(reply.text)")
                    return []
                }
                return items.compactMap { if case .object(let n) = $0, case .string(let text)? = n["note"] { text } else { nil } }
            }
            #expect(try await notes() == ["tagged", "looking into it", "paged by cron"])
            #expect(try await notes("&order=asc&limit=2") == ["paged by cron", "looking into it"])
            #expect(try await notes("&order=asc&offset=0") == ["looking into it", "tagged"])

            // An acknowledgement's note is the alert's too; the same open alias counts and keeps the notes.
            #expect(try await call(.post, "/v2/alerts/\(id)/acknowledge", #"{"note":"on it","user":"bo"}"#).status == .accepted)
            #expect(try await call(.post, "/v2/alerts", #"{"message":"DB slow again","alias":"db"}"#).status == .accepted)
            shown = try await alert()
            #expect(shown["count"] == .number(2) && shown["message"] == .string("DB slow again"), "\(shown)")
            #expect(try await notes().first == "on it")
            // Closed, the alias is a new alert's: counted from one.
            #expect(try await call(.post, "/v2/alerts/db/close?identifierType=alias").status == .accepted)
            #expect(try await call(.post, "/v2/alerts", #"{"message":"DB slow once more","alias":"db"}"#).status == .accepted)
            #expect(try await alert()["count"] == .number(1))

            // Past notty's limits, or nothing to do: 422 naming the field, and the alert as it was.
            let before = try await alice.notification(client, id)
            let tags = (1...21).map { "\"t\($0)\"" }.joined(separator: ",")
            for (method, path, json, field) in [
                (HTTPRequest.Method.post, "tags", "{\"tags\":[\(tags)]}", "tags"),
                (.post, "tags", #"{"tags":"x"}"#, "tags"),
                (.delete, "tags", "", "tags"),
                (.delete, "details?keys=", "", "keys"),
                (.post, "notes", #"{"note":"  "}"#, "note"),
                (.post, "notes", "{\"note\":\"\(String(repeating: "n", count: 2_001))\"}", "note"),
                (.post, "details", #"{"details":{}}"#, "details"),
                (.post, "details", "{\"details\":{\"big\":\"\(String(repeating: "d", count: 8_001))\"}}", "details"),
                (.put, "message", #"{"message":""}"#, "message"),
                (.put, "priority", #"{"priority":"P0"}"#, "priority"),
                (.put, "description", "{\"description\":\"\(String(repeating: "x", count: 15_001))\"}", "description"),
                (.post, "notes", "[1]", "body"),
                (.put, "message", #"{"message":"a\u0000b"}"#, "message"),
                (.put, "description", #"{"description":"a\u0000b"}"#, "description"),
                (.post, "tags", #"{"tags":["a\u0000b"]}"#, "tags"),
                (.post, "details", #"{"details":{"k":"a\u0000b"}}"#, "details"),
            ] {
                let refused = try await call(method, "/v2/alerts/\(id)/\(path)", json)
                guard refused.status == .unprocessableContent, case .object(let errors)? = refused["errors"] else {
                    Issue.record("\(path) \(json.prefix(40)): \(refused.status) \(refused.text)")
                    continue
                }
                #expect(errors[field] != nil, "\(path): \(refused.text)")
            }
            let after = try await alice.notification(client, id)
            #expect(after.payload == before.payload && after.lastModifiedDateTime == before.lastModifiedDateTime)
        }
    }

    @Test("the same open alias sent 20 times at once counts 20: each count is made in its publish's own transaction", arguments: Backend.available)
    func concurrentCount(backend: Backend) async throws {
        let harness = try await ServiceHarness(backend)
        try await harness.router { client in
            let alice = try await harness.world(client)
            let key = try await alice.hookToken(client)
            #expect(try await client.opsgenie(.post, "/v2/alerts", key: key, #"{"message":"Flapping","alias":"flap"}"#).status == .accepted)
            let statuses = try await withThrowingTaskGroup(of: HTTPResponse.Status.self) { group in
                for _ in 0..<19 {
                    group.addTask { try await client.opsgenie(.post, "/v2/alerts", key: key, #"{"message":"Flapping","alias":"flap"}"#).status }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(statuses.allSatisfy { $0 == .accepted }, "\(statuses)")
            let shown = try await client.opsgenie(.get, "/v2/alerts/flap?identifierType=alias", key: key)
            guard case .object(let alert)? = shown["data"] else { Issue.record("\(shown.text)"); return }
            #expect(alert["count"] == .number(20), "\(shown.text)")
            #expect(try await alice.all(client).count == 1)
        }
    }

    @Test(
        "edits reach only the key's own alerts: another user's key is 404, a revoked one and a disabled user's 401, and nothing changes",
        arguments: Backend.available)
    func editWalls(backend: Backend) async throws {
        let harness = try await ServiceHarness(backend)
        try await harness.router { client in
            let alice = try await harness.world(client)
            let bob = try await harness.world(client, user: "bob", app: (alice.clientId, alice.clientSecret))
            let aliceKey = try await alice.hookToken(client), bobKey = try await bob.hookToken(client)
            #expect(try await client.opsgenie(.post, "/v2/alerts", key: aliceKey, #"{"message":"API down","alias":"api"}"#).status == .accepted)
            let id = try #require(try await alice.all(client).first?.id)
            let before = try await alice.notification(client, id)
            let edits: [(HTTPRequest.Method, String, String)] = [
                (.post, "notes", #"{"note":"mine now"}"#), (.post, "tags", #"{"tags":["x"]}"#), (.delete, "tags?tags=x", ""),
                (.post, "details", #"{"details":{"a":"b"}}"#), (.delete, "details?keys=a", ""), (.put, "message", #"{"message":"x"}"#),
                (.put, "description", #"{"description":"x"}"#), (.put, "priority", #"{"priority":"P5"}"#), (.get, "notes", ""),
            ]
            for (method, path, json) in edits {
                for target in ["\(id)/\(path)", "api/\(path)\(path.contains("?") ? "&" : "?")identifierType=alias"] {
                    let reply = try await client.opsgenie(method, "/v2/alerts/\(target)", key: bobKey, json)
                    #expect(reply.status == .notFound && reply.string("message") == "Alert does not exist", "\(target): \(reply.text)")
                }
                #expect(try await client.opsgenie(method, "/v2/alerts/\(id)/\(path)", key: "wrong", json).status == .unauthorized)
            }
            try await harness.service.admin.setDisabled(name: "alice", true)
            for (method, path, json) in edits {
                let reply = try await client.opsgenie(method, "/v2/alerts/\(id)/\(path)", key: aliceKey, json)
                #expect(reply.status == .unauthorized && reply.text.contains("disabled"), "\(path): \(reply.text)")
            }
            try await harness.service.admin.setDisabled(name: "alice", false)
            #expect(try await alice.notification(client, id).payload == before.payload)
        }
    }

    @Test(
        "responders naming a team: an owner's key publishes there (every member sees it) and closes it by alias; a plain member's key, an unknown team, two teams or another team from a team's key is 422; an owner removed from the team loses it",
        arguments: Backend.available)
    func responders(backend: Backend) async throws {
        let harness = try await ServiceHarness(backend)
        try await harness.router { client in
            let alice = try await harness.world(client)
            let bob = try await harness.world(client, user: "bob", app: (alice.clientId, alice.clientSecret))
            try await harness.service.teams.create(name: "ops", owner: "alice")
            try await harness.service.teams.create(name: "web", owner: "bob")
            #expect(try await client.call(.post, "/v1/teams/ops/members", token: alice.userToken, json: #"{"user":"bob"}"#).status == .ok)
            let aliceKey = try await alice.hookToken(client), bobKey = try await bob.hookToken(client)
            let made = try await client.call(
                .post, "/v1/me/subscriptions", token: bob.userToken, json: #"{"targetHostName":"\#(bob.host)","platform":"webhook","team":"web"}"#)
            let webKey = String(try #require(made.string("webhookUrl"), "\(made.text)").split(separator: "/").last!)

            let toOps =
                #"{"message":"Disk full","alias":"disk","responders":[{"type":"team","name":"ops"},{"type":"user","username":"x@example.com"}]}"#
            let sent = try await client.opsgenie(.post, "/v2/alerts", key: aliceKey, toOps)
            #expect(sent.status == .accepted, "\(sent.text)")
            let seen = try #require(try await bob.all(client).first { $0.appNotificationId == "disk" }, "bob, a member, sees it")
            #expect(seen.team == "ops")
            // Alice's key reaches it by alias (as Alertmanager closes it), and the same alias counts there.
            #expect(try await client.opsgenie(.post, "/v2/alerts", key: aliceKey, toOps).status == .accepted)
            let shown = try await client.opsgenie(.get, "/v2/alerts/disk?identifierType=alias", key: aliceKey)
            guard case .object(let alert)? = shown["data"] else { Issue.record("\(shown.text)"); return }
            #expect(alert["count"] == .number(2) && alert["id"] == .string(seen.id), "\(shown.text)")
            #expect(
                try await client.opsgenie(.post, "/v2/alerts/disk/notes?identifierType=alias", key: aliceKey, #"{"note":"mine"}"#).status == .accepted
            )
            #expect(try await client.opsgenie(.post, "/v2/alerts/disk/close?identifierType=alias", key: aliceKey).status == .accepted)
            #expect(try await bob.notification(client, seen.id).userActionState == .dismissed)
            // Only user responders: the key's own feed.
            let userOnly = #"{"message":"Mine","alias":"mine","responders":[{"type":"user","username":"x@example.com"}]}"#
            #expect(try await client.opsgenie(.post, "/v2/alerts", key: aliceKey, userOnly).status == .accepted)
            #expect(try await alice.all(client).first { $0.appNotificationId == "mine" }?.team == nil)

            // Bob is a plain member of ops; web is not alice's; a team's key publishes to its own team only.
            for (key, json) in [
                (bobKey, #"{"message":"x","responders":[{"type":"team","name":"ops"}]}"#),
                (aliceKey, #"{"message":"x","responders":[{"type":"team","name":"web"}]}"#),
                (aliceKey, #"{"message":"x","responders":[{"type":"team","name":"nobody"}]}"#),
                (aliceKey, #"{"message":"x","responders":[{"type":"team","name":"ops"},{"type":"team","id":"web"}]}"#),
                (aliceKey, #"{"message":"x","responders":[{"type":"team"}]}"#),
                (aliceKey, #"{"message":"x","responders":"ops"}"#),
                (webKey, #"{"message":"x","responders":[{"type":"team","name":"ops"}]}"#),
            ] {
                let refused = try await client.opsgenie(.post, "/v2/alerts", key: key, json)
                guard refused.status == .unprocessableContent, case .object(let errors)? = refused["errors"] else {
                    Issue.record("\(json): \(refused.status) \(refused.text)")
                    continue
                }
                #expect(errors["responders"] != nil, "\(refused.text)")
            }
            #expect(
                try await client.opsgenie(.post, "/v2/alerts", key: webKey, #"{"message":"web's","responders":[{"type":"team","name":"web"}]}"#)
                    .status == .accepted)
            #expect(try await bob.all(client).contains { $0.team == "web" && $0.payload.visualContent?.title == "web's" })
            // Bob's key never reaches ops's alert (he is no owner of it).
            #expect(try await client.opsgenie(.get, "/v2/alerts/\(seen.id)", key: bobKey).status == .notFound)

            // Alice made bob an owner and left ops: her key neither reaches its alerts nor publishes there any more.
            #expect(
                try await client.call(.post, "/v1/teams/ops/members", token: alice.userToken, json: #"{"user":"bob","role":"owner"}"#).status == .ok)
            #expect(try await client.call(.delete, "/v1/teams/ops/members/alice", token: alice.userToken).status == .noContent)
            #expect(try await client.opsgenie(.get, "/v2/alerts/\(seen.id)", key: aliceKey).status == .notFound)
            #expect(try await client.opsgenie(.get, "/v2/alerts/disk?identifierType=alias", key: aliceKey).status == .notFound)
            #expect(try await client.opsgenie(.post, "/v2/alerts", key: aliceKey, toOps).status == .unprocessableContent)
        }
    }
}
