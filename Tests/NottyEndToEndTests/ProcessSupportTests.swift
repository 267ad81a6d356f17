import CTestRunWidth
import Foundation
import NottyTestSupport
import Testing

/// The helpers every end-to-end test starts programs with. Tests run in parallel in one
/// process, so a descriptor one test holds must not leak into another test's children.
@Suite("Test processes keep to their own files")
struct ProcessSupportTests {
    @Test("the test bundle runs a bounded number of test cases at once: the width is in the environment before the tests start")
    func runWidthIsBounded() {
        let width = notty_test_run_width()
        #expect(width >= 1, "CTestRunWidth's constructor did not run")
        #expect(ProcessInfo.processInfo.environment["SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH"] == String(width))
    }

    @Test("spawn closes this process's descriptors in the child: a script another test is writing is never held open, and runs")
    func spawnClosesInheritedDescriptors() async throws {
        let directory = Repository.temporaryDirectory("notty-spawn")
        defer { try? FileManager.default.removeItem(at: directory) }
        // A descriptor without O_CLOEXEC, as Foundation's atomic write opens its temporary file.
        let script = directory.appendingPathComponent("script")
        let held = open(script.path, O_WRONLY | O_CREAT | O_TRUNC, 0o755)
        #expect(held >= 0)
        let output = directory.appendingPathComponent("out.txt")
        let pid = try spawn("/bin/sh", ["-c", "if [ -e /proc/$$/fd/\(held) ]; then echo inherited; else echo closed; fi"], environment: [:]) {
            actions in
            posix_spawn_file_actions_addopen(&actions, 1, output.path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0, errno == EINTR {}
        close(held)
        #expect(try String(contentsOf: output, encoding: .utf8) == "closed\n", "the child inherited descriptor \(held)")

        // writeProgram's descriptor is close-on-exec and closed on return: the script runs.
        try writeProgram("#!/bin/sh\necho ran \"$1\"\n", to: script)
        let ran = try runToEnd(script.path, ["a b"], environment: [:], name: "the script")
        #expect(String(decoding: ran.out, as: UTF8.self) == "ran a b\n" && ran.status == 0)
    }

    @Test("a command that hangs, or ends leaving a child that holds its output, fails its test with its name and output, and never holds up the run")
    func hungCommandsFail() throws {
        func shell(_ script: String, name: String, limit: TimeInterval = commandLimit, grace: TimeInterval = 30) throws -> (
            status: Int32, out: Data, err: Data
        ) {
            try runToEnd("/bin/sh", ["-c", script], environment: [:], name: name, limit: limit, grace: grace)
        }
        let start = Date()
        #expect {
            try shell("echo started; exec sleep 600.17", name: "hung", limit: 1)
        } throws: { error in
            "\(error)".contains("hung did not end within 1 s and was killed; its output: started")
        }
        #expect {
            try shell("sleep 601.17 & echo left", name: "parent", limit: 60, grace: 1)
        } throws: { error in
            "\(error)".contains("parent ended (status 0) but a process it started still holds its output open")
        }
        #expect(Date().timeIntervalSince(start) < 60, "waited out a limit")
        // Only this test's sleeps (the private network's holder sleeps 600 too, in another test).
        _ = try? Repository.runWaiting(["pkill", "-f", "^sleep 60[01]\\.17$"])
        let fine = try shell("echo out; echo err >&2; exit 3", name: "fine")
        #expect(fine.status == 3 && String(decoding: fine.out, as: UTF8.self) == "out\n" && String(decoding: fine.err, as: UTF8.self) == "err\n")
        let here = try Repository.runWaiting(["sh", "-c", "pwd; test -x .ci/run && echo found"])
        #expect(here.status == 0 && here.output == Repository.root.path + "\nfound\n", "\(here.output)")
        let home = Repository.temporaryDirectory("notty-stdin")
        defer { try? FileManager.default.removeItem(at: home) }
        let input = try NottyCLI(home: home).runWaiting(["admin", "user", "add", "bob"], input: "s3cret-pw\n")
        #expect(input.status == 0, "\(input.err)")
    }
}
