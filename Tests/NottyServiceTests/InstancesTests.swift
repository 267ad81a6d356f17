import Foundation
import HummingbirdTesting
import NottyCore
import NottyStorageSupport
import NottyTestSupport
import PostgresNIO
import Synchronization
import Testing

@testable import NottyHTTP
@testable import NottyRecords
@testable import NottyService
@testable import NottyServicePostgres
@testable import NottyServiceSQLite

@Suite("PostgreSQL: URLs and the announcements between instances", .timeLimit(.minutes(5)))
struct PostgresPartsTests {
    @Test("postgres:// URLs: defaults, passwords, sockets, TLS modes and clear errors")
    func urls() throws {
        let plain = try PostgresURL("postgres://notty:s%40cret@db.example.com:6543/notifications")
        #expect(plain.host == "db.example.com" && plain.port == 6543 && plain.user == "notty" && plain.password == "s@cret")
        #expect(plain.database == "notifications" && plain.tls == .prefer, "TLS is preferred away from loopback")
        #expect(plain.description == "postgres://notty@db.example.com:6543/notifications", "no password in logs")
        let local = try PostgresURL("postgresql://me@127.0.0.1/")
        #expect(local.port == 5432 && local.database == "me" && local.tls == .disable && local.password == nil)
        let socket = try PostgresURL("postgres:///notty?host=/var/run/postgresql&user=notty")
        #expect(socket.socketDirectory == "/var/run/postgresql" && socket.user == "notty" && socket.database == "notty")
        #expect(try PostgresURL("postgres://a@h/d?sslmode=require").tls == .require)
        #expect(throws: PostgresURLError.self) { try PostgresURL("mysql://a@h/d") }
        #expect(throws: PostgresURLError.self) { try PostgresURL("postgres://a@h/d?sslmode=sometimes") }
        #expect(throws: PostgresURLError.self) { try PostgresURL("not a url at all") }
    }

    @Test("Announcements carry every user's cursor, split under NOTIFY's payload limit; an instance ignores its own")
    func announcements() {
        var cursors: [String: Int64] = [:]
        for i in 0..<600 { cursors[UUID().uuidString.lowercased()] = Int64(i * 7 + 1) }
        let payloads = PostgresStorage.announcements(cursors, from: "inst1")
        #expect(payloads.count > 1 && payloads.allSatisfy { $0.utf8.count < 8000 })
        var read: [String: Int64] = [:]
        for payload in payloads {
            read.merge(PostgresStorage.cursors(inAnnouncement: payload, ignoring: "inst2") ?? [:]) { $1 }
            #expect(PostgresStorage.cursors(inAnnouncement: payload, ignoring: "inst1") == nil)
        }
        #expect(read == cursors)
        #expect(PostgresStorage.cursors(inAnnouncement: "garbage", ignoring: "x") == nil)
        #expect(PostgresStorage.cursors(inAnnouncement: "other|user:notanumber", ignoring: "x") == nil)
    }
}

@Suite("Several instances on one PostgreSQL", .timeLimit(.minutes(5)), .enabled(if: TestPostgres.testsRun, "PostgreSQL is not available here"))
struct InstancesTests {
    @Test("Patches through two instances at once end by §1's rules, a mutationId applies once across them, and each rings for the other's changes")
    func twoInstances() async throws {
        let clock = ManualClock()
        let one = try await ServiceHarness(.postgres, clock: clock)
        let two = try await ServiceHarness(sharingDatabaseOf: one)
        try await one.router { c1 in
            try await two.router { c2 in
                let world = try await one.world(c1)
                let userId = try #require(try await one.storage.user(name: "alice")).id

                // A publish through one rings a device connected to two.
                let (ringId, rings) = two.service.hub.connect(userId: userId)
                let first = try #require(try await world.publish(c1, id: "first").string("id"))
                let rang = try await firstValue(of: rings, within: .seconds(5))
                two.service.hub.disconnect(userId: userId, id: ringId)
                #expect(rang != nil, "instance two's device was not told of instance one's publish")
                #expect(try await c2.call(.get, "/v1/me/notifications/\(first)", token: world.userToken).status == .ok)

                // The same notifications patched through both at once: per field, the later clock wins.
                var ids: [String] = []
                for i in 0..<16 { ids.append(try #require(try await world.publish(c1, id: "n\(i)").string("id"))) }
                let base = ISOTime.millis(clock.now())
                clock.advance(by: 600)
                let token = world.userToken
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for (i, id) in ids.enumerated() {
                        let oneIsLater = i % 2 == 0
                        let (t1, t2) = oneIsLater ? (base + 2000, base + 1000) : (base + 1000, base + 2000)
                        group.addTask {
                            let reply = try await c1.call(
                                .patch, "/v1/me/notifications/\(id)", token: token,
                                json: #"{"readState":"Read","userActionState":"Dismissed","changedAt":\#(t1)}"#)
                            #expect(reply.status == .ok)
                        }
                        group.addTask {
                            let reply = try await c2.call(
                                .patch, "/v1/me/notifications/\(id)", token: token,
                                json: #"{"readState":"Unread","userActionState":"Activated","changedAt":\#(t2)}"#)
                            #expect(reply.status == .ok)
                        }
                    }
                    try await group.waitForAll()
                }
                for (i, id) in ids.enumerated() {
                    let seenByOne = try await c1.call(.get, "/v1/me/notifications/\(id)", token: token).decode(UserNotification.self)
                    let seenByTwo = try await c2.call(.get, "/v1/me/notifications/\(id)", token: token).decode(UserNotification.self)
                    #expect(seenByOne == seenByTwo)
                    #expect(seenByOne.readState == (i % 2 == 0 ? .read : .unread))
                    #expect(seenByOne.userActionState == (i % 2 == 0 ? .dismissed : .activated))
                }

                // m-1 applied through one; then, at once, m-2 (newer) through two and m-1 resent
                // ten times through each with a clock that would win: the resends must not apply.
                let path = "/v1/me/notifications/\(first)"
                #expect(
                    try await c1.call(.patch, path, token: token, json: #"{"readState":"Read","changedAt":\#(base + 10_000),"mutationId":"m-1"}"#)
                        .status == .ok)
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask {
                        let newer = try await c2.call(
                            .patch, path, token: token, json: #"{"readState":"Unread","changedAt":\#(base + 20_000),"mutationId":"m-2"}"#)
                        #expect(newer.status == .ok)
                    }
                    for k in 0..<20 {
                        let client = k % 2 == 0 ? c1 : c2
                        group.addTask {
                            let resend = try await client.call(
                                .patch, path, token: token, json: #"{"readState":"Read","changedAt":\#(base + 30_000),"mutationId":"m-1"}"#)
                            #expect(resend.status == .ok)
                        }
                    }
                    try await group.waitForAll()
                }
                #expect(try await c1.call(.get, path, token: token).string("readState") == "Unread", "a resent m-1 was applied again")
                #expect(try await c2.call(.get, path, token: token).string("readState") == "Unread")

                // Both instances replay the same feed.
                let feedOne = try await c1.call(.get, "/v1/me/notifications/changes?limit=1000", token: token).decode(ChangesPage.self)
                let feedTwo = try await c2.call(.get, "/v1/me/notifications/changes?limit=1000", token: token).decode(ChangesPage.self)
                #expect(feedOne.changes == feedTwo.changes && feedOne.cursor == feedTwo.cursor && feedOne.changes.count == 17)
            }
        }
    }
}

extension InstancesTests {
    @Test(
        "Publishes to 400 users at once through one instance (big batches, each written by one statement): the other is told every user's newest cursor"
    )
    func announcedByBatches() async throws {
        let one = try await ServiceHarness(.postgres)
        let two = try await ServiceHarness(sharingDatabaseOf: one)
        let told = Mutex<[String: Int64]>([:])
        two.storage.setChangeHandler { cursors in told.withLock { $0.merge(cursors) { max($0, $1) } } }
        var users: [String] = []
        for n in 0..<400 {
            let id = UUID().uuidString.lowercased()
            try await one.storage.createUser(UserRecord(id: id, userName: "user\(n)", displayName: "User \(n)", passwordHash: "x"))
            users.append(id)
        }
        // User ids of 36 characters: a batch of more than about 150 users is announced in
        // several payloads.
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (n, user) in users.enumerated() {
                for k in 0..<2 {
                    group.addTask {
                        let request = PublishRequest(
                            appNotificationId: "n\(n)-\(k)",
                            payload: NotificationPayload(rawContent: nil, visualContent: VisualContent(title: "t", body: nil)))
                        _ = try await one.storage.publish(
                            PublishInput(
                                userId: user, hostName: "h.example", request: request, expiration: Date().addingTimeInterval(3600), now: Date()))
                    }
                }
            }
            try await group.waitForAll()
        }
        var newest: [String: Int64] = [:]
        for user in users {
            let page = try #require(try await one.storage.changes(userId: user, since: 0, limit: 10))
            #expect(page.changes.count == 2)
            newest[user] = page.lastSeq
        }
        let all = await eventually(timeout: .seconds(30)) { told.withLock { cursors in users.allSatisfy { cursors[$0] == newest[$0] } } }
        let missing = told.withLock { cursors in users.filter { cursors[$0] != newest[$0] }.count }
        #expect(all, "instance two was not told the newest cursor of \(missing) of 400 users")
    }
}

@Suite("PostgreSQL's schema", .timeLimit(.minutes(5)), .enabled(if: TestPostgres.testsRun, "PostgreSQL is not available here"))
struct PostgresSchemaTests {
    @Test(
        "A database of the previous schema, with a user, a device and a notification, moves to byte-order ids: its rows stay, readable and writable")
    func byteOrderIds() async throws {
        let url = try await TestPostgres.createDatabase()
        var sql = "CREATE TABLE notty_migrations (name TEXT PRIMARY KEY, applied TIMESTAMPTZ NOT NULL DEFAULT now());\n"
        for migration in PostgresStorage.migrations where migration.name != "v9" {
            sql += migration.statements.joined(separator: ";\n") + ";\nINSERT INTO notty_migrations (name) VALUES ('\(migration.name)');\n"
        }
        sql += """
            INSERT INTO users (id, user_name, display_name, password_hash) VALUES ('u-1', 'alice', 'Alice', 'x');
            INSERT INTO subscriptions (id, user_id, host_name, device_id, created, expires) VALUES ('s-1', 'u-1', 'h.example', 'd-1', 0, 9999999999999);
            INSERT INTO notifications (id, user_id, host_name, app_notification_id, priority, has_visual, title, expires, created, modified,
                                       read_state, read_at, action_state, action_at, seq)
            VALUES ('n-1', 'u-1', 'h.example', 'first', 'High', true, 'Kept', 9999999999999, 1000, 1000, 'Unread', 0, 'None', 0, nextval('notty_seq'));
            """
        try await TestPostgres.psql(url, sql)
        let storage = try await PostgresStorage.connect(url: PostgresURL(url), logger: .quiet, timeout: .seconds(30))
        defer { Task { try? await storage.close() } }
        let collations = try await storage.run { connection in
            try await connection.query(
                "SELECT table_name || '.' || column_name, coalesce(collation_name, 'default') FROM information_schema.columns WHERE table_name IN ('users', 'notifications') AND column_name IN ('id', 'user_id')",
                logger: .quiet
            ).collect((String, String).self)
        }
        #expect(Dictionary(uniqueKeysWithValues: collations) == ["users.id": "C", "notifications.id": "C", "notifications.user_id": "C"])
        let page = try #require(try await storage.changes(userId: "u-1", since: 0, limit: 10))
        #expect(page.changes.map(\.payload.visualContent?.title) == ["Kept"])
        #expect(try await storage.subscription(id: "s-1")?.userId == "u-1")
        let request = PublishRequest(
            appNotificationId: "second", payload: NotificationPayload(rawContent: nil, visualContent: VisualContent(title: "New", body: nil)))
        _ = try await storage.publish(
            PublishInput(userId: "u-1", hostName: "h.example", request: request, expiration: Date().addingTimeInterval(3600), now: Date()))
        #expect(try await storage.changes(userId: "u-1", since: 0, limit: 10)?.changes.count == 2)
    }
}

extension PostgresSchemaTests {
    @Test("The feed statements take no rows as well as many: empty column arrays write and answer nothing")
    func emptyColumnArrays() async throws {
        let storage = try await PostgresStorage.connect(url: PostgresURL(TestPostgres.createDatabase()), logger: .quiet, timeout: .seconds(30))
        defer { Task { try? await storage.close() } }
        #expect(ColumnArrays().bindings.count == NotificationColumns.names.count + 1, "every column, and the words")
        let answered = try await storage.run { connection in
            _ = try await connection.execute(FeedStatements.Save(rows: ColumnArrays()), logger: .quiet)
            var rows = 0
            for try await _ in try await connection.execute(FeedStatements.InsertFresh(rows: ColumnArrays()), logger: .quiet) { rows += 1 }
            for try await _ in try await connection.execute(
                FeedStatements.PublishTogether(rows: ColumnArrays(), users: [], channel: "notty_test", instance: "test"), logger: .quiet)
            { rows += 1 }
            return rows
        }
        #expect(answered == 0)
        let count = try await storage.run { connection in
            try await connection.query("SELECT count(*)::bigint FROM notifications", logger: .quiet).collect(Int64.self)
        }
        #expect(count == [0])
    }
}

@Suite("PostgreSQL going away and coming back", .timeLimit(.minutes(5)), .enabled(if: TestPostgres.testsRun, "PostgreSQL is not available here"))
struct OutageTests {
    @Test("PostgreSQL down: 503 serviceUnavailable, /healthz fails, nothing half-written; back: the service recovers without a restart")
    func outage() async throws {
        // Without fsync: PostgreSQL is stopped and started cleanly here, never killed, so what it
        // wrote is all there; with fsync on, its fresh database's migrations took over their
        // 60 s at the start of a full run (every test's storage beside them on 2 cores).
        // A timeout of 15 s rather than the 5 s `notty serve` gives: at the peak of a full run a
        // fresh cluster's calls took over 5 s for a whole minute (sign-in answered 503 throughout);
        // while PostgreSQL is down a call waits it out before its 503.
        let cluster = try await TestPostgres.Cluster.start(fast: true)
        let storage = try await PostgresStorage.connect(
            url: PostgresURL(TestPostgres.createDatabase(on: cluster.url)), logger: .quiet, timeout: .seconds(15))
        let harness = try await ServiceHarness(storage: storage, logger: .quiet)
        try await harness.router { client in
            let world = try await harness.world(client)
            // A store just made on a loaded machine may answer its first transactions late (503,
            // retry later), as after the outage below: asked again, as a client would.
            let first = try await retrying(for: .seconds(60)) {
                try await world.publish(client, id: "before")
            } while: {
                $0.status == .serviceUnavailable
            }
            let before = try #require(first.string("id"), "\(first.status) \(first.text)")
            #expect(try await client.call(.get, "/healthz").status == .ok)

            try await cluster.stop()
            let health = try await client.call(.get, "/healthz")
            #expect(health.status == .serviceUnavailable)
            let publish = try await world.publish(client, id: "during")
            #expect(publish.status == .serviceUnavailable && publish.errorCode == "serviceUnavailable", "\(publish.text)")
            let patch = try await client.call(.patch, "/v1/me/notifications/\(before)", token: world.userToken, json: #"{"readState":"Read"}"#)
            #expect(patch.status == .serviceUnavailable)
            #expect(try await client.call(.get, "/v1/me/notifications/changes", token: world.userToken).status == .serviceUnavailable)

            try await cluster.start()
            let healthy = try await eventually(timeout: .seconds(30), every: .milliseconds(200)) {
                try await client.call(.get, "/healthz").status == .ok
            }
            #expect(healthy, "the service did not recover once PostgreSQL was back")
            // PostgreSQL answers /healthz's ping before it is quick again: on a loaded machine the
            // first transactions on fresh connections may still miss the timeout and get a 503
            // (with Retry-After), as a client is told to retry. The publish must land by itself.
            let after = try await retrying(for: .seconds(60)) {
                try await world.publish(client, id: "after")
            } while: {
                $0.status == .serviceUnavailable
            }
            #expect(after.status == .created, "\(after.text)")
            let read = try await retrying(for: .seconds(60)) {
                try await client.call(.get, "/v1/me/notifications/changes", token: world.userToken)
            } while: {
                $0.status == .serviceUnavailable
            }
            let feed = try read.decode(ChangesPage.self)
            #expect(feed.changes.map(\.appNotificationId) == ["before", "after"], "the failed publish and patch left nothing behind")
            #expect(feed.changes.first?.readState == .unread)
        }
    }
}

extension OutageTests {
    @Test("A write its caller was told did not happen (no answer in time) does not happen when PostgreSQL gets to it later")
    func lateWriteRolledBack() async throws {
        let url = try await TestPostgres.createDatabase()
        let storage = try await PostgresStorage.connect(url: PostgresURL(url), logger: .quiet, timeout: .seconds(30))
        let holder = try await PostgresStorage.connect(url: PostgresURL(url), logger: .quiet, timeout: .seconds(30))
        defer {
            Task {
                try? await storage.close()
                try? await holder.close()
            }
        }
        try await storage.run { try await $0.exec("CREATE TABLE probe (n integer)", logger: .quiet) }
        // Another session holds a lock the write needs: the write waits in PostgreSQL.
        let (locked, lockedGate) = AsyncStream<Void>.makeStream()
        let (release, releaseGate) = AsyncStream<Void>.makeStream()
        let holding = Task {
            try await holder.run(timeout: .seconds(120)) { connection in
                try await connection.exec("BEGIN", logger: .quiet)
                try await connection.exec("LOCK TABLE probe IN SHARE MODE", logger: .quiet)
                lockedGate.yield()
                for await _ in release { break }
                try await connection.exec("ROLLBACK", logger: .quiet)
            }
        }
        #expect(try await firstValue(of: locked, within: .seconds(60)) != nil)
        await #expect(throws: StorageError.self) {
            try await storage.transaction(timeout: .milliseconds(500)) { connection in
                try await connection.exec("INSERT INTO probe VALUES (1)", logger: .quiet)
            }
        }
        // The lock goes: PostgreSQL now runs the insert the caller was told failed.
        releaseGate.yield()
        try await holding.value
        func count(_ sql: String) async -> Int64? {
            try? await storage.run { try await $0.query(PostgresQuery(unsafeSQL: sql), logger: .quiet).collect(Int64.self).first }
        }
        // Every other session of this database idle (the late transaction ended one way or the other).
        let settled = await eventually(timeout: .seconds(60), every: .milliseconds(100)) {
            await count(
                """
                SELECT count(*)::bigint FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()
                AND (state IN ('active', 'idle in transaction') OR wait_event_type = 'Lock')
                """) == 0
        }
        #expect(settled)
        #expect(await count("SELECT count(*)::bigint FROM probe") == 0, "the write its caller gave up on was committed")
    }
}

/// The first value of `stream`, or `nil` when none comes within `timeout`.
func firstValue<T: Sendable>(of stream: AsyncStream<T>, within timeout: Duration) async throws -> T? {
    try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask {
            var iterator = stream.makeAsyncIterator()
            return await iterator.next()
        }
        group.addTask {
            try await Task.sleep(for: timeout)
            return nil
        }
        defer { group.cancelAll() }
        return try await group.next() ?? nil
    }
}
