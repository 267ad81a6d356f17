import Foundation
import NottyPOSIX
import Synchronization
import Testing

@Suite("Child processes: started with posix_spawn, reaped by their own thread")
struct ChildProcessTests {
    @Test("an exit status, a signal, and the handler told once with the pid")
    func endings() async throws {
        let told = Mutex<[ChildProcess.Termination]>([])
        let three = try ChildProcess.start("/bin/sh", ["-c", "exit 3"]) { ended in told.withLock { $0.append(ended) } }
        let ended = await three.exited()
        #expect(ended.status == 3 && !ended.signalled && ended.code == 3 && ended.pid == three.pid)
        #expect(three.wait() == ended && !three.isRunning)
        #expect(told.withLock { $0 } == [ended])

        let sleeper = try ChildProcess.start("/bin/sleep", ["30"])
        #expect(sleeper.isRunning && sleeper.wait(until: Date().addingTimeInterval(0.05)) == nil)
        sleeper.signal(SIGTERM)
        let killed = sleeper.wait()
        #expect(killed.signalled && killed.status == SIGTERM && killed.code == 128 + SIGTERM)
    }

    @Test("its standard streams as given, a bare name found on PATH, a process group of its own, and an unknown program refused in words")
    func streamsAndGroups() async throws {
        var ends: [Int32] = [0, 0]
        #expect(pipe(&ends) == 0)
        let echo = try ChildProcess.start(
            "sh", ["-c", "echo \"$GREETING\"; echo oops >&2"], environment: ["GREETING": "hi", "PATH": "/usr/bin:/bin"], stdout: .descriptor(ends[1]),
            stderr: .null)
        close(ends[1])
        #expect(String(decoding: readToEnd(ends[0]), as: UTF8.self) == "hi\n")
        close(ends[0])
        #expect(echo.wait().code == 0)

        // In a group of its own: a signal to the group reaches what it started too.
        let group = try ChildProcess.start("/bin/sh", ["-c", "sleep 30 & wait"], processGroup: true)
        #expect(getpgid(group.pid) == group.pid)
        group.signal(SIGKILL, group: true)
        #expect(group.wait().signalled)

        #expect(throws: ChildProcessError.self) { try ChildProcess.start("/nonexistent/program", []) }
        do {
            _ = try ChildProcess.start("/nonexistent/program", [])
        } catch {
            #expect("\(error)" == "cannot run /nonexistent/program: No such file or directory")
        }
    }
}
