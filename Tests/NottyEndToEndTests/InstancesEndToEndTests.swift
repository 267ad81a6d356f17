import Foundation
import NottyCore
import NottyPOSIX
import NottyStore
import NottySync
import NottyTestSupport
import Testing

/// Two real `notty serve` processes on one PostgreSQL database; device A signed in to the
/// first, device B to the second, each running `notty poll --live` (its doorbell).
@Suite(
    "Two notty serve instances on one PostgreSQL", .timeLimit(.minutes(5)), .serialized,
    .enabled(if: TestPostgres.testsRun, "PostgreSQL is not available here"))
struct InstancesEndToEndTests {
    @Test(
        "A on instance 1, B on instance 2: a publish, a dismiss and a delete reach every device by its doorbell; one instance killed, the other serves; restarted, it rejoins"
    )
    func twoInstances() async throws {
        let directory = Repository.temporaryDirectory("notty-instances")
        let environment = ["NOTTY_POSTGRES_URL": try await TestPostgres.createDatabase()]
        let one = try await ServeProcess(directory: directory.appendingPathComponent("one"), environment: environment)
        let two = try await ServeProcess(sharingStorageOf: one, directory: directory.appendingPathComponent("two"))
        let world = try await TwoDevices(directory: directory, a: one, b: two)
        let (a, b) = (world.a, world.b)

        let logA = directory.appendingPathComponent("poll-a.log"), logB = directory.appendingPathComponent("poll-b.log")
        let pollA = try a.start(["poll", "--live"], log: logA)
        let pollB = try b.start(["poll", "--live"], log: logB)
        defer {
            for poll in [pollA, pollB] where poll.isRunning { poll.signal(SIGTERM) }
        }
        func text(_ url: URL) -> String { (try? String(contentsOf: url, encoding: .utf8)) ?? "" }
        #expect(await eventually(timeout: .seconds(10)) { text(logA).contains("connection: live") && text(logB).contains("connection: live") })
        let storeA = try world.store(a)
        let storeB = try world.store(b)

        // A publish through instance 1 rings A (on 1) and B (on 2).
        let first = try await world.publish("Build failed")
        let second = try await world.publish("Disk 91% full")
        #expect(
            try await eventually(timeout: .seconds(10)) {
                try (await storeA.perform { try $0.notification(id: second) }) != nil && storeB.notification(id: second) != nil
            },
            "the publish through instance 1 did not reach both devices within 2 s")

        // A dismiss through instance 2 (B's) reaches A on instance 1.
        let dismiss = try await b.run(["dismiss", first])
        #expect(dismiss.status == 0, "\(dismiss.err)")
        #expect(
            try await eventually(timeout: .seconds(10)) {
                try (await storeA.perform { try $0.notification(id: first) })?.userActionState == .dismissed
            },
            "B's dismiss through instance 2 did not reach A within 2 s")

        // A delete through instance 1 (A's) reaches B on instance 2.
        #expect(try await a.run(["delete", second]).status == 0)
        #expect(
            try await eventually(timeout: .seconds(10)) { try (await storeB.perform { try $0.notification(id: second) }) == nil },
            "A's delete through instance 1 did not reach B within 2 s")

        // Instance 2 killed: instance 1 keeps serving; B cannot sync meanwhile.
        two.sigkill()
        let third = try await world.publish("Deploy finished")
        #expect(try await eventually(timeout: .seconds(10)) { try (await storeA.perform { try $0.notification(id: third) }) != nil })
        #expect(try await b.run(["sync"]).status != 0, "instance 2 is down")

        // Restarted on its port, instance 2 rejoins: B reconnects, catches up and is rung again.
        try await two.start()
        #expect(
            try await eventually(timeout: .seconds(30)) { try (await storeB.perform { try $0.notification(id: third) }) != nil },
            "B did not catch up after instance 2 came back")
        let fourth = try await world.publish("Backup finished")
        #expect(try await eventually(timeout: .seconds(5)) { try (await storeB.perform { try $0.notification(id: fourth) }) != nil })
        #expect(try await a.run(["sync"]).status == 0)
        #expect(try await b.run(["sync"]).status == 0)
        let listA = try await a.run(["list", "--view", "all", "--json"]).out
        let listB = try await b.run(["list", "--view", "all", "--json"]).out
        for id in [first, third, fourth] { #expect(listA.contains(id) && listB.contains(id)) }
        #expect(!listA.contains(second) && !listB.contains(second))
    }

    @Test(
        "A device revoked through instance 1 is refused on its very next request to instance 2; an app subscription revoked through 1 stops publishes through 2; a user removed by notty admin too"
    )
    func revocationOnEveryInstance() async throws {
        let directory = Repository.temporaryDirectory("notty-instances-revoke")
        let environment = ["NOTTY_POSTGRES_URL": try await TestPostgres.createDatabase()]
        let one = try await ServeProcess(directory: directory.appendingPathComponent("one"), environment: environment)
        let two = try await ServeProcess(sharingStorageOf: one, directory: directory.appendingPathComponent("two"))
        let world = try await TwoDevices(directory: directory, a: one, b: two)
        let (a, b) = (world.a, world.b)

        // Instance 2 has B's token and A's app subscription in hand (publishes cache them).
        #expect(try await b.run(["sync"]).status == 0)
        let publishThroughTwo = { (title: String) async throws -> NottyCLI.Result in
            try await a.run([
                "publish", "--server", two.url, "--client-id", two.clientId, "--client-secret=\(two.clientSecret)",
                "--uns-id", world.uns, "--title", title,
            ])
        }
        #expect(try await publishThroughTwo("cached").status == 0)

        let devices = try await a.run(["devices", "--json"]).out.split(separator: "\n").compactMap { JSONValue(jsonText: String($0)) }
        func id(_ match: (JSONValue) -> Bool) -> String? {
            guard case .string(let id)? = devices.first(where: match)?["userNotificationSubscriptionId"] else { return nil }
            return id
        }
        let deviceB = try #require(id { $0["deviceName"] == .string("B") })
        let appSubscription = try #require(id { $0["targetHostName"] == .string("ci.example.com") })

        #expect(try await a.run(["devices", "revoke", deviceB]).status == 0)
        let refused = try await b.run(["sync"])
        #expect(refused.status == 1 && refused.err.contains("notty login again"), "B still syncs through instance 2: \(refused.err)")

        #expect(try await a.run(["devices", "revoke", appSubscription]).status == 0)
        let stopped = try await publishThroughTwo("after revoke")
        #expect(
            stopped.status == 1 && stopped.err.contains("403"), "instance 2 still publishes with a revoked X-UNS-ID: \(stopped.out) \(stopped.err)")

        // notty admin (another process) removes the user: A's token is refused at once.
        #expect(try await one.admin.run(["admin", "user", "remove", "alice"], environment: environment).status == 0)
        let gone = try await a.run(["sync"])
        #expect(gone.status == 1, "a removed user still syncs: \(gone.out)")
    }

    @Test("An instance killed with SIGKILL in the middle of a publishing burst loses no publish it acknowledged; the other instance has them all")
    func killedMidBurst() async throws {
        let directory = Repository.temporaryDirectory("notty-instances-kill")
        defer { try? FileManager.default.removeItem(at: directory) }
        let environment = ["NOTTY_POSTGRES_URL": try await TestPostgres.createDatabase()]
        let one = try await ServeProcess(
            directory: directory.appendingPathComponent("one"), environment: environment,
            extraArguments: ["--publish-rate", "100000", "--publish-burst", "100000"])
        defer { one.stop() }
        let two = try await ServeProcess(sharingStorageOf: one, directory: directory.appendingPathComponent("two"))
        defer { two.stop() }
        let device = NottyCLI(home: directory.appendingPathComponent("device"))
        try await device.login(two.url)
        let uns = try await device.run(["subscribe", "--app", "ci.example.com"]).out.trimmingCharacters(in: .whitespacesAndNewlines)
        let appToken = try await token(one.url, ["grant_type": "client_credentials", "client_id": one.clientId, "client_secret": one.clientSecret])

        let acknowledged = Locked<Set<String>>([])  // the appNotificationIds answered 201
        let url = one.url
        let burst = Task {
            await withTaskGroup(of: Void.self) { group in
                for worker in 0..<8 {
                    group.addTask {
                        for n in 0..<100_000 {
                            let id = "w\(worker)-\(n)"
                            guard
                                let answer = try? await ServiceClient.send(
                                    .POST, url + "/beta/me/notifications",
                                    headers: [("Authorization", "Bearer \(appToken)"), ("X-UNS-ID", uns), ("Content-Type", "application/json")],
                                    body: Data(#"{"appNotificationId":"\#(id)","payload":{"rawContent":"x"}}"#.utf8)),
                                answer.status == 201
                            else { return }
                            acknowledged.update { _ = $0.insert(id) }
                        }
                    }
                }
            }
        }
        // Killed once a hundred publishes were acknowledged, however long that takes on a loaded
        // machine (the bound only keeps a broken service from hanging the run; no rate is asked).
        #expect(await eventually(timeout: .seconds(120)) { acknowledged.value.count >= 100 })
        one.sigkill()
        await burst.value
        let acked = acknowledged.value
        #expect(acked.count >= 100)

        // Everything acknowledged is in the feed, read through the other instance.
        let userToken = try await token(two.url, ["grant_type": "password", "username": "alice", "password": "s3cret-pw"])
        let stored = try await feedAppNotificationIds(two.url, userToken: userToken)
        let lost = acked.subtracting(stored)
        #expect(lost.isEmpty, "\(lost.count) acknowledged publishes are gone: \(lost.prefix(5))")
        report("killed mid-burst: \(acked.count) acknowledged, \(stored.count) stored")
    }

    @Test(
        "PostgreSQL stopped for a few seconds under publishers: every publish is answered 201 or 503, within 10 s; both instances recover without a restart; no acknowledged publish is lost; the cross-instance doorbell rings again"
    )
    func postgresOutage() async throws {
        let directory = Repository.temporaryDirectory("notty-instances-outage")
        defer { try? FileManager.default.removeItem(at: directory) }
        // A cluster of this test's own (durable: it is stopped under load), on its own port.
        let cluster = try await TestPostgres.Cluster.start()
        defer {
            _ = try? Repository.runWaiting([".ci/postgres-server", "--stop", cluster.directory])
            try? FileManager.default.removeItem(atPath: cluster.directory)
        }
        let environment = ["NOTTY_POSTGRES_URL": try await TestPostgres.createDatabase(on: cluster.url)]
        let one = try await ServeProcess(
            directory: directory.appendingPathComponent("one"), environment: environment,
            extraArguments: ["--publish-rate", "100000", "--publish-burst", "100000"])
        defer { one.stop() }
        let two = try await ServeProcess(sharingStorageOf: one, directory: directory.appendingPathComponent("two"))
        defer { two.stop() }
        let world = try await TwoDevices(directory: directory, a: one, b: two)
        let logB = directory.appendingPathComponent("poll-b.log")
        let pollB = try world.b.start(["poll", "--live"], log: logB)
        defer { if pollB.isRunning { pollB.signal(SIGTERM) } }
        func text(_ url: URL) -> String { (try? String(contentsOf: url, encoding: .utf8)) ?? "" }
        #expect(await eventually(timeout: .seconds(10)) { text(logB).contains("connection: live") }, "\(text(logB))")
        let appToken = try await token(one.url, ["grant_type": "client_credentials", "client_id": one.clientId, "client_secret": one.clientSecret])
        let uns = world.uns

        // Four publishers on instance 1, each noting every answer and how long it took.
        let acknowledged = Locked<Set<String>>([])
        let answers = Locked<[(status: Int, seconds: Double)]>([])
        let running = Locked(true)
        let url = one.url
        let publishers = Task {
            await withTaskGroup(of: Void.self) { group in
                for worker in 0..<4 {
                    group.addTask {
                        var n = 0
                        while running.value {
                            n += 1
                            let id = "p\(worker)-\(n)"
                            let start = ContinuousClock.now
                            let answer = try? await ServiceClient.send(
                                .POST, url + "/beta/me/notifications",
                                headers: [("Authorization", "Bearer \(appToken)"), ("X-UNS-ID", uns), ("Content-Type", "application/json")],
                                body: Data(#"{"appNotificationId":"\#(id)","payload":{"rawContent":"x"}}"#.utf8))
                            let seconds = start.duration(to: .now).seconds
                            answers.update { $0.append((answer?.status ?? -1, seconds)) }
                            if answer?.status == 201 { acknowledged.update { _ = $0.insert(id) } }
                            if answer?.status != 201 { try? await Task.sleep(for: .milliseconds(50)) }
                        }
                    }
                }
            }
        }
        #expect(await eventually(timeout: .seconds(60)) { acknowledged.value.count >= 50 })
        try await cluster.stop()
        let stoppedAt = acknowledged.value.count
        // Out for a few seconds: wait until the publishers have met the outage.
        // (Down until they have been refused 40 times, ten a publisher, not for a time.)
        #expect(
            await eventually(timeout: .seconds(60)) { answers.value.count { $0.status == 503 } >= 40 }, "no 503s while PostgreSQL was down")
        try await cluster.start()
        #expect(
            await eventually(timeout: .seconds(60)) { acknowledged.value.count >= stoppedAt + 50 }, "publishing did not recover without a restart")
        running.update { $0 = false }
        await publishers.value

        let all = answers.value
        let statuses = Dictionary(grouping: all, by: \.status).mapValues(\.count)
        let slowest = all.map(\.seconds).max() ?? 0
        report("outage: answers by status \(statuses.sorted { $0.key < $1.key }), slowest \(String(format: "%.2f", slowest)) s")
        #expect(Set(statuses.keys).isSubset(of: [201, 503]), "answers other than 201 and 503: \(statuses)")
        #expect(slowest < 10, "a publish took \(slowest) s to be answered")

        // Nothing acknowledged is lost (read through instance 2).
        let userToken = try await token(two.url, ["grant_type": "password", "username": "alice", "password": "s3cret-pw"])
        let stored = try await feedAppNotificationIds(two.url, userToken: userToken)
        let lost = acknowledged.value.subtracting(stored)
        #expect(lost.isEmpty, "\(lost.count) acknowledged publishes are gone: \(lost.prefix(5))")

        // The doorbell across instances rings again: a publish through 1 reaches B on 2.
        let storeB = try world.store(world.b)
        let after = try await world.publish("After PostgreSQL came back")
        #expect(
            try await eventually(timeout: .seconds(15)) { try (await storeB.perform { try $0.notification(id: after) }) != nil },
            "B was not rung after the outage:\n\(text(logB))")
    }
}

/// Every appNotificationId in the user's change feed on `server`, from the start.
func feedAppNotificationIds(_ server: String, userToken: String) async throws -> Set<String> {
    var stored = Set<String>()
    var cursor = "0"
    while true {
        let answer = try await ServiceClient.send(
            .GET, server + "/v1/me/notifications/changes?since=\(cursor)&limit=1000", headers: [("Authorization", "Bearer \(userToken)")], body: nil)
        guard answer.status == 200 else { throw SupportError("the change feed answered \(answer.status)") }
        let page = try NottyJSON.decoder.decode(ChangesPage.self, from: answer.body)
        stored.formUnion(page.changes.map(\.appNotificationId))
        cursor = page.cursor
        if !page.hasMore { return stored }
    }
}
