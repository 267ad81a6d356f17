import Foundation
import GRDB
import NottyCore
import NottyTestSupport
import Testing

@Suite("Backup and restore of the service's store", .timeLimit(.minutes(6)), .serialized)
struct BackupTests {
    @Test(
        "4 publishers and 2 devices dismissing for 20 s, a backup in the middle: it holds every publish acknowledged before it began and passes integrity_check; restore is refused while the service runs; restored, both devices resync by themselves, send what they queued meanwhile and agree"
    )
    func backupWhileServingThenRestore() async throws {
        let world = try await TwoDevices()
        let server = world.service.admin
        let backup = world.directory.appendingPathComponent("backup.sqlite").path
        let acknowledged = Locked<[(id: String, at: ContinuousClock.Instant)]>([])
        let failures = Locked<[String]>([])
        let end = ContinuousClock.now + .seconds(20)

        // The backup begins once four publishes were acknowledged (told, not looked for).
        let enough = AsyncStream<Void>.makeStream()
        let backupStarted = Locked<ContinuousClock.Instant?>(nil)
        let backupResult = Locked<NottyCLI.Result?>(nil)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for publisher in 0..<4 {
                group.addTask {
                    var n = 0
                    while ContinuousClock.now < end {
                        n += 1
                        do {
                            let id = try await world.publish("publisher \(publisher) #\(n)", extra: ["--priority", "none"])
                            if acknowledged.update({
                                $0.append((id, .now)); return $0.count
                            }) == 4 {
                                enough.continuation.yield()
                            }
                        } catch {
                            failures.update { $0.append("publish: \(error)") }
                        }
                    }
                }
            }
            for device in [world.a, world.b] {
                group.addTask {
                    while ContinuousClock.now < end {
                        _ = try await device.run(["sync"])
                        let unread = try await device.run(["list", "--view", "unread", "--json", "--limit", "1"]).out
                        if let line = unread.split(separator: "\n").first, case .object(let object)? = JSONValue(jsonText: String(line)),
                            case .string(let id)? = object["id"]
                        {
                            let dismissed = try await device.run(["dismiss", id])
                            if dismissed.status != 0 { failures.update { $0.append("dismiss: \(dismissed.err)") } }
                        }
                    }
                }
            }
            group.addTask {
                for await _ in enough.stream { break }
                backupStarted.update { $0 = .now }
                let result = try await server.run(["admin", "backup", backup])
                backupResult.update { $0 = result }
            }
            try await group.waitForAll()
        }
        let result = try #require(backupResult.update { $0 })
        #expect(result.status == 0 && result.out.contains("integrity_check ok"), "backup: \(result.out) \(result.err)")
        print("notty admin backup while serving: \(result.out.trimmingCharacters(in: .whitespacesAndNewlines))")
        #expect(failures.update { $0 }.isEmpty, "\(failures.update { $0 }.prefix(3))")
        let started = try #require(backupStarted.update { $0 })
        let before = acknowledged.update { $0 }.filter { $0.at < started }.map(\.id)
        try #require(before.count >= 4, "fewer than four publishes were acknowledged before the backup began: \(before.count)")
        let (integrity, missing) = try await DatabaseQueue(path: backup).read { db in
            (
                try String.fetchAll(db, sql: "PRAGMA integrity_check"),
                try before.filter { try Int.fetchOne(db, sql: "SELECT count(*) FROM notifications WHERE id = ?", arguments: [$0]) == 0 }
            )
        }
        #expect(integrity == ["ok"])
        #expect(missing.isEmpty, "\(missing.count) of \(before.count) publishes acknowledged before the backup are not in it")
        print("backup: \(before.count) publishes acknowledged before it began, all in it; \(acknowledged.update { $0 }.count) in all")

        let refused = try await server.run(["admin", "restore", backup])
        #expect(refused.status != 0 && refused.err.contains("notty serve uses"), "a restore under a running service: \(refused.out) \(refused.err)")
        #expect(try await server.run(["admin", "backup", backup]).err.contains("exists"), "a backup overwrote a file")

        // Changes made while the service is away, on a notification the backup holds.
        #expect(try await world.a.run(["sync"]).status == 0)
        #expect(try await world.b.run(["sync"]).status == 0)
        await world.service.stop()
        let kept = before[0]
        #expect(try await world.b.run(["snooze", kept, "--for", "4h"]).status == 0)
        #expect(try await world.a.run(["read", before[1]]).status == 0)

        let restored = try await server.run(["admin", "restore", backup])
        #expect(restored.status == 0 && restored.out.contains("before-restore-"), "restore: \(restored.out) \(restored.err)")
        try await world.service.start(port: world.service.port)

        for device in [world.a, world.b, world.a, world.b] {
            let synced = try await device.run(["sync"])
            #expect(synced.status == 0, "sync after the restore: \(synced.err)")
        }
        func states(_ device: NottyCLI) async throws -> [String] {
            try await device.run(["list", "--view", "all", "--json", "--limit", "100000"]).out.split(separator: "\n").compactMap { line in
                guard case .object(let object)? = JSONValue(jsonText: String(line)), case .string(let id)? = object["id"],
                    case .string(let read)? = object["readState"], case .string(let action)? = object["userActionState"]
                else { return nil }
                return "\(id) \(read) \(action)"
            }.sorted()
        }
        let (a, b) = (try await states(world.a), try await states(world.b))
        #expect(a == b, "A and B disagree after the restore: \(Set(a).symmetricDifference(b).prefix(4))")
        #expect(a.contains { $0.hasPrefix(kept) && $0.hasSuffix("Snoozed") }, "B's snooze, queued while the service was away, was lost")
        #expect(a.contains { $0.hasPrefix(before[1]) && $0.contains(" Read ") }, "A's read, queued while the service was away, was lost")
        let shown = Set(a.map { String($0.split(separator: " ")[0]) })
        #expect(
            shown.isSuperset(of: before), "\(Set(before).subtracting(shown).count) publishes acknowledged before the backup are not on the devices")
    }
}
