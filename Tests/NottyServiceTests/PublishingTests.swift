import Foundation
import HTTPTypes
import NottyCore
import NottyTestSupport
import Testing

@testable import NottyHTTP
@testable import NottyRecords
@testable import NottyService
@testable import NottyServicePostgres
@testable import NottyServiceSQLite

@Suite("Publishing (PROTOCOL.md §2.2)", .timeLimit(.minutes(5)))
struct PublishingTests {
    @Test("Graph's two documented sample bodies are accepted as they are", arguments: Backend.available)
    func graphSamples(backend: Backend) async throws {
        let harness = try await ServiceHarness(backend)
        try await harness.router { client in
            let world = try await harness.world(client)
            let toast = try await world.publish(client, graphToastSample)
            #expect(toast.status == .created)
            let id = try #require(toast.string("id"))
            #expect(toast.headers[.location] == "/beta/me/notifications/\(id)")
            #expect(toast.string("priority") == "High")
            #expect(toast.string("groupName") == "TestGroup")
            #expect(toast["displayTimeToLive"] == .number(60))
            #expect(toast.string("readState") == "Unread")
            #expect(toast.string("userActionState") == "NoInteraction")
            #expect(toast["targetPolicy"] == .object(["platformTypes": .array([.string("windows"), .string("ios"), .string("android")])]))
            let raw = try await world.publish(client, graphRawSample)
            #expect(raw.status == .created)
            #expect(raw.string("targetHostName") == "graphnotifications.sample.windows.com")
            let stored = try raw.decode(UserNotification.self)
            #expect(stored.payload.rawContent == "Hello World!")
            // The v1.0 path is accepted too and answers with its own Location.
            let v1 = try await client.call(
                .post, "/v1.0/me/notifications", token: world.appToken, json: graphRawSample.replacingOccurrences(of: "testRaw", with: "v1Raw"),
                headers: ["X-UNS-ID": world.unsId])
            #expect(v1.status == .created)
            #expect(v1.headers[.location]?.hasPrefix("/v1.0/me/notifications/") == true)
        }
    }

    @Test("Re-publishing the same appNotificationId updates in place and makes it new again", arguments: Backend.available)
    func republish(backend: Backend) async throws {
        let harness = try await ServiceHarness(backend)
        try await harness.router { client in
            let world = try await harness.world(client)
            let first = try await world.publish(client, id: "build-1", title: "Build started")
            let id = try #require(first.string("id"))
            let patched = try await client.call(
                .patch, "/v1/me/notifications/\(id)", token: world.userToken, json: #"{"readState":"Read","userActionState":"Dismissed"}"#)
            #expect(patched.string("userActionState") == "Dismissed")
            let second = try await world.publish(client, id: "build-1", title: "Build failed", extra: #","priority":"Low""#)
            #expect(second.status == .created)
            #expect(second.string("id") == id)
            #expect(second.string("readState") == "Unread")
            #expect(second.string("userActionState") == "NoInteraction")
            #expect(second.string("priority") == "Low")
            let got = try await client.call(.get, "/v1/me/notifications/\(id)", token: world.userToken)
            #expect(try got.decode(UserNotification.self).payload.visualContent?.title == "Build failed")
            let counts = try await client.call(.get, "/v1/me/notifications/counts", token: world.userToken)
            #expect(
                try counts.decode(ViewCounts.self)
                    == {
                        var c = ViewCounts(); c.unread = 1; c.all = 1; return c
                    }())
        }
    }

    @Test("U+0000 in any text is a 400 on both backends (PostgreSQL's text cannot hold it), never a 5xx", arguments: Backend.available)
    func nulCharacter(backend: Backend) async throws {
        let harness = try await ServiceHarness(backend)
        try await harness.router { client in
            let world = try await harness.world(client)
            for body in [
                #"{"appNotificationId":"a\u0000b","payload":{"visualContent":{"title":"t"}}}"#,
                #"{"appNotificationId":"n","groupName":"g\u0000","payload":{"visualContent":{"title":"t"}}}"#,
                #"{"appNotificationId":"n","payload":{"visualContent":{"title":"t\u0000"}}}"#,
                #"{"appNotificationId":"n","payload":{"visualContent":{"title":"t","body":"\u0000"}}}"#,
                #"{"appNotificationId":"n","payload":{"rawContent":"\u0000"}}"#,
                #"{"appNotificationId":"n","launchUrl":"https://example.com/\u0000","payload":{"visualContent":{"title":"t"}}}"#,
            ] {
                let reply = try await world.publish(client, body)
                #expect(reply.status == .badRequest && reply.errorCode == "badRequest", "\(body): \(reply.status) \(reply.text)")
            }
            let page = try await client.call(.get, "/v1/me/notifications/changes", token: world.userToken).decode(ChangesPage.self)
            #expect(page.changes.isEmpty)
            // In a path: an id or token that cannot exist.
            for (method, path) in [
                (HTTPRequest.Method.get, "/v1/me/notifications/a%00b"), (.patch, "/v1/me/notifications/a%00b"),
                (.delete, "/v1/me/notifications/a%00b"), (.post, "/v1/hooks/a%00b"),
            ] {
                let reply = try await client.call(method, path, token: method == .post ? nil : world.userToken, json: #"{"readState":"Read"}"#)
                #expect(reply.status == .notFound, "\(method) \(path): \(reply.status) \(reply.text)")
            }
            let appDelete = try await client.call(.delete, "/beta/me/notifications/a%00b", token: world.appToken, headers: ["X-UNS-ID": world.unsId])
            #expect(appDelete.status.code < 500, "\(appDelete.status) \(appDelete.text)")
        }
    }

    @Test("Default priority is High with a visual toast and None for raw content", arguments: Backend.available)
    func defaultPriority(backend: Backend) async throws {
        let harness = try await ServiceHarness(backend)
        try await harness.router { client in
            let world = try await harness.world(client)
            #expect(try await world.publish(client, id: "v").string("priority") == "High")
            #expect(try await world.publish(client, #"{"appNotificationId":"r","payload":{"rawContent":"x"}}"#).string("priority") == "None")
        }
    }

    @Test(
        "Every validation failure is 400 badRequest with a message",
        arguments: [
            ("not json", "{"),
            ("an array", "[" + #"{"appNotificationId":"a","payload":{"rawContent":"x"}}"# + "]"),
            ("no appNotificationId", #"{"payload":{"rawContent":"x"}}"#),
            ("empty appNotificationId", #"{"appNotificationId":"","payload":{"rawContent":"x"}}"#),
            ("appNotificationId too long", #"{"appNotificationId":"\#(String(repeating: "a", count: 257))","payload":{"rawContent":"x"}}"#),
            ("no payload", #"{"appNotificationId":"a"}"#),
            ("empty payload", #"{"appNotificationId":"a","payload":{}}"#),
            ("visual without title", #"{"appNotificationId":"a","payload":{"visualContent":{"body":"b"}}}"#),
            ("title too long", #"{"appNotificationId":"a","payload":{"visualContent":{"title":"\#(String(repeating: "t", count: 1025))"}}}"#),
            ("groupName too long", #"{"appNotificationId":"a","groupName":"\#(String(repeating: "g", count: 257))","payload":{"rawContent":"x"}}"#),
            ("wrong type", #"{"appNotificationId":5,"payload":{"rawContent":"x"}}"#),
            ("bad priority", #"{"appNotificationId":"a","priority":"Urgent","payload":{"rawContent":"x"}}"#),
            ("bad ttl", #"{"appNotificationId":"a","displayTimeToLive":"soon","payload":{"rawContent":"x"}}"#),
            ("past expiry", #"{"appNotificationId":"a","expirationDateTime":"2001-01-01T00:00:00Z","payload":{"rawContent":"x"}}"#),
            ("expiry beyond max TTL", #"{"appNotificationId":"a","expirationDateTime":"2999-01-01T00:00:00Z","payload":{"rawContent":"x"}}"#),
            ("bad expiry", #"{"appNotificationId":"a","expirationDateTime":"tomorrow","payload":{"rawContent":"x"}}"#),
            ("another app's host", #"{"targetHostName":"other.example.com","appNotificationId":"a","payload":{"rawContent":"x"}}"#),
        ])
    func validation(_ name: String, _ body: String) async throws {
        let harness = try await ServiceHarness()
        try await harness.router { client in
            let world = try await harness.world(client)
            let reply = try await world.publish(client, body)
            #expect(reply.status == .badRequest, "\(name): \(reply.text)")
            #expect(reply.errorCode == "badRequest")
            #expect(reply.headers[HTTPField.Name("request-id")!] != nil)
            if case .object(let error)? = reply["error"], case .object(let inner)? = error["innerError"] {
                #expect(inner["request-id"] != nil)
                #expect(inner["date"] != nil)
            } else {
                Issue.record("no innerError in \(reply.text)")
            }
            let counts = try await client.call(.get, "/v1/me/notifications/counts", token: world.userToken)
            #expect(try counts.decode(ViewCounts.self).all == 0, "nothing was stored for \(name)")
        }
    }

    @Test("Expiry given by the app is kept; absent, the default TTL applies", arguments: Backend.available)
    func expiry(backend: Backend) async throws {
        let clock = ManualClock()
        let harness = try await ServiceHarness(backend, clock: clock)
        try await harness.router { client in
            let world = try await harness.world(client)
            let now = clock.now()
            let noExpiry = try await world.publish(client, id: "a").decode(UserNotification.self)
            #expect(noExpiry.expirationDateTime == ISOTime.truncated(now + 7 * 86_400))
            let given = ISOTime.format(now + 3600)
            let withExpiry = try await world.publish(
                client, #"{"appNotificationId":"b","expirationDateTime":"\#(given)","payload":{"rawContent":"x"}}"#)
            #expect(withExpiry.string("expirationDateTime") == given)
        }
    }

    @Test("Header, media type, size, auth and subscription errors", arguments: Backend.available)
    func requestErrors(backend: Backend) async throws {
        let harness = try await ServiceHarness(backend)
        try await harness.router { client in
            let world = try await harness.world(client)
            let other = try await harness.world(client, user: "bob", host: "ci.example.com")
            let body = #"{"appNotificationId":"a","payload":{"rawContent":"x"}}"#
            // No X-UNS-ID.
            let missing = try await client.call(.post, "/beta/me/notifications", token: world.appToken, json: body)
            #expect(missing.status == .badRequest)
            // Unknown, and another app's, subscription id: 403.
            let unknown = try await client.call(.post, "/beta/me/notifications", token: world.appToken, json: body, headers: ["X-UNS-ID": "nope"])
            #expect(unknown.status == .forbidden)
            #expect(unknown.errorCode == "forbidden")
            let foreign = try await client.call(
                .post, "/beta/me/notifications", token: world.appToken, json: body, headers: ["X-UNS-ID": other.unsId])
            #expect(foreign.status == .forbidden)
            // A user token cannot publish; no token, a garbage token: 401 with WWW-Authenticate.
            for token in [world.userToken, nil, "garbage"] {
                let reply = try await client.call(.post, "/beta/me/notifications", token: token, json: body, headers: ["X-UNS-ID": world.unsId])
                #expect(reply.status == .unauthorized)
                #expect(reply.errorCode == "unauthenticated")
                #expect(reply.headers[.wwwAuthenticate] == "Bearer")
            }
            // Not JSON media type: 415.
            let text = try await client.call(
                .post, "/beta/me/notifications", token: world.appToken, headers: ["X-UNS-ID": world.unsId, "Content-Type": "text/plain"])
            #expect(text.status == .unsupportedMediaType)
            #expect(text.errorCode == "unsupportedMediaType")
            // Over 64 KiB: 413.
            let huge = #"{"appNotificationId":"a","payload":{"rawContent":"\#(String(repeating: "x", count: 70_000))"}}"#
            let large = try await world.publish(client, huge)
            #expect(large.status == .contentTooLarge)
            #expect(large.errorCode == "payloadTooLarge")
            // A revoked subscription stops working.
            let revoke = try await client.call(.delete, "/v1/me/subscriptions/\(world.unsId)", token: world.userToken)
            #expect(revoke.status == .noContent)
            #expect(try await world.publish(client, body).status == .forbidden)
        }
    }

    @Test("The app-side DELETE removes it on every device; unknown is 404", arguments: Backend.available)
    func appDelete(backend: Backend) async throws {
        let harness = try await ServiceHarness(backend)
        try await harness.router { client in
            let world = try await harness.world(client)
            let id = try #require(try await world.publish(client, id: "deploy-7").string("id"))
            let deleted = try await client.call(.delete, "/beta/me/notifications/deploy-7", token: world.appToken, headers: ["X-UNS-ID": world.unsId])
            #expect(deleted.status == .noContent)
            #expect(try await client.call(.get, "/v1/me/notifications/\(id)", token: world.userToken).status == .notFound)
            let feed = try await client.call(.get, "/v1/me/notifications/changes", token: world.userToken).decode(ChangesPage.self)
            #expect(feed.changes.map(\.status) == [.deleted])
            let again = try await client.call(.delete, "/beta/me/notifications/deploy-7", token: world.appToken, headers: ["X-UNS-ID": world.unsId])
            #expect(again.status == .notFound)
            #expect(again.errorCode == "itemNotFound")
        }
    }

    @Test("A re-publish over an expired notification the sweeper has not reached deletes it and makes a new one", arguments: Backend.available)
    func republishOverExpired(backend: Backend) async throws {
        // At the storage level, where no maintenance service sweeps in between.
        let harness = try await ServiceHarness(backend)
        defer { try? FileManager.default.removeItem(at: harness.directory) }
        let user = try await harness.service.admin.addUser(name: "alice", password: "s3cret-pw")
        let storage = harness.storage
        let start = Date(timeIntervalSince1970: (Date().timeIntervalSince1970).rounded(.down))
        func publish(_ title: String, at now: Date) async throws -> UserNotification {
            let request = try PublishRequest(body: Data(#"{"appNotificationId":"build-7","payload":{"visualContent":{"title":"\#(title)"}}}"#.utf8))
            // The first two expire at start + 60; the last, published after that, 60 s after it is.
            let expiration = now < start + 60 ? start + 60 : now + 60
            return try await storage.publish(
                PublishInput(userId: user.id, hostName: "ci.example.com", request: request, expiration: expiration, now: now))
        }
        let first = try await publish("started", at: start)
        let inPlace = try await publish("running", at: start + 1)
        #expect(inPlace.id == first.id, "a live notification is updated in place")
        let after = try await publish("failed", at: start + 61)
        #expect(after.id != first.id, "the expired one is not brought back")
        let feed = try #require(try await storage.changes(userId: user.id, since: 0, limit: 10))
        #expect(feed.changes.map(\.id) == [first.id, after.id])
        #expect(feed.changes.map(\.status) == [.deleted, .active])
        #expect(feed.changes.last?.payload.visualContent?.title == "failed")
        #expect(try await storage.latestSeq(userId: user.id) == feed.lastSeq)
        try await storage.close()
    }

    @Test("SQLite acknowledges a publish only after a commit with synchronous=FULL")
    func durableCommits() async throws {
        let harness = try await ServiceHarness(.sqlite)
        defer { try? FileManager.default.removeItem(at: harness.directory) }
        let storage = try #require(harness.storage as? SQLiteStorage)
        // GRDB's pool sets NORMAL when it turns WAL on, after `prepareDatabase`; NORMAL may
        // lose the last commits on a power loss.
        #expect(try storage.writerPragma("synchronous") == 2)
        try await storage.close()
    }

    @Test("The Authorization scheme is read in any case and around blanks; anything else is 401", arguments: Backend.available)
    func authorizationHeader(backend: Backend) async throws {
        let harness = try await ServiceHarness(backend)
        try await harness.router { client in
            let world = try await harness.world(client)
            var n = 0
            for header in ["Bearer \(world.appToken)", "bearer  \(world.appToken) ", "BEARER\t\(world.appToken)"] {
                n += 1
                let reply = try await client.call(
                    .post, "/beta/me/notifications", json: #"{"appNotificationId":"h\#(n)","payload":{"rawContent":"x"}}"#,
                    headers: ["X-UNS-ID": world.unsId, "Authorization": header])
                #expect(reply.status == .created, "\(header.debugDescription) answered \(reply.text)")
            }
            for header in ["Bearer", "Bearer ", "Bearer  ", "Basic \(world.appToken)", "Bearerx \(world.appToken)", "\(world.appToken)"] {
                let reply = try await client.call(
                    .post, "/beta/me/notifications", json: #"{"appNotificationId":"bad","payload":{"rawContent":"x"}}"#,
                    headers: ["X-UNS-ID": world.unsId, "Authorization": header])
                #expect(reply.status == .unauthorized, "\(header.debugDescription) answered \(reply.status)")
            }
        }
    }

    @Test("Request ids are lowercase version 7 UUIDs in time order; notification ids version 8, random first, then in time order; all unique")
    func identifiers() {
        let pattern = /[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}/
        let millis: Int64 = 1_790_000_000_000
        let notifications = (0..<2000).map { Identifiers.notification(now: ISOTime.date(millis: millis + Int64($0))) }
        #expect(notifications.allSatisfy { $0.wholeMatch(of: /[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}/) != nil })
        #expect(Set(notifications.map { $0.prefix(8) }).count > 1990, "the short ids notty list shows differ")
        #expect(Set(notifications).count == 2000)
        // From the tenth character (the key of SQLite's index of ids) they follow the time: 42
        // bits of milliseconds, 16 before the version digit, 12 after it, 14 after the variant.
        #expect(zip(notifications, notifications.dropFirst()).allSatisfy { $0.dropFirst(9) < $1.dropFirst(9) })
        let years = [0, 1, 40, 80].map { Identifiers.notification(now: ISOTime.date(millis: millis + Int64($0) * 31_557_600_000)) }
        #expect(zip(years, years.dropFirst()).allSatisfy { $0.dropFirst(9) < $1.dropFirst(9) }, "\(years)")
        let digits = notifications[0].replacingOccurrences(of: "-", with: "")
        func field(_ from: Int, _ count: Int) -> UInt64 { UInt64(digits.dropFirst(from).prefix(count), radix: 16)! }
        #expect(field(8, 4) << 26 | field(13, 3) << 14 | field(16, 4) & 0x3fff == UInt64(millis))
        // Made in the same millisecond, they differ in their random bits at both ends.
        let together = (0..<2000).map { _ in Identifiers.notification(now: ISOTime.date(millis: millis)) }
        #expect(Set(together.map { $0.suffix(12) }).count > 1990 && Set(together.map { $0.prefix(8) }).count > 1990)
        let base = Date(timeIntervalSince1970: 1_790_000_000)
        var previous = ""
        var seen = Set<String>()
        for step in 0..<2000 {
            let id = Identifiers.timeOrdered(now: ISOTime.date(millis: 1_790_000_000_000 + Int64(step)))
            #expect(id.wholeMatch(of: pattern) != nil, "\(id)")
            #expect(id > previous, "a later millisecond sorts later")
            previous = id
            seen.insert(id)
            seen.insert(Identifiers.timeOrdered(now: base))
        }
        #expect(seen.count == 4000, "ids made in the same millisecond differ")
        // The first 48 bits are the milliseconds.
        let id = Identifiers.timeOrdered(now: base)
        let hex = id.replacingOccurrences(of: "-", with: "").prefix(12)
        #expect(UInt64(hex, radix: 16) == 1_790_000_000_000)
        // The generator behind the random bits gives the reference implementation's numbers.
        var generator = Xoshiro256(state: (1, 2, 3, 4))
        #expect((0..<4).map { _ in generator.next() } == [11520, 0, 1_509_978_240, 1_215_971_899_390_074_240])
        #expect("CI.Example.com".equalsIgnoringASCIICase("ci.example.COM"))
        #expect(!"ci.example.com".equalsIgnoringASCIICase("ci.example.co"))
        #expect(!"a@b".equalsIgnoringASCIICase("a`b"), "only letters fold")
    }

    @Test("Publishing is rate limited per app with 429 and Retry-After", arguments: Backend.available)
    func rateLimit(backend: Backend) async throws {
        // One token per 20 s, on a clock that stands still: however slow the machine, the bucket
        // does not refill between the four publishes (at the start of a full run on 2 cores they
        // took over 20 s).
        let harness = try await ServiceHarness(backend, clock: ManualClock()) {
            $0.publishRate = 0.05; $0.publishBurst = 3
        }
        try await harness.router { client in
            let world = try await harness.world(client)
            for i in 0..<3 { #expect(try await world.publish(client, id: "n\(i)").status == .created) }
            let limited = try await world.publish(client, id: "n3")
            #expect(limited.status == .tooManyRequests)
            #expect(limited.errorCode == "tooManyRequests")
            #expect(Int(limited.headers[.retryAfter] ?? "") ?? 0 >= 1)
        }
    }
}

@Suite("Links on the service (PROTOCOL.md §7.1)", .timeLimit(.minutes(5)))
struct LinkPublishingTests {
    @Test("launchUrl is validated, stored, echoed, carried in the feed and replaced by a re-publish", arguments: Backend.available)
    func launchUrl(backend: Backend) async throws {
        let harness = try await ServiceHarness(backend)
        try await harness.router { client in
            let world = try await harness.world(client)
            let bad = try await world.publish(client, id: "x", extra: #","launchUrl":"ftp://example.com/x""#)
            #expect(bad.status == .badRequest && bad.errorCode == "badRequest")
            let first = try await world.publish(client, id: "run-1", extra: #","launchUrl":"https://ci.example.com/runs/1""#)
            #expect(first.status == .created && first.string("launchUrl") == "https://ci.example.com/runs/1")
            let again = try await world.publish(client, id: "run-1", extra: #","launchUrl":"https://ci.example.com/runs/2""#)
            #expect(again.string("id") == first.string("id") && again.string("launchUrl") == "https://ci.example.com/runs/2")
            let none = try await world.publish(client, id: "plain")
            #expect(none.status == .created && none.string("launchUrl") == nil)
            let feed = try await client.call(.get, "/v1/me/notifications/changes", token: world.userToken).decode(ChangesPage.self)
            #expect(feed.changes.first { $0.appNotificationId == "run-1" }?.launchUrl == "https://ci.example.com/runs/2")
            #expect(feed.changes.first { $0.appNotificationId == "plain" }?.launchUrl == nil)
        }
    }
}

@Suite("A write is told before it returns", .timeLimit(.minutes(5)))
struct ChangeOrderTests {
    @Test(
        "the change handler (latest cursors, doorbells) has run when a publish or a mutation returns, however slow it is",
        arguments: Backend.available)
    func handlerBeforeReturn(backend: Backend) async throws {
        let harness = try await ServiceHarness(backend)
        defer { try? FileManager.default.removeItem(at: harness.directory) }
        let user = try await harness.service.admin.addUser(name: "alice", password: "s3cret-pw")
        let storage = harness.storage
        // A handler that takes 100 ms: were it run after the writer is resumed, the write would
        // return before it, and a conditional poll right after could answer 304 (the sync
        // simulation's seed 12190 stopped one round early this way).
        let told = Locked<[String: Int64]>([:])
        storage.setChangeHandler { cursors in
            usleep(100_000)
            told.update { $0.merge(cursors) { max($0, $1) } }
        }
        let now = Date()
        for round in 0..<3 {
            let request = try PublishRequest(body: Data(#"{"appNotificationId":"n\#(round)","payload":{"visualContent":{"title":"t"}}}"#.utf8))
            let stored = try await storage.publish(
                PublishInput(userId: user.id, hostName: "ci.example.com", request: request, expiration: now + 3600, now: now))
            let afterPublish = try await storage.latestSeq(userId: user.id)
            #expect(told.value[user.id] == afterPublish, "round \(round): the publish returned before its change was told")
            _ = try await storage.mutate(userId: user.id, mutations: [Mutation(id: stored.id, change: StateChange(readState: .read))], now: now + 1)
            let afterMutation = try await storage.latestSeq(userId: user.id)
            #expect(
                afterMutation > afterPublish && told.value[user.id] == afterMutation,
                "round \(round): the mutation returned before its change was told")
        }
        try? await storage.close()
    }
}
