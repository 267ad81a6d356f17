import Foundation
import Testing

/// Paths of the repository and of the built `notty` next to this test bundle.
enum Repository {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static var nottyBinary: URL {
        URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent().appendingPathComponent("notty")
    }

    /// Runs a command to completion (bounded by the test's time limit), returning status and output.
    static func run(_ arguments: [String], environment: [String: String] = [:]) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        process.currentDirectoryURL = root
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }
}

enum Schemathesis {
    static let available: Bool = (try? Repository.run(["python3", "-c", "import schemathesis"]).status) == 0
    static let required = ProcessInfo.processInfo.environment["CI"] == "true"
}

@Suite("OpenAPI conformance")
struct SchemathesisTests {
    @Test(
        "schemathesis: every check passes against a live notty serve",
        .enabled(if: Schemathesis.available || Schemathesis.required,
                 "SKIPPED LOUDLY: schemathesis is not installed (python3 -m pip install 'schemathesis>=4,<5'); .ci/run installs it"),
        .timeLimit(.minutes(10)))
    func schemathesis() throws {
        #expect(Schemathesis.available, "schemathesis must be installed in CI")
        let binary = Repository.nottyBinary
        #expect(FileManager.default.isExecutableFile(atPath: binary.path), "notty was not built at \(binary.path)")
        let (status, output) = try Repository.run(["bash", "Tests/schemathesis/run.sh", binary.path, "25"])
        let summary = output.split(separator: "\n").filter { $0.contains("generated") || $0.contains("❌") || $0.hasPrefix("==") }
        print(summary.joined(separator: "\n"))
        #expect(status == 0, "schemathesis found problems:\n\(output.suffix(6000))")
    }
}
