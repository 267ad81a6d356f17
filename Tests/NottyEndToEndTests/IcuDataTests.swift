import Foundation
import NottyTestSupport
import Testing

/// The release builds link ICU's data trimmed to what notty opens (`scripts/icu-trim`,
/// `Resources/icu/keep.txt`); the tests' own (debug) builds link all of it. Both builds'
/// `icu-check` (``IcuCheck``: offsets and DST changes, quiet hours, rotations and their
/// calendar feeds, times as shown, folded search text, the saved views' order, international
/// host names) must print the same, in every zone of `/usr/share/zoneinfo`.
///
/// Each run prints some 385,000 lines (30 s of a core for the debug build): the programs run one
/// at a time and niced, so that the tests beside them that wait on timers and leases are not
/// starved on a 2-core machine.
@Suite("ICU's trimmed data: the release builds show what the full data shows, zone by zone", .timeLimit(.minutes(10)), .serialized)
struct IcuDataTests {
    /// The release builds `scripts/package` leaves (CI runs it before the tests).
    static let release = Repository.root.appendingPathComponent(".build-release/release")

    /// Every zone file under /usr/share/zoneinfo (a TZif file), by its name.
    static func zones() throws -> [String] {
        let root = URL(fileURLWithPath: "/usr/share/zoneinfo")
        var names: [String] = []
        let walk = FileManager.default.enumerator(at: root, includingPropertiesForKeys: [.isRegularFileKey])
        while let url = walk?.nextObject() as? URL {
            let name = String(url.resolvingSymlinksInPath().path.dropFirst(root.resolvingSymlinksInPath().path.count + 1))
            guard !name.hasPrefix("posix/"), !name.hasPrefix("right/"), (try? url.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile) == true,
                let handle = FileHandle(forReadingAtPath: url.path), let magic = try? handle.read(upToCount: 4), magic == Data("TZif".utf8)
            else { continue }
            names.append(name)
        }
        return Array(Set(names)).sorted()
    }

    @Test(
        "notty and notty-server icu-check: the release build prints what the debug build prints, in every zone", arguments: ["notty", "notty-server"])
    func sameAnswers(program: String) async throws {
        let trimmed = Self.release.appendingPathComponent(program)
        guard FileManager.default.fileExists(atPath: trimmed.path) else {
            let message = "no release build at \(trimmed.path): scripts/package makes it (CI runs it before the tests)"
            if ProcessInfo.processInfo.environment["CI"] != nil { Issue.record(Comment(rawValue: message)) } else { print("SKIPPED: \(message)") }
            return
        }
        let full = Repository.nottyBinary.deletingLastPathComponent().appendingPathComponent(program)
        // The comparison means something: the release build holds the trimmed data (no converter
        // list), the debug build all of it (in itself, or in the shared ICU library it loads).
        let marker = Data("cnvalias.icu".utf8)
        #expect(try Data(contentsOf: trimmed, options: .alwaysMapped).range(of: marker) == nil, "\(trimmed.path) links ICU's whole data")
        let loaded = try await Repository.run(["/usr/bin/ldd", full.path]).output.split(separator: "\n")
            .compactMap { $0.split(separator: " ").first { $0.hasPrefix("/") && $0.contains("FoundationICU") } }.map(String.init)
        let holders = [full.path] + loaded
        #expect(
            try holders.contains { try Data(contentsOf: URL(fileURLWithPath: $0), options: .alwaysMapped).range(of: marker) != nil },
            "neither \(holders) holds ICU's whole data")

        let zones = try Self.zones()
        #expect(zones.count > 300 && zones.contains("Europe/Berlin") && zones.contains("America/Sao_Paulo"), "\(zones.count) zones")
        let environment = ["TZ": "Europe/Berlin", "LANG": "de_DE.UTF-8", "PATH": "/usr/bin:/bin"]
        let niced = ["/usr/bin/nice", "-n", "15"]
        let (fullStatus, fullOutput) = try await Repository.run(niced + [full.path, "icu-check"] + zones, environment: environment, limit: 300)
        let (trimmedStatus, trimmedOutput) = try await Repository.run(
            niced + [trimmed.path, "icu-check"] + zones, environment: environment, limit: 300)
        #expect(fullStatus == 0 && trimmedStatus == 0, "\(fullOutput.suffix(500))\n\(trimmedOutput.suffix(500))")
        let (a, b) = (fullOutput.split(separator: "\n"), trimmedOutput.split(separator: "\n"))
        #expect(a.count == b.count, "\(a.count) lines with the full data, \(b.count) with the trimmed")
        let differing = zip(a, b).filter { $0 != $1 }
        #expect(
            differing.isEmpty, "\(differing.count) lines differ; the first: full \(differing.first?.0 ?? "") / trimmed \(differing.first?.1 ?? "")")
        // And what it compared is what notty shows: zones known, DST changes found, feeds written.
        #expect(a.contains { $0.hasPrefix("Europe/Berlin: transition 2026-03-29T01:00:00") }, "\(a.prefix(3))")
        #expect(a.filter { $0.hasSuffix(": unknown") }.count < zones.count / 10, "most zones are known")
        #expect(a.contains("fold Köln → koln") && a.contains { $0.hasPrefix("url https://bücher.example/x host ") })
        print("icu-check \(program): \(zones.count) zones, \(a.count) lines, the same with ICU's whole data and with the trimmed")
    }
}
