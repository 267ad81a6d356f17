import Foundation
import NottyTestSupport
import Testing

/// The helpers every end-to-end test starts programs with. Tests run in parallel in one
/// process, so a descriptor one test holds must not leak into another test's children.
@Suite("Test processes keep to their own files")
struct ProcessSupportTests {
    @Test("spawn closes this process's descriptors in the child: a script another test is writing is never held open, and runs")
    func spawnClosesInheritedDescriptors() async throws {
        let directory = Repository.temporaryDirectory("notty-spawn")
        defer { try? FileManager.default.removeItem(at: directory) }
        // A descriptor without O_CLOEXEC, as Foundation's atomic write opens its temporary file.
        let script = directory.appendingPathComponent("script")
        let held = open(script.path, O_WRONLY | O_CREAT | O_TRUNC, 0o755)
        #expect(held >= 0)
        let output = directory.appendingPathComponent("out.txt")
        let pid = try spawn("/bin/sh", ["-c", "if [ -e /proc/$$/fd/\(held) ]; then echo inherited; else echo closed; fi"], environment: [:]) { actions in
            posix_spawn_file_actions_addopen(&actions, 1, output.path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0, errno == EINTR {}
        close(held)
        #expect(try String(contentsOf: output, encoding: .utf8) == "closed\n", "the child inherited descriptor \(held)")

        // writeProgram's descriptor is close-on-exec and closed on return: the script runs.
        try writeProgram("#!/bin/sh\necho ran \"$1\"\n", to: script)
        let process = Process()
        process.executableURL = script
        process.arguments = ["a b"]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let text = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(text == "ran a b\n" && process.terminationStatus == 0)
    }
}
