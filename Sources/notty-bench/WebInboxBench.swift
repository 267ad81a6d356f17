import Foundation
import NottyCore
import NottyService
import NottyTestSupport

/// The web inbox (PROTOCOL.md §14) with 100,000 notifications, in headless Chromium at `width`
/// CSS pixels (390: a phone, with touch): `scripts/web-first-list` times the sign-in answer → the
/// first row on screen; `scripts/web-offline-open` opening the app with no network → the list
/// from the service worker's cache; `scripts/web-dismiss-gone` a device's dismiss → its row gone
/// from the list. And the app's size, as sent (gzip).
struct WebInboxBench {
    let service: ServiceBench
    let count: Int
    let rounds: Int
    /// How many dismissals are timed.
    var dismissals = 200
    /// The viewport's width in CSS pixels.
    var width = 390

    func run() async throws {
        print(
            "notty-bench webinbox — real `notty serve` (SQLite, WAL, synchronous=FULL), \(count) notifications of alice's, headless Chromium on loopback, \(ProcessInfo.processInfo.activeProcessorCount) cores"
        )
        try await printSize()
        let storage = try await service.openStorage()
        guard let alice = try await storage.user(name: "alice") else { throw SupportError("no alice") }
        try await fillFeed(storage, owner: alice.id, count: count)
        try await storage.close()
        await service.serve.stop()
        try await service.serve.start(port: service.port, extraArguments: ServiceBench.unlimited)
        let (status, output) = try await Repository.run([
            Repository.root.appendingPathComponent("scripts/web-first-list").path, service.base, "alice", "s3cret-pw", String(rounds), String(width),
        ])
        guard status == 0 else { throw SupportError("web-first-list failed: \(output)") }
        print("  sign-in answer → first list, \(width) px:")
        for line in output.split(separator: "\n") { print("  \(line)") }
        let (offline, opened) = try await Repository.run([
            Repository.root.appendingPathComponent("scripts/web-offline-open").path, service.base, "alice", "s3cret-pw", String(rounds),
            String(width),
        ])
        guard offline == 0 else { throw SupportError("web-offline-open failed: \(opened)") }
        print("  opened with no network → the list from the service worker, \(width) px:")
        for line in opened.split(separator: "\n") { print("  \(line)") }

        // A device's dismiss → gone from the browser's list (the doorbell, the list fetched again).
        let (gone, answer) = try await Repository.run([
            Repository.root.appendingPathComponent("scripts/web-dismiss-gone").path, service.base, "alice", "s3cret-pw", service.userToken,
            String(dismissals), String(width),
        ])
        guard gone == 0, let line = answer.split(separator: "\n").last, case .object(let object)? = JSONValue(jsonText: String(line)),
            case .array(let values)? = object["rounds"]
        else { throw SupportError("web-dismiss-gone failed: \(answer)") }
        let times = values.compactMap { value -> Double? in if case .number(let n) = value { n } else { nil } }
        print(
            String(
                format: "  a device's dismiss → gone from the browser's list (%d dismissals, %d px): p50 %.1f ms, p99 %.1f ms, max %.1f ms",
                times.count, width, percentile(times, 50), percentile(times, 99), times.max() ?? .nan))
    }

    /// The app's files as the service sends them (`Resources/web`; the service's own copy is the
    /// same bytes): their size, each gzip'd (`gzip -9`), and all of them as one gzip'd stream.
    func printSize() async throws {
        let folder = Repository.root.appendingPathComponent("Resources/web")
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
        var raw = 0, each = 0
        for name in names {
            let path = folder.appendingPathComponent(name).path
            raw += (try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
            let (_, size) = try await Repository.run(["sh", "-c", "gzip -9 -c \"$1\" | wc -c", "sh", path])
            each += Int(size.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
        }
        let (_, whole) = try await Repository.run(["sh", "-c", "cd \"$1\" && cat * | gzip -9 -c | wc -c", "sh", folder.path])
        print(
            "  the app's files (\(names.count)): \(raw) bytes; \(each) gzip'd one by one, \(whole.trimmingCharacters(in: .whitespacesAndNewlines)) as one stream (target ≤ 102,400)"
        )
    }
}
