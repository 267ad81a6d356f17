import Foundation
import NottyCore
import NottyTestSupport
import Testing

@Suite("Search and saved views on every device (PROTOCOL.md §17)", .timeLimit(.minutes(5)))
struct SavedViewTests {
    @Test(
        "notty list --search reads the query language offline; a view saved on A is listed, counted and watched on B after a sync; removed on B, it is gone from A; bad names, queries and fields are one line"
    )
    func savedOnOneShownOnAnother() async throws {
        let world = try await TwoDevices()
        let (a, b) = (world.a, world.b)
        let disk = try await world.publish("Disk full on db-1", body: "the replica is fine", extra: ["--group", "storage"])
        let cologne = try await world.publish("ÜBERLAST in Köln", extra: ["--group", "storage"])
        let build = try await world.publish("Build failed on main")
        for device in [a, b] { #expect(try await device.run(["sync"]).status == 0) }

        func ids(_ result: NottyCLI.Result) -> [String] {
            result.out.split(separator: "\n").compactMap { JSONValue(jsonText: String($0)) }.compactMap {
                if case .object(let object) = $0, case .string(let id)? = object["id"] { id } else { nil }
            }
        }
        let searched = try await a.run(["list", "--view", "all", "--json", "--search", "koln"])
        #expect(searched.status == 0 && ids(searched) == [cologne], "\(searched.out)\(searched.err)")
        let grouped = try await a.run(["list", "--view", "all", "--json", "--search", "group:storage -replica"])
        #expect(ids(grouped) == [cologne], "\(grouped.out)\(grouped.err)")
        #expect(ids(try await a.run(["list", "--view", "all", "--json", "--search", "\"failed on main\""])) == [build])
        let unknown = try await a.run(["list", "--search", "colour:red"])
        #expect(unknown.status != 0 && unknown.err.contains("no field colour:"), "\(unknown.err)")

        // Saved on A, shown on B.
        let added = try await a.run(["view", "add", "storage", "group:storage is:unread"])
        #expect(added.status == 0 && added.out.contains("saved view storage: 2 now"), "\(added.out)\(added.err)")
        #expect(try await b.run(["sync"]).status == 0)
        let listed = try await b.run(["view", "--list"])
        #expect(listed.out.contains("storage") && listed.out.contains("group:storage is:unread"), "\(listed.out)\(listed.err)")
        #expect(try await b.run(["count", "--view", "storage"]).out == "2\n")
        #expect(Set(ids(try await b.run(["list", "--view", "storage", "--json"]))) == [disk, cologne])
        #expect(ids(try await b.run(["list", "--view", "storage", "--json", "--search", "disk"])) == [disk], "a saved view and a search")
        let json = try await b.run(["count", "--view", "storage", "--format", "json"])
        #expect(json.out.contains("\"view\":\"storage\"") && json.out.contains("\"count\":2"), "\(json.out)")
        // Read on B, the count follows (a notty watch sees it too).
        let log = world.directory.appendingPathComponent("watch.log")
        let watch = try b.start(["watch", "--view", "storage"], log: log)
        defer { if watch.isRunning { watch.signal(SIGTERM) } }
        #expect(await eventually(timeout: .seconds(10)) { ((try? String(contentsOf: log, encoding: .utf8)) ?? "").hasPrefix("2\n") })
        #expect(try await b.run(["read", disk]).status == 0)
        #expect(await eventually(timeout: .seconds(10)) { ((try? String(contentsOf: log, encoding: .utf8)) ?? "").contains("1\n") })

        // Removed on B, gone on A.
        #expect(try await b.run(["view", "remove", "storage"]).status == 0)
        #expect(try await a.run(["sync"]).status == 0)
        #expect(try await a.run(["view", "--list"]).out.contains("no saved views"))
        let gone = try await a.run(["count", "--view", "storage"])
        #expect(gone.status != 0 && gone.err.contains("--view storage: no such view"), "\(gone.err)")

        for (arguments, words) in [
            (["view", "add", "unread", "x"], "built-in views"),
            (["view", "add", "a.b", "x"], "letters, digits, - and _"),
            (["view", "add", "v", "priority:urgent"], "priority: is high, normal or low"),
            (["view", "remove", "nothing"], "no saved view nothing"),
            (["view"], "give add NAME 'QUERY', remove NAME or --list"),
        ] {
            let result = try await a.run(arguments)
            #expect(result.status != 0 && result.err.contains(words), "\(arguments): \(result.err)")
        }
    }
}
