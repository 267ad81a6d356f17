import Foundation
import HTTPTypes
import NottyCore
import NottyTestSupport
import Testing

@testable import NottyHTTP
@testable import NottyService
@testable import NottyServicePostgres
@testable import NottyServiceSQLite

@Suite("Publishing while other writes run (PROTOCOL.md §2.2)", .timeLimit(.minutes(5)))
struct ConcurrentPublishingTests {
    @Test(
        "Removing a user while their feed is written: the removal and the writes each happen whole, nothing of the user is left, another user's feed is untouched",
        arguments: Backend.available)
    func removeUserDuringWrites(backend: Backend) async throws {
        let harness = try await ServiceHarness(backend)
        try await harness.router { client in
            let alice = try await harness.world(client)
            let bob = try await harness.world(client, user: "bob", app: (alice.clientId, alice.clientSecret))
            #expect(try await bob.publish(client, id: "bob-1").status == .created)
            #expect(try await alice.publish(client, id: "alice-1").status == .created)  // so she has a feed to lose
            let aliceId = try #require(try await harness.storage.user(name: "alice")).id
            let bobId = try #require(try await harness.storage.user(name: "bob")).id
            let user = aliceId
            // Straight to storage, as many writes of one batch, while the user is removed.
            let removed = try await withThrowingTaskGroup(of: Bool?.self) { group in
                for n in 0..<40 {
                    group.addTask {
                        let request = PublishRequest(
                            appNotificationId: "n\(n)",
                            payload: NotificationPayload(rawContent: nil, visualContent: VisualContent(title: "t", body: nil)))
                        _ = try? await harness.storage.publish(
                            PublishInput(
                                userId: user, hostName: alice.host, request: request, expiration: Date().addingTimeInterval(3600), now: Date()))
                        return nil
                    }
                    if n == 20 { group.addTask { try await harness.service.admin.removeUser(name: "alice") } }
                }
                return try await group.reduce(into: [Bool]()) { if let value = $1 { $0.append(value) } }
            }
            #expect(removed == [true])
            #expect(try await harness.storage.user(name: "alice") == nil)
            // Her notifications went with her (the feed's foreign key cascades), and a write after
            // the removal finds no user: nothing of hers is left.
            #expect(try await harness.storage.changes(userId: aliceId, since: 0, limit: 100)?.changes.isEmpty ?? true)
            #expect(try await harness.storage.changes(userId: bobId, since: 0, limit: 100)?.changes.map(\.appNotificationId) == ["bob-1"])
            #expect(try await alice.publish(client, id: "late").status == .forbidden)
        }
    }

    @Test("A batch of concurrent publishes with one row PostgreSQL refuses: the others are stored, only that one fails", arguments: Backend.available)
    func badRowInABatch(backend: Backend) async throws {
        let harness = try await ServiceHarness(backend)
        try await harness.router { client in
            let world = try await harness.world(client)
            let user = try #require(try await harness.storage.user(name: "alice")).id
            // Past the service's validation, straight to storage: a title PostgreSQL cannot store.
            // 20 at once: the batch with the bad row is written again a job at a time, each in its
            // savepoint (round trips one after another: 40 took over the storage's minute at the
            // peak of a full run).
            let results = await withTaskGroup(of: (Int, Bool).self) { group in
                for n in 0..<20 {
                    group.addTask {
                        let request = PublishRequest(
                            appNotificationId: "n\(n)",
                            payload: NotificationPayload(
                                rawContent: nil, visualContent: VisualContent(title: n == 17 ? "bad\u{0}" : "good", body: nil)))
                        let input = PublishInput(
                            userId: user, hostName: world.host, request: request, expiration: Date().addingTimeInterval(3600), now: Date())
                        return (n, (try? await harness.storage.publish(input)) != nil)
                    }
                }
                return await group.reduce(into: [Int: Bool]()) { $0[$1.0] = $1.1 }
            }
            let stored = try await harness.storage.changes(userId: user, since: 0, limit: 100)?.changes.map(\.appNotificationId) ?? []
            if backend == .postgres {
                #expect(results.filter { !$0.value }.map(\.key) == [17])
                #expect(Set(stored) == Set((0..<20).filter { $0 != 17 }.map { "n\($0)" }))
            } else {
                #expect(results.values.allSatisfy { $0 } && stored.count == 20)
            }
        }
    }

    @Test(
        "Concurrent publishes mixing new ids, re-publishes and one id sent three times: every id ends with one active notification, with its newest title, and the feed lists each once",
        arguments: Backend.available)
    func mixedBatch(backend: Backend) async throws {
        let harness = try await ServiceHarness(backend)
        try await harness.router { client in
            let world = try await harness.world(client)
            let user = try #require(try await harness.storage.user(name: "alice")).id
            func publish(_ id: String, _ title: String) async throws -> UserNotification {
                let request = PublishRequest(
                    appNotificationId: id, payload: NotificationPayload(rawContent: nil, visualContent: VisualContent(title: title, body: nil)))
                return try await harness.storage.publish(
                    PublishInput(userId: user, hostName: world.host, request: request, expiration: Date().addingTimeInterval(3600), now: Date()))
            }
            for n in 0..<10 { _ = try await publish("old\(n)", "first") }
            let published = try await withThrowingTaskGroup(of: UserNotification.self) { group in
                for n in 0..<20 { group.addTask { try await publish("new\(n)", "new") } }
                for n in 0..<10 { group.addTask { try await publish("old\(n)", "second") } }
                for _ in 0..<3 { group.addTask { try await publish("thrice", "again") } }
                return try await group.reduce(into: [UserNotification]()) { $0.append($1) }
            }
            #expect(published.count == 33)
            #expect(Set(published.filter { $0.appNotificationId.hasPrefix("old") }.map { $0.payload.visualContent?.title }) == ["second"])
            let feed = try #require(try await harness.storage.changes(userId: user, since: 0, limit: 1000))
            let active = feed.changes.filter { $0.status == .active }
            #expect(active.count == 31, "\(active.map(\.appNotificationId).sorted())")
            #expect(Set(active.map(\.appNotificationId)).count == 31, "an id has two active notifications")
            #expect(active.filter { $0.appNotificationId.hasPrefix("old") }.allSatisfy { $0.payload.visualContent?.title == "second" })
            #expect(Set(feed.changes.map(\.id)).count == feed.changes.count, "a notification is in the feed twice")
            for id in ["new0", "old0", "thrice"] {
                let current = try #require(try await harness.storage.notification(userId: user, hostName: world.host, appNotificationId: id))
                #expect(active.contains { $0.id == current.id })
            }
        }
    }

    @Test(
        "Two users' devices changing at once (one batch on PostgreSQL): each change lands on its own user's notification, a mutationId is per user and applies once, another user's id is 404",
        arguments: Backend.available)
    func concurrentMutations(backend: Backend) async throws {
        let harness = try await ServiceHarness(backend)
        try await harness.router { client in
            let alice = try await harness.world(client)
            _ = try await harness.world(client, user: "bob", app: (alice.clientId, alice.clientSecret))
            let storage = harness.storage
            var published: [String: [String]] = [:]  // user id → notification ids
            for name in ["alice", "bob"] {
                let user = try #require(try await storage.user(name: name)).id
                for n in 0..<10 {
                    let request = PublishRequest(
                        appNotificationId: "n\(n)",
                        payload: NotificationPayload(rawContent: nil, visualContent: VisualContent(title: "t\(n)", body: nil)))
                    published[user, default: []].append(
                        try await storage.publish(
                            PublishInput(
                                userId: user, hostName: alice.host, request: request, expiration: Date().addingTimeInterval(3600), now: Date())
                        ).id)
                }
            }
            let notifications = published
            let (aliceId, bobId) = (try #require(try await storage.user(name: "alice")).id, try #require(try await storage.user(name: "bob")).id)
            // Even: read; odd: dismissed. Each mutation twice at once, with the same mutationId
            // ("m0"… for both users: a mutationId is the user's own).
            func change(_ n: Int) -> StateChange { n % 2 == 0 ? StateChange(readState: .read) : StateChange(userActionState: .dismissed) }
            let results = await withTaskGroup(of: (String, MutationResult?).self) { group in
                for (user, ids) in notifications {
                    for (n, id) in ids.enumerated() {
                        for _ in 0..<2 {
                            group.addTask {
                                let result = try? await storage.mutate(
                                    userId: user, mutations: [Mutation(id: id, change: change(n), mutationId: "m\(n)")], now: Date())
                                return (user == aliceId ? "alice" : "bob", result?.first)
                            }
                        }
                    }
                }
                group.addTask {
                    let stolen = Mutation(id: notifications[bobId]![0], change: StateChange(userActionState: .dismissed), mutationId: "x")
                    return ("alice→bob", try? await storage.mutate(userId: aliceId, mutations: [stolen], now: Date()).first)
                }
                return await group.reduce(into: [(String, MutationResult?)]()) { $0.append($1) }
            }
            #expect(results.count == 41)
            #expect(results.filter { $0.0 != "alice→bob" }.allSatisfy { $0.1?.status == 200 }, "\(results.map { "\($0.0) \($0.1?.status ?? -1)" })")
            #expect(results.first { $0.0 == "alice→bob" }?.1?.status == 404)
            for (user, ids) in notifications {
                for (n, id) in ids.enumerated() {
                    let stored = try #require(try await storage.notification(id: id, userId: user))
                    #expect(
                        stored.readState == (n % 2 == 0 ? .read : .unread) && stored.userActionState == (n % 2 == 0 ? .noInteraction : .dismissed),
                        "\(user) n\(n): \(stored.readState) \(stored.userActionState)")
                }
            }
            // Sent again with another change, each user's m1 is a replay: not applied.
            for user in [aliceId, bobId] {
                let replay = try await storage.mutate(
                    userId: user,
                    mutations: [Mutation(id: notifications[user]![1], change: StateChange(userActionState: .activated), mutationId: "m1")],
                    now: Date())
                #expect(replay.first?.status == 200)
                #expect(try await storage.notification(id: notifications[user]![1], userId: user)?.userActionState == .dismissed)
            }
        }
    }
}
