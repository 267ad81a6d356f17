import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import NottyCore
import NottyTestSupport
import Testing

@testable import NottyHTTP
@testable import NottyService
@testable import NottyServicePostgres
@testable import NottyServiceSQLite

extension World {
    /// A webhook's token: its ntfy topic and Gotify app token.
    func hookToken(_ client: any TestClientProtocol, secret: String? = nil) async throws -> String {
        String(try await webhook(client, secret: secret).path.split(separator: "/").last!)
    }

    /// The user's notifications in every view, newest first.
    func all(_ client: any TestClientProtocol) async throws -> [UserNotification] {
        let page = try await client.call(.get, "/v1/me/notifications/changes?limit=1000", token: userToken).decode(ChangesPage.self)
        return page.changes.filter { $0.status == .active }
    }
}

extension Reply {
    func int(_ key: String) -> Int? {
        if case .number(let number)? = self[key] { return Int(number) }
        return nil
    }
}

@Suite("ntfy and Gotify publishing (PROTOCOL.md §8.1)", .timeLimit(.minutes(5)))
struct DialectTests {
    @Test(
        "ntfy: the examples of ntfy's publish docs (body, headers and their aliases, query parameters, GET /publish, JSON to /), answered in ntfy's JSON",
        arguments: Backend.available)
    func ntfyPublishing(backend: Backend) async throws {
        let harness = try await ServiceHarness(backend)
        try await harness.router { client in
            let world = try await harness.world(client)
            let topic = try await world.hookToken(client)
            // curl -d "Backup successful 😀" ntfy.sh/mytopic
            let plain = try await client.call(.post, "/\(topic)", body: Data("Backup successful 😀".utf8), headers: [:])
            #expect(plain.status == .ok, "\(plain.text)")
            #expect(plain.string("event") == "message", "\(plain.text)")
            #expect(plain.string("topic") == topic, "\(plain.text)")
            #expect(plain.string("message") == "Backup successful 😀")
            #expect(plain.string("id")?.count == 12)
            #expect(plain.int("time") != nil)
            #expect(plain.int("expires") != nil)
            // curl -H "Title: Unauthorized access detected" -H "Priority: urgent" -H "Tags: warning,skull" -d "Remote access to phils-laptop detected. Act right away." ntfy.sh/phil_alerts
            let headed = try await client.call(
                .put, "/\(topic)", body: Data("Remote access to phils-laptop detected. Act right away.".utf8),
                headers: ["Title": "Unauthorized access detected", "Priority": "urgent", "Tags": "warning,skull,ssh"])
            #expect(headed.status == .ok, "\(headed.text)")
            #expect(headed.int("priority") == 5, "\(headed.text)")
            #expect(headed.string("title") == "Unauthorized access detected", "\(headed.text)")
            // The short aliases, and query parameters: curl "ntfy.sh/mytopic?t=Hi&p=2&ta=tada" -d "…"
            let aliased = try await client.call(
                .post, "/\(topic)", body: Data("Low one".utf8), headers: ["X-Priority": "2", "ta": "tada", "X-Click": "https://example.com/run/1"])
            #expect(aliased.status == .ok, "\(aliased.text)")
            #expect(aliased.string("click") == "https://example.com/run/1", "\(aliased.text)")
            let queried = try await client.call(
                .post, "/\(topic)?title=From%20the%20query&p=high&tags=rotating_light", body: Data("body".utf8), headers: [:])
            #expect(queried.status == .ok)
            #expect(queried.int("priority") == 4)
            // curl "ntfy.sh/mywebhook/trigger"; GET /publish with a message.
            let triggered = try await client.call(.get, "/\(topic)/trigger", body: Data(), headers: [:])
            #expect(triggered.status == .ok, "\(triggered.text)")
            #expect(triggered.string("message") == "triggered", "\(triggered.text)")
            let sent = try await client.call(.get, "/\(topic)/publish?message=Sent%20by%20GET&title=Hello&priority=min", body: Data(), headers: [:])
            #expect(sent.status == .ok)
            #expect(sent.int("priority") == 1)
            // The JSON publish: curl ntfy.sh -d '{"topic":"mytopic","message":"…","title":"…","tags":["warning","cd"],"priority":4,"click":"…"}'
            let json =
                #"{"topic":"\#(topic)","message":"Disk space is low at 5.1 GB","title":"Low disk space alert","tags":["warning","cd"],"priority":4,"actions":[{"action":"view","label":"Admin panel","url":"https://filesrv.lan/admin"}]}"#
            let posted = try await client.call(.post, "/", body: Data(json.utf8), headers: ["Content-Type": "application/json"])
            #expect(posted.status == .ok, "\(posted.text)")
            #expect(posted.string("title") == "Low disk space alert", "\(posted.text)")
            // Apprise's form: JSON to / with the priority as a header.
            let apprise = try await client.call(
                .post, "/", body: Data(#"{"topic":"\#(topic)","title":"Apprise","message":"from apprise"}"#.utf8),
                headers: ["Content-Type": "application/json", "X-Priority": "5"])
            #expect(apprise.status == .ok)
            #expect(apprise.int("priority") == 5)

            // RFC 2047 encoded words in a header are decoded; RFC 9218's Priority (Cloudflare adds
            // "u=1, i") is not ntfy's.
            let encoded = try await client.call(
                .post, "/\(topic)", body: Data("x".utf8), headers: ["X-Title": "=?UTF-8?B?8J+agCBEZXBsb3llZA==?=", "Priority": "u=1, i"])
            #expect(encoded.status == .ok, "\(encoded.text)")
            #expect(encoded.string("title") == "🚀 Deployed", "\(encoded.text)")
            #expect(encoded.int("priority") == nil, "\(encoded.text)")
            let quoted = try await client.call(
                .post, "/\(topic)", body: Data("y".utf8), headers: ["Title": "=?utf-8?q?Caf=C3=A9_ouvert?= =?utf-8?q?_!?="])
            #expect(quoted.string("title") == "Café ouvert !", "\(quoted.text)")

            let seen = try await world.all(client)
            func find(_ title: String) -> UserNotification? { seen.first { $0.payload.visualContent?.title == title } }
            #expect(find("Backup successful 😀")?.priority == Priority.none)
            #expect(find("🚀 Deployed")?.priority == Priority.none)
            let urgent = try #require(find("⚠️ 💀 Unauthorized access detected"), "\(seen.map { $0.payload.visualContent?.title ?? "" })")
            #expect(urgent.priority == .high)
            #expect(urgent.payload.visualContent?.body == "Remote access to phils-laptop detected. Act right away.\n\n#ssh")
            let low = try #require(find("🎉 Low one"))
            #expect(low.priority == .low)
            #expect(low.launchUrl == "https://example.com/run/1")
            #expect(find("🚨 From the query")?.payload.visualContent?.body == "body")
            #expect(find("triggered") != nil)
            #expect(find("Hello")?.payload.visualContent?.body == "Sent by GET")
            let disk = try #require(find("⚠️ 💿 Low disk space alert"))
            #expect(disk.priority == .high)
            #expect(disk.launchUrl == "https://filesrv.lan/admin")
            #expect(disk.payload.visualContent?.body == "Disk space is low at 5.1 GB")
            #expect(find("Apprise")?.priority == .high)
            #expect(seen.count == 10)
        }
    }

    @Test(
        "ntfy: a sequence id updates in place; …/clear makes it Read and Dismissed everywhere, DELETE deletes it; unknown ones are ntfy's 404",
        arguments: Backend.available)
    func ntfySequences(backend: Backend) async throws {
        let harness = try await ServiceHarness(backend)
        try await harness.router { client in
            let world = try await harness.world(client)
            let topic = try await world.hookToken(client)
            let first = try await client.call(.post, "/\(topic)", body: Data("Download 10%".utf8), headers: ["X-Sequence-ID": "dl-1"])
            #expect(first.status == .ok)
            #expect(first.string("sequence_id") == "dl-1")
            #expect(try await client.call(.post, "/\(topic)?sid=dl-1", body: Data("Download 100%".utf8), headers: [:]).status == .ok)
            var seen = try await world.all(client)
            #expect(seen.count == 1)
            #expect(seen.first?.payload.visualContent?.title == "Download 100%")
            #expect(seen.first?.appNotificationId == "dl-1")

            let cleared = try await client.call(.put, "/\(topic)/dl-1/clear", body: Data(), headers: [:])
            #expect(cleared.status == .ok, "\(cleared.text)")
            #expect(cleared.string("event") == "message_clear", "\(cleared.text)")
            #expect(cleared.string("sequence_id") == "dl-1", "\(cleared.text)")
            seen = try await world.all(client)
            #expect(seen.first?.readState == .read)
            #expect(seen.first?.userActionState == .dismissed)

            // Without a sequence id, the message id is the one to clear and delete by.
            let other = try await client.call(.post, "/\(topic)", body: Data("Second".utf8), headers: [:])
            let id = try #require(other.string("id"))
            #expect(try await client.call(.put, "/\(topic)/\(id)/read", body: Data(), headers: [:]).status == .ok)
            let deleted = try await client.call(.delete, "/\(topic)/\(id)", body: Data(), headers: [:])
            #expect(deleted.status == .ok)
            #expect(deleted.string("event") == "message_delete")
            #expect(try await world.all(client).map(\.appNotificationId) == ["dl-1"])

            let unknown = try await client.call(.put, "/\(topic)/nope/clear", body: Data(), headers: [:])
            #expect(unknown.status == .notFound, "\(unknown.text)")
            #expect(unknown.int("http") == 404, "\(unknown.text)")
            #expect(unknown.int("code") == 40401, "\(unknown.text)")
            #expect(unknown.string("error") != nil, "\(unknown.text)")
            let again = try await client.call(.delete, "/\(topic)/\(id)", body: Data(), headers: [:])
            #expect(again.status == .notFound)
        }
    }

    @Test(
        "ntfy refusals: unknown or revoked topic 404, bad priority, click, sequence id, attachments, delay 400, a secret needs its bearer token; all in ntfy's error JSON, nothing written",
        arguments: Backend.available)
    func ntfyRefusals(backend: Backend) async throws {
        let harness = try await ServiceHarness(backend)
        try await harness.router { client in
            let world = try await harness.world(client)
            let (path, subscriptionId) = try await world.webhook(client)
            let topic = String(path.split(separator: "/").last!)
            let cases: [(String, Data, [String: String], HTTPResponse.Status)] = [
                ("/unknown-topic", Data("x".utf8), [:], .notFound),
                ("/\(topic)", Data("x".utf8), ["Priority": "6"], .badRequest),
                ("/\(topic)", Data("x".utf8), ["Click": "javascript:alert(1)"], .badRequest),
                ("/\(topic)", Data("x".utf8), ["X-Sequence-ID": "has space"], .badRequest),
                ("/\(topic)", Data([0xFF, 0xD8, 0xFF, 0xE0]), [:], .badRequest),
                ("/\(topic)", Data("x".utf8), ["Attach": "https://example.com/file.jpg"], .badRequest),
                ("/\(topic)", Data("x".utf8), ["X-Delay": "5s"], .badRequest),
                ("/\(topic)", Data("x".utf8), ["X-In": "4d"], .badRequest),
                ("/\(topic)", Data("x".utf8), ["X-At": "tomorrow, 10am"], .badRequest),
                ("/", Data(#"{"message":"no topic"}"#.utf8), [:], .badRequest),
                ("/", Data(#"{"topic":"\#(topic)","priority":"high"}"#.utf8), [:], .badRequest),
                ("/", Data("not json".utf8), [:], .badRequest),
            ]
            for (uri, body, headers, status) in cases {
                let reply = try await client.call(.post, uri, body: body, headers: headers)
                #expect(
                    reply.status == status && reply.int("http") == Int(status.code) && reply.int("code") == Int(status.code) * 100 + 1
                        && reply.string("error") != nil,
                    "\(uri) \(headers): \(reply.status) \(reply.text)")
            }
            #expect(try await world.all(client).isEmpty)

            let secret = try await world.hookToken(client, secret: "hunter2")
            #expect(try await client.call(.post, "/\(secret)", body: Data("x".utf8), headers: [:]).status == .unauthorized)
            #expect(
                try await client.call(.post, "/\(secret)", body: Data("with the secret".utf8), headers: ["Authorization": "Bearer hunter2"]).status
                    == .ok)

            #expect(try await client.call(.delete, "/v1/me/subscriptions/\(subscriptionId)", token: world.userToken).status == .noContent)
            let revoked = try await client.call(.post, "/\(topic)", body: Data("x".utf8), headers: [:])
            #expect(revoked.status == .notFound)
            #expect(revoked.int("code") == 40401)
            #expect(try await world.all(client).count == 1)
        }
    }

    @Test(
        "ntfy: a delayed publish (X-Delay, X-At, delay in JSON) is held durably, across a restart, and published once when due",
        arguments: Backend.available)
    func delayed(backend: Backend) async throws {
        let clock = ManualClock()
        let directory = Repository.temporaryDirectory("notty-delay")
        let storage = try await backend.makeStorage(in: directory)
        // The first service's own folder is not the store's: it is removed when that service stops.
        let first = try await ServiceHarness(storage: storage, clock: clock)
        let (world, topic) = try await first.router { client in
            let world = try await first.world(client)
            let topic = try await world.hookToken(client)
            let held = try await client.call(.post, "/\(topic)", body: Data("Feed the cat".utf8), headers: ["X-Delay": "30m", "Title": "Reminder"])
            #expect(held.status == .ok, "\(held.text)")
            #expect(held.int("time") == Int(clock.now().timeIntervalSince1970) + 1800, "\(held.text)")
            let at = Int(clock.now().timeIntervalSince1970) + 2400
            #expect(
                try await client.call(.post, "/\(topic)", body: Data("At an hour".utf8), headers: ["X-At": String(at), "X-Sequence-ID": "hour"])
                    .status == .ok)
            #expect(
                try await client.call(.post, "/", body: Data(#"{"topic":"\#(topic)","message":"In JSON","delay":"45m"}"#.utf8), headers: [:]).status
                    == .ok)
            // Held through a webhook revoked before it is due: dropped.
            let (revokedPath, revokedId) = try await world.webhook(client)
            let revokedTopic = String(revokedPath.split(separator: "/").last!)
            #expect(try await client.call(.post, "/\(revokedTopic)", body: Data("Never".utf8), headers: ["X-Delay": "30m"]).status == .ok)
            #expect(try await client.call(.delete, "/v1/me/subscriptions/\(revokedId)", token: world.userToken).status == .noContent)
            #expect(try await world.all(client).isEmpty, "a delayed publish arrived at once")
            return (world, topic)
        }
        _ = topic
        // A restart: another service on the same store.
        let reopened: any ServiceStorage =
            backend == .sqlite
            ? try SQLiteStorage(path: directory.appendingPathComponent("server.sqlite").path)
            : try await PostgresStorage.connect(url: (storage as! PostgresStorage).url, logger: .quiet, timeout: .seconds(30))
        let second = try await ServiceHarness(storage: reopened, directory: directory, clock: clock)
        try await second.router { client in
            // The maintenance loop publishes what is due every half second; so may this test.
            func titles() async throws -> [String] { try await world.all(client).map { $0.payload.visualContent?.title ?? "" }.sorted() }
            clock.advance(by: 1801)
            _ = try await second.service.publishing.publishDueDelayed()
            #expect(try await eventually(timeout: .seconds(20)) { try await titles() == ["Reminder"] })
            clock.advance(by: 1000)  // within the access token's hour
            _ = try await second.service.publishing.publishDueDelayed()
            #expect(try await eventually(timeout: .seconds(20)) { try await titles() == ["At an hour", "In JSON", "Reminder"] })
            #expect(try await titles() == ["At an hour", "In JSON", "Reminder"])
            #expect(try await world.all(client).first { $0.appNotificationId == "hour" } != nil)
            // Nothing is published twice: after this cursor the feed moves only for a barrier, a
            // publish held 30 s that only the service's own sweep publishes (this test does not
            // sweep once it is due). The sweep that publishes it read the clock after the cursor
            // was read; the service's sweeps run one after another, and each publishes what it
            // claimed in due order: a second publish of an earlier one (by this test's sweep
            // below, by an earlier sweep or by that one) is in the feed before the barrier.
            let cursor = try #require(try await client.call(.get, "/v1/me/notifications/changes", token: world.userToken).string("cursor"))
            _ = try await second.service.publishing.publishDueDelayed()
            #expect(try await client.call(.post, "/\(topic)", body: Data("Barrier".utf8), headers: ["X-Delay": "30s"]).status == .ok)
            clock.advance(by: 31)  // still within the access token's hour
            #expect(try await eventually(timeout: .seconds(20)) { try await titles().contains("Barrier") })
            let since = try await client.call(.get, "/v1/me/notifications/changes?since=\(cursor)", token: world.userToken).decode(ChangesPage.self)
            #expect(
                since.changes.map { $0.payload.visualContent?.title ?? "" } == ["Barrier"],
                "published again: \(since.changes.map(\.appNotificationId))")
        }
    }

    @Test(
        "a + in a query string is a space and names are decoded (form encoding, as ntfy and browsers read it): ntfy's GET publish, its query aliases, a text hook's title, Gotify's ?token=",
        arguments: Backend.available)
    func queryStringsAreForms(backend: Backend) async throws {
        let harness = try await ServiceHarness(backend)
        try await harness.router { client in
            let world = try await harness.world(client)
            let topic = try await world.hookToken(client)
            let sent = try await client.call(.get, "/\(topic)/publish?message=door+opened&t=Front+door", body: Data(), headers: [:])
            #expect(sent.status == .ok, "\(sent.text)")
            #expect(sent.string("title") == "Front door", "\(sent.text)")
            #expect(sent.string("message") == "door opened", "\(sent.text)")
            let plus = try await client.call(.post, "/\(topic)?title=1%2B1+is+2&%74ags=tada", body: Data("sum".utf8), headers: [:])
            #expect(plus.status == .ok, "\(plus.text)")
            let (path, _) = try await world.webhook(client)
            let texted = try await client.hook("\(path)?title=Nightly+backup&group=home+lab", "finished", headers: ["Content-Type": "text/plain"])
            #expect(texted.status == .ok || texted.status == .accepted, "\(texted.text)")
            let token = try await world.hookToken(client)
            let gotify = try await client.call(
                .post, "/message?token=\(token)", body: Data("message=from+gotify&title=Go+tify".utf8),
                headers: ["Content-Type": "application/x-www-form-urlencoded"])
            #expect(gotify.status == .ok, "\(gotify.text)")

            let seen = try await world.all(client)
            let titles = Set(seen.compactMap { $0.payload.visualContent?.title })
            #expect(titles.contains("Front door"), "\(titles)")
            #expect(titles.contains("🎉 1+1 is 2"), "\(titles)")
            #expect(titles.contains("Nightly backup"), "\(titles)")
            #expect(titles.contains("Go tify"), "\(titles)")
            #expect(seen.first { $0.payload.visualContent?.title == "Front door" }?.payload.visualContent?.body == "door opened")
            #expect(seen.first { $0.payload.visualContent?.title == "Nightly backup" }?.groupName == "home lab")
        }
    }

    @Test(
        "Gotify: the token as X-Gotify-Key, ?token= or bearer; JSON, urlencoded and multipart bodies; priority 0–10; the click URL from extras; Gotify's answer and errors",
        arguments: Backend.available)
    func gotify(backend: Backend) async throws {
        let harness = try await ServiceHarness(backend)
        try await harness.router { client in
            let world = try await harness.world(client)
            let token = try await world.hookToken(client)
            // curl "https://push.example.de/message?token=<apptoken>" -F "title=my title" -F "message=my message" -F "priority=5"
            let boundary = "----notty1234"
            let multipart =
                ["title": "my title", "message": "my message", "priority": "5"].sorted { $0.key < $1.key }
                .map { "--\(boundary)\r\nContent-Disposition: form-data; name=\"\($0.key)\"\r\n\r\n\($0.value)\r\n" }.joined() + "--\(boundary)--\r\n"
            let form = try await client.call(
                .post, "/message?token=\(token)", body: Data(multipart.utf8), headers: ["Content-Type": "multipart/form-data; boundary=\(boundary)"])
            #expect(form.status == .ok, "\(form.text)")
            #expect(form.string("title") == "my title", "\(form.text)")
            #expect(form.int("priority") == 5, "\(form.text)")
            #expect((form.int("id") ?? 0) > 0, "\(form.text)")
            #expect(form.int("appid") != nil, "\(form.text)")
            let json =
                #"{"title":"Backup","message":"**done**","priority":8,"extras":{"client::display":{"contentType":"text/markdown"},"client::notification":{"click":{"url":"https://nas.lan/backups"}}}}"#
            let keyed = try await client.call(
                .post, "/message", body: Data(json.utf8), headers: ["X-Gotify-Key": token, "Content-Type": "application/json"])
            #expect(keyed.status == .ok, "\(keyed.text)")
            #expect(keyed.string("date") != nil, "\(keyed.text)")
            let urlencoded = try await client.call(
                .post, "/message", body: Data("message=just+a+line&priority=1".utf8),
                headers: ["Authorization": "Bearer \(token)", "Content-Type": "application/x-www-form-urlencoded"])
            #expect(urlencoded.status == .ok)

            let seen = try await world.all(client)
            func find(_ title: String) -> UserNotification? { seen.first { $0.payload.visualContent?.title == title } }
            #expect(find("my title")?.priority == Priority.none)
            #expect(find("my title")?.payload.visualContent?.body == "my message")
            #expect(find("Backup")?.priority == .high)
            #expect(find("Backup")?.launchUrl == "https://nas.lan/backups")
            #expect(find("just a line")?.priority == .low)

            for (uri, headers, body) in [
                ("/message", [String: String](), #"{"message":"no token"}"#),
                ("/message?token=wrong", [:], #"{"message":"wrong token"}"#),
                ("/message", ["X-Gotify-Key": "ntfy-topic-is-not-a-token"], #"{"message":"x"}"#),
            ] {
                let reply = try await client.call(
                    .post, uri, body: Data(body.utf8), headers: headers.merging(["Content-Type": "application/json"]) { a, _ in a })
                #expect(reply.status == .unauthorized, "\(reply.text)")
                #expect(reply.string("error") == "Unauthorized", "\(reply.text)")
                #expect(reply.int("errorCode") == 401, "\(reply.text)")
                #expect(reply.string("errorDescription") != nil, "\(reply.text)")
            }
            for body in [
                #"{"title":"no message"}"#, #"{"message":"x","priority":11}"#, #"{"message":5}"#, "[1,2",
                #"{"message":"x","extras":{"client::notification":{"click":{"url":"ftp://x"}}}}"#,
            ] {
                let reply = try await client.call(
                    .post, "/message", body: Data(body.utf8), headers: ["X-Gotify-Key": token, "Content-Type": "application/json"])
                #expect(reply.status == .badRequest, "\(body): \(reply.text)")
                #expect(reply.string("error") == "Bad Request", "\(body): \(reply.text)")
                #expect(reply.int("errorCode") == 400, "\(body): \(reply.text)")
            }
            #expect(try await world.all(client).count == 3)
        }
    }

    @Test(
        "a form on the hook URL is read as fields (title, message or body, priority, url), urlencoded or multipart; a file part is refused",
        arguments: Backend.available)
    func forms(backend: Backend) async throws {
        let harness = try await ServiceHarness(backend)
        try await harness.router { client in
            let world = try await harness.world(client)
            let (path, _) = try await world.webhook(client)
            // Apprise's form:// sends version, title, message and type.
            let urlencoded = try await client.call(
                .post, path, body: Data("version=1.0&title=Form+title&message=Line+one%0Aline+two&type=info&priority=high".utf8),
                headers: ["Content-Type": "application/x-www-form-urlencoded"])
            #expect(urlencoded.status == .ok, "\(urlencoded.text)")
            #expect(urlencoded.ids.count == 1, "\(urlencoded.text)")
            // curl -d 'Backup failed' sends text as urlencoded: it stays text.
            let curlText = try await client.call(
                .post, path, body: Data("Backup failed\nnas-1: disk full".utf8), headers: ["Content-Type": "application/x-www-form-urlencoded"])
            #expect(curlText.status == .ok, "\(curlText.text)")
            let boundary = "xyz"
            let multipart =
                "--xyz\r\nContent-Disposition: form-data; name=\"title\"\r\n\r\nMultipart\r\n--xyz\r\nContent-Disposition: form-data; name=\"body\"\r\n\r\nits body\r\n--xyz\r\nContent-Disposition: form-data; name=\"url\"\r\n\r\nhttps://example.com/x\r\n--xyz--\r\n"
            #expect(
                try await client.call(.post, path, body: Data(multipart.utf8), headers: ["Content-Type": "multipart/form-data; boundary=\(boundary)"])
                    .status == .ok)
            for disposition in [#"name="attach"; filename="a.txt""#, "name=\"attach\"; filename*=UTF-8''caf%C3%A9.txt"] {
                let file = "--xyz\r\nContent-Disposition: form-data; \(disposition)\r\n\r\nfile\r\n--xyz--\r\n"
                let refused = try await client.call(
                    .post, path, body: Data(file.utf8), headers: ["Content-Type": "multipart/form-data; boundary=xyz"])
                #expect(refused.status == .badRequest, "\(disposition)")
                #expect(refused.errorCode == "badRequest", "\(disposition)")
            }
            let unterminated = try await client.call(
                .post, path, body: Data("--xyz\r\nContent-Disposition: form-data; name=\"title\"\r\n\r\nno end".utf8),
                headers: ["Content-Type": "multipart/form-data; boundary=xyz"])
            #expect(unterminated.status == .badRequest)

            let seen = try await world.all(client)
            let form = try #require(seen.first { $0.payload.visualContent?.title == "Form title" })
            #expect(form.payload.visualContent?.body == "Line one\nline two")
            #expect(form.priority == .high)
            let multi = try #require(seen.first { $0.payload.visualContent?.title == "Multipart" })
            #expect(multi.payload.visualContent?.body == "its body")
            #expect(multi.launchUrl == "https://example.com/x")
            #expect(seen.first { $0.payload.visualContent?.title == "Backup failed" }?.payload.visualContent?.body == "nas-1: disk full")
            #expect(seen.count == 3)
        }
    }

    @Test("500 random header, body and query combinations on each door: never a 5xx")
    func randomInput() async throws {
        let harness = try await ServiceHarness {
            $0.publishRate = 1_000_000; $0.publishBurst = 1_000_000
        }
        try await harness.router { client in
            let world = try await harness.world(client)
            let token = try await world.hookToken(client)
            var random = SeededRandom(seed: 20_261_126)
            let names = [
                "Title", "X-Priority", "p", "Tags", "X-Click", "X-Actions", "X-Sequence-ID", "Content-Type", "X-Gotify-Key", "Markdown",
                "Authorization", "Icon",
            ]
            let values = [
                "", "5", "urgent", "0", "-1", "99999999999999999999", "https://example.com", "view, Open, https://x.y", "[{\"action\":\"view\"}]",
                "a,b,,c", "application/json", "multipart/form-data; boundary=x", "application/x-www-form-urlencoded", token, "Bearer \(token)",
                "\u{1F600}", String(repeating: "y", count: 3000), "%00", "\\u0000",
            ]
            let bodies = [
                "", "x", "{", "{}", "[]", #"{"topic":"\#(token)"}"#, #"{"topic":"\#(token)","message":{"a":1}}"#, #"{"message":"m","priority":"5"}"#,
                "--x\r\nContent-Disposition: form-data; name=\"message\"\r\n\r\nhi\r\n--x--\r\n", "title=a&message=b&priority=x", "\u{0}\u{1}\u{2}",
            ]
            let doors = ["/\(token)", "/", "/message", "/message?token=\(token)", "/\(token)/publish", "/\(token)/seq/clear", "/v1/hooks/\(token)"]
            let methods: [HTTPRequest.Method] = [.post, .put, .get, .delete]
            for door in doors {
                for _ in 0..<500 {
                    var headers: [String: String] = [:]
                    for _ in 0..<Int.random(in: 0...4, using: &random) {
                        headers[names[Int.random(in: 0...(names.count - 1), using: &random)]] =
                            values[Int.random(in: 0...(values.count - 1), using: &random)]
                    }
                    let query =
                        Int.random(in: 0...3, using: &random) == 0
                        ? (door.contains("?") ? "&" : "?")
                            + "p=\(values[Int.random(in: 0...(values.count - 1), using: &random)].prefix(20).addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")"
                        : ""
                    var body = Data(bodies[Int.random(in: 0...(bodies.count - 1), using: &random)].utf8)
                    if Int.random(in: 0...9, using: &random) == 0 {
                        body = Data((0..<Int.random(in: 0...64, using: &random)).map { _ in UInt8(Int.random(in: 0...255, using: &random)) })
                    }
                    let method = methods[Int.random(in: 0...(methods.count - 1), using: &random)]
                    let reply = try await client.call(method, door + query, body: body, headers: headers)
                    #expect(reply.status.code < 500, "\(method) \(door)\(query) \(headers): \(reply.status) \(reply.text)")
                }
            }
        }
    }
}
