import Foundation
import GRDB
import NottyCore
import NottyTestSupport
import Testing

@testable import NottyHTTP
@testable import NottyService
@testable import NottyServicePostgres
@testable import NottyServiceSQLite

/// `GET /v1/me/notifications?search=QUERY` (and `$search=`, PROTOCOL.md §17): the query language
/// answered from each backend's full-text index, the same as ``SearchQuery/matches(_:now:)``.
@Suite("Searching the inbox on the service", .timeLimit(.minutes(5)))
struct SearchTests {
    @Test(
        "words are word starts in title, body, app and group, folded in every script; phrases, -exclusion and every field; within the view, paged; an unknown field is a 400",
        arguments: Backend.available)
    func search(backend: Backend) async throws {
        let harness = try await ServiceHarness(backend)
        try await harness.router { client in
            let world = try await harness.world(client)
            func publish(_ id: String, _ title: String, body: String = "nothing", extra: String = "") async throws -> String {
                let reply = try await world.publish(
                    client, #"{"appNotificationId":"\#(id)","payload":{"visualContent":{"title":"\#(title)","body":"\#(body)"}}\#(extra)}"#)
                return try #require(reply.string("id"), "\(reply.text)")
            }
            let deploy = try await publish("deploy", "Deploy API")
            let disk = try await publish("disk", "Disk 90% full", body: "on the replica", extra: #","priority":"High""#)
            let disk2 = try await publish("disk2", "disk full", body: "primary db", extra: #","priority":"Low""#)
            let build = try await publish("build", "Build failed on main", body: "see C:\\\\logs", extra: #","launchUrl":"https://ci.example/1""#)
            let koln = try await publish("koln", "ÜBERLAST in Köln", body: "ПРИВЕТ Σοφία")
            let grouped = try await publish("grouped", "Nightly", extra: #","groupName":"CI""#)
            func found(_ text: String, view: String = "all", top: Int = 100, skip: Int = 0, parameter: String = "search") async throws -> [String] {
                let query = text.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
                let reply = try await client.call(
                    .get, "/v1/me/notifications?view=\(view)&\(parameter)=\(query)&top=\(top)&skip=\(skip)", token: world.userToken)
                #expect(reply.status == .ok, "\(text): \(reply.text)")
                return try reply.decode(NotificationList.self).value.map(\.id)
            }
            #expect(try await found("dep") == [deploy], "a word's start, either case")
            #expect(try await found("ploy").isEmpty, "not the middle of a word")
            #expect(try await found("disk full") == [disk2, disk], "every word, in any field, newest first")
            #expect(try await found("disk -replica") == [disk2], "-term excludes")
            #expect(try await found("-disk -deploy -nightly -build") == [koln], "only exclusions")
            #expect(try await found("\"failed on main\"") == [build], "a phrase")
            #expect(try await found("\"main on failed\"").isEmpty, "a phrase's order")
            #expect(try await found("\"full on\"").isEmpty, "a phrase does not run from the title into the body")
            #expect(try await found("priority:high disk") == [disk])
            #expect(try await found("priority:low") == [disk2])
            #expect(try await found("group:ci") == [grouped], "a group, case folded")
            #expect(try await found("-group:ci nightly").isEmpty)
            #expect(try await found("app:GRAPHNOTIFICATIONS.sample.windows.com").count == 6, "the app, whole")
            #expect(try await found("app:graphnotifications").isEmpty, "the app is whole, not a start")
            #expect(try await found("sample").count == 6, "the app's words")
            #expect(try await found("has:link") == [build])
            for folded in ["überlast", "UBERLAST", "koln", "KÖLN"] {
                #expect(try await found(folded) == [koln], "\(folded): accents and case folded")
            }
            #expect(try await found("привет σοφια") == [koln], "Cyrillic and Greek folded")
            #expect(try await found("c logs") == [build], "punctuation splits words")
            #expect(try await found("disk", top: 1, skip: 1) == [disk], "paged")
            #expect(try await found("  ").count == 6, "blank: the whole view")
            #expect(try await found("deploy", parameter: "$search") == [deploy], "$search, as Graph spells it")
            #expect(try await found("after:2000-01-01 before:2999-01-01 deploy") == [deploy])
            #expect(try await found("before:2000-01-01").isEmpty)
            let read = try await client.call(.patch, "/v1/me/notifications/\(disk)", token: world.userToken, json: #"{"readState":"Read"}"#)
            #expect(read.status == .ok)
            #expect(try await found("disk", view: "unread") == [disk2], "within the view")
            #expect(try await found("disk is:read") == [disk])
            #expect(try await found("disk -is:read") == [disk2])
            #expect(try await found("disk") == [disk2, disk], "a row written again is found once, with its words")
            // The counts of a search (a saved view's tab): every view's.
            let counted = try await client.call(.get, "/v1/me/notifications/counts?search=disk", token: world.userToken)
            let counts = try counted.decode(ViewCounts.self)
            #expect(counts.all == 2 && counts.unread == 1 && counts.read == 1, "\(counted.text)")
            let refusedCount = try await client.call(.get, "/v1/me/notifications/counts?search=colour%3Ared", token: world.userToken)
            #expect(refusedCount.status == .badRequest && refusedCount.text.contains("no field colour:"))
            for (query, words) in [
                ("colour:red", "no field colour:"), ("priority:urgent", "priority: is high, normal or low"), ("is:", "is: needs a value"),
            ] {
                let reply = try await client.call(
                    .get, "/v1/me/notifications?search=\(query.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)",
                    token: world.userToken)
                #expect(reply.status == .badRequest && reply.text.contains(words), "\(query): \(reply.text)")
            }
            let long = try await client.call(
                .get, "/v1/me/notifications?search=\(String(repeating: "x", count: SearchQuery.maxLength + 1))", token: world.userToken)
            #expect(long.status == .badRequest && long.text.contains("longer than 200"), "\(long.text)")
            let nul = try await client.call(.get, "/v1/me/notifications?search=a%00b", token: world.userToken)
            #expect(nul.status == .badRequest, "\(nul.text)")
        }
    }

    @Test("a team's notifications are searched with the member's own, by team: and by who changed them last", arguments: Backend.available)
    func team(backend: Backend) async throws {
        let harness = try await ServiceHarness(backend)
        try await harness.router { client in
            let (alice, bob, team) = try await TeamNotificationTests.team(harness, client)
            let own = try #require(try await alice.publish(client, id: "own", title: "Disk full at home").string("id"))
            let shared = try #require(try await team.publish(client, id: "shared", title: "Disk full on ops").string("id"))
            func found(_ world: World, _ text: String) async throws -> [String] {
                let query = text.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
                let reply = try await client.call(.get, "/v1/me/notifications?search=\(query)", token: world.userToken)
                #expect(reply.status == .ok, "\(reply.text)")
                return try reply.decode(NotificationList.self).value.map(\.id)
            }
            #expect(try await found(alice, "disk full") == [shared, own])
            #expect(try await found(bob, "disk") == [shared], "a member finds the team's, not alice's own")
            #expect(try await found(alice, "team:OPS") == [shared])
            #expect(try await found(alice, "-team:ops disk") == [own])
            let read = try await client.call(.patch, "/v1/me/notifications/\(shared)", token: bob.userToken, json: #"{"readState":"Read"}"#)
            #expect(read.status == .ok, "\(read.text)")
            #expect(try await found(alice, "by:bob") == [shared])
            #expect(try await found(alice, "by:alice").isEmpty)
        }
    }

    @Test("a store made before search is indexed when it opens, and answers the same while it is", arguments: [1, 60_000])
    func earlierStore(rows: Int) async throws {
        let directory = Repository.temporaryDirectory("notty-search")
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("server.sqlite").path
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let userId: String
        do {
            let storage = try SQLiteStorage(path: path, migratingUpTo: "v18 heartbeats")
            userId = try await NotificationService(storage: storage, secrets: .ephemeral()).admin.addUser(name: "alice", password: "s3cret-pw").id
            try await storage.pool.write { db in
                try db.execute(
                    sql: """
                        WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < ?2 - 1)
                        INSERT INTO notifications (id, user_id, host_name, app_notification_id, priority, has_visual, title, body, expires, created,
                                                   modified, deleted, read_state, read_at, action_state, action_at, seq)
                        SELECT printf('%08d-0000-4000-8000-%012d', i, i), ?1, 'ci.example.com', 'n' || i, 'None', 1, 'Report ' || i, 'Kälte',
                               ?3 + 3600000, ?3 - i, ?3, 0, 'Unread', 0, 'NoInteraction', 0, i + 1 FROM n
                        """, arguments: [userId, rows, ISOTime.millis(now)])
            }
            try await storage.close()
        }
        let storage = try SQLiteStorage(path: path)
        let query = try SearchQuery.parse("kalt \"report 0\"")
        let first = try await storage.list(userId: userId, view: .all, top: 5, skip: 0, search: query, now: now)
        #expect(first.map(\.appNotificationId) == ["n0"], "found, indexed or not")
        var waited = 0
        while try await storage.pool.read { db in try SQLiteSearch.unindexed(db) } > 0, waited < 6000 {
            try await Task.sleep(for: .milliseconds(10))
            waited += 1
        }
        #expect(try await storage.pool.read { db in try SQLiteSearch.unindexed(db) } == 0)
        #expect(try await storage.list(userId: userId, view: .all, top: 5, skip: 0, search: query, now: now).map(\.appNotificationId) == ["n0"])
        let all = try await storage.list(userId: userId, view: .all, top: 100_000, skip: 0, search: try SearchQuery.parse("kälte"), now: now)
        #expect(all.count == rows)
        // An index another folding made is made again (here: one that says it was version 0).
        try await storage.pool.write { db in try db.execute(sql: "UPDATE search_index SET folding = 0") }
        try await storage.close()
        let again = try SQLiteStorage(path: path)
        #expect(try await again.pool.read { db in try Int.fetchOne(db, sql: "SELECT folding FROM search_index") } == SearchIndexTerms.foldingVersion)
        waited = 0
        while try await again.pool.read({ db in try SQLiteSearch.unindexed(db) }) > 0, waited < 6000 {
            try await Task.sleep(for: .milliseconds(10))
            waited += 1
        }
        #expect(try await again.list(userId: userId, view: .all, top: 5, skip: 0, search: query, now: now).map(\.appNotificationId) == ["n0"])
        try await again.close()
    }

    @Test("a window reads the same rows whichever way the store finds them: a walk, an index's few rows, or its set of many")
    func plans() async throws {
        let directory = Repository.temporaryDirectory("notty-search-plans")
        defer { try? FileManager.default.removeItem(at: directory) }
        let storage = try SQLiteStorage(path: directory.appendingPathComponent("server.sqlite").path)
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let userId = try await NotificationService(storage: storage, secrets: .ephemeral()).admin.addUser(name: "alice", password: "s3cret-pw").id
        // 12,000 rows: "common" in every one, "half" in every other, "mid" in a third (as many
        // as the index's few rows go), "rare" in one of 1,000, one of w0…w39 (a start of few
        // words and one of many); two apps; a fifth read.
        try await storage.pool.write { db in
            try db.execute(
                sql: """
                    WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 11999)
                    INSERT INTO notifications (id, user_id, host_name, app_notification_id, priority, has_visual, title, body, expires, created,
                                               modified, deleted, read_state, read_at, action_state, action_at, seq)
                    SELECT printf('%08d-0000-4000-8000-%012d', i, i), ?1, CASE WHEN i % 4 = 0 THEN 'a.example.com' ELSE 'b.example.com' END,
                           'n' || i, 'None', 1,
                           'Build common' || CASE WHEN i % 2 = 0 THEN ' half' ELSE '' END || CASE WHEN i % 3 = 0 THEN ' mid' ELSE '' END
                             || CASE WHEN i % 1000 = 0 THEN ' rare' ELSE '' END || ' w' || (i % 40),
                           'nothing', ?2 + 3600000, ?2 - i, ?2, 0, CASE WHEN i % 5 = 0 THEN 'Read' ELSE 'Unread' END, 0, 'NoInteraction', 0, i + 1
                    FROM n
                    """, arguments: [userId, ISOTime.millis(now)])
        }
        let everything = try await storage.list(userId: userId, view: .all, top: 100_000, skip: 0, search: nil, now: now)
        #expect(everything.count == 12_000)
        for text in [
            "common half", "rare common", "mid half", "half common", "\"build common half\"", "mid app:a.example.com is:unread",
            "half -mid", "common -half", "app:b.example.com", "\"common mid\"", "rare is:read", "mid rare", "nowhere common", "w1 common", "w half",
            "ha mi", "w17 -half", "omm",
        ] {
            let query = try SearchQuery.parse(text)
            let expected = everything.filter { query.matches($0, now: now) }.map(\.id)
            for (top, skip) in [(50, 0), (20, 150), (50, 300), (10, 5000)] {
                let found = try await storage.list(userId: userId, view: .all, top: top, skip: skip, search: query, now: now).map(\.id)
                #expect(found == Array(expected.dropFirst(skip).prefix(top)), "\(text) top \(top) skip \(skip)")
            }
        }
        try await storage.close()
    }

    @Test(
        "PostgreSQL asks its index for a rare word beside common ones (its statistics say which) and matches the rest on those rows: the same rows",
        .enabled(if: TestPostgres.testsRun, "PostgreSQL is not available here"))
    func postgresRareWords() async throws {
        let url = try await TestPostgres.createDatabase()
        let storage = try await PostgresStorage.connect(url: PostgresURL(url), logger: .quiet, timeout: .seconds(30))
        let userId = try await NotificationService(storage: storage, secrets: .ephemeral()).admin.addUser(name: "alice", password: "s3cret-pw").id
        let now = Date()
        for start in stride(from: 0, to: 3000, by: 500) {
            let inputs = try (start..<start + 500).map { i in
                let title = "Build common" + (i % 3 == 0 ? " mid" : "") + (i % 1000 == 7 ? " rare" : "") + " w\(i % 40)"
                return PublishInput(
                    userId: userId, hostName: "ci.example.com",
                    request: try PublishRequest(
                        body: Data(#"{"appNotificationId":"n\#(i)","payload":{"visualContent":{"title":"\#(title)"}}}"#.utf8)),
                    expiration: now + 3600, now: now - Double(3000 - i), secrets: .ephemeral())
            }
            _ = try await storage.publish(batch: inputs)
        }
        try await TestPostgres.psql(url, "ANALYZE notifications")
        let common = try await storage.run { connection in try await storage.commonWords(connection) }
        #expect((common["common"] ?? 0) > 0.9, "statistics: \(common.prefix(5))")
        #expect(PostgresStorage.rareTerms(try SearchQuery.parse("rare common"), common: common) == "('rare':*)")
        #expect(PostgresStorage.rareTerms(try SearchQuery.parse("common mid"), common: common) == nil, "no rare word: the whole query")
        let everything = try await storage.list(userId: userId, view: .all, top: 10_000, skip: 0, search: nil, now: now)
        for text in ["rare common", "rare -mid common", "w1 common rare", "common mid w17", "rare"] {
            let query = try SearchQuery.parse(text)
            let expected = everything.filter { query.matches($0, now: now) }.map(\.id)
            let found = try await storage.list(userId: userId, view: .all, top: 50, skip: 0, search: query, now: now).map(\.id)
            #expect(found == Array(expected.prefix(50)), "\(text)")
        }
        try await storage.close()
    }

    @Test(
        "saved views are preferences the service checks: a name, a query it reads, at most 20 a user (removed ones do not count); another user's are not seen",
        arguments: Backend.available)
    func savedViews(backend: Backend) async throws {
        let harness = try await ServiceHarness(backend)
        try await harness.router { client in
            let alice = try await harness.world(client)
            let bob = try await harness.world(client, user: "bob", app: (alice.clientId, alice.clientSecret))
            func write(_ world: World, _ entries: [(String, String)]) async throws -> Reply {
                let items = entries.map { #"{"key":"\#($0.0)","value":\#($0.1)}"# }.joined(separator: ",")
                return try await client.call(.patch, "/v1/me/preferences", token: world.userToken, json: #"{"preferences":[\#(items)]}"#)
            }
            let saved = try await write(alice, [("view.builds", #"{"query":"app:ci.example.com is:unread"}"#)])
            #expect(saved.status == .ok, "\(saved.text)")
            for (entry, words) in [
                (("view.a.b", #"{"query":"x"}"#), "letters, digits, - and _"),
                (("view.unread", #"{"query":"x"}"#), "built-in views"),
                (("view.v", #"{"query":"colour:red"}"#), "view.v: no field colour:"),
                (("view.v", #""just text""#), #"a saved view's value is {\"query\":\"…\"} or null"#),
            ] {
                let refused = try await write(alice, [entry])
                #expect(refused.status == .badRequest && refused.text.contains(words), "\(entry): \(refused.text)")
            }
            let nineteen = (1...19).map { ("view.v\($0)", #"{"query":"w\#($0)"}"#) }
            #expect(try await write(alice, nineteen).status == .ok, "20 in all")
            let more = try await write(alice, [("view.one-more", #"{"query":"x"}"#)])
            #expect(more.status == .badRequest && more.text.contains("at most 20 saved views"), "\(more.text)")
            #expect(
                try await write(alice, [("view.v1", "null"), ("view.one-more", #"{"query":"x"}"#)]).status == .ok, "a removed one frees its place")
            let bobs = try await client.call(.get, "/v1/me/preferences", token: bob.userToken)
            #expect(!bobs.text.contains("view."), "\(bobs.text)")
            #expect(try await write(bob, [("view.builds", #"{"query":"mine"}"#)]).status == .ok, "bob's own, beside alice's")
            let alices = try await client.call(.get, "/v1/me/preferences", token: alice.userToken)
            #expect(alices.text.contains("app:ci.example.com is:unread") && !alices.text.contains("mine"))
        }
    }
}
