import Foundation
import NottyCore
import NottyPoll
import NottyTestSupport
import Testing

@Suite("notty poll's commands (CommandRunner)")
struct CommandRunnerTests {
    func notification(_ n: Int) -> UserNotification {
        .fixture(
            id: "id-\(n)", appNotificationId: "a\(n)", group: "builds", priority: .high, title: "Build \(n) failed", body: "main is red",
            created: Date(), launchUrl: "https://ci.example.com/\(n)")
    }

    @Test("at most 4 at once, the rest started in order as others end; each gets the NOTTY_ variables")
    func limitAndOrder() async throws {
        let directory = Repository.temporaryDirectory("notty-runner")
        defer { try? FileManager.default.removeItem(at: directory) }
        let log = directory.appendingPathComponent("log").path
        let errors = directory.appendingPathComponent("stderr").path
        // Each command logs its start, holds its slot until a line arrives on its own FIFO and
        // logs its end. Reading a FIFO is a shell builtin: no process is forked while it waits
        // (a loop of `sleep` would fork all the time, and a busy machine may refuse a fork).
        func fifo(_ n: Int) -> String { directory.appendingPathComponent("release-id-\(n)").path }
        for n in 0..<6 { #expect(mkfifo(fifo(n), 0o600) == 0) }
        let command =
            #"exec 2>>"# + errors + #"; echo "start $NOTTY_ID $NOTTY_PRIORITY $NOTTY_GROUP $NOTTY_URL $NOTTY_STATE" >> "# + log
            + #"; read line < "# + directory.path + #"/release-$NOTTY_ID; echo "end $NOTTY_ID" >> "# + log
        func lines() -> [String] { ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init) }
        func stderr() -> String { (try? String(contentsOfFile: errors, encoding: .utf8)) ?? "" }
        /// Lets command `n` end: a line into its FIFO once it has opened it for reading.
        func release(_ n: Int) async -> Bool {
            await eventually(timeout: .seconds(60)) {
                let descriptor = open(fifo(n), O_WRONLY | O_NONBLOCK)  // ENXIO while no reader
                guard descriptor >= 0 else { return false }
                defer { close(descriptor) }
                return write(descriptor, "\n", 1) == 1
            }
        }
        // The runner's own timeout is not under test here: it is far beyond every wait below, so
        // a machine slow enough to take half a minute over this test cannot kill a command.
        let runner = CommandRunner(timeout: 600)
        for n in 0..<6 { runner.submit(.init(option: "--exec", command: command, notification: notification(n), state: n == 5 ? "dismissed" : nil)) }
        #expect(await eventually(timeout: .seconds(60)) { lines().count == 4 }, "\(lines()) \(stderr())")
        // No command can end before its release: four run and two wait, whatever the time.
        #expect(runner.load.running == 4)
        #expect(runner.load.queued == 2, "a fifth started while four ran: \(lines()) \(stderr())")
        #expect(Set(lines()) == Set((0..<4).map { "start id-\($0) High builds https://ci.example.com/\($0) " }))
        // Release the second: the fifth starts (the queue is in order), the sixth still waits.
        #expect(await release(1))
        #expect(
            await eventually(timeout: .seconds(60)) { lines().contains("start id-4 High builds https://ci.example.com/4 ") }, "\(lines()) \(stderr())"
        )
        #expect(runner.load.running == 4)
        #expect(runner.load.queued == 1, "the sixth started before a slot was free: \(lines()) \(stderr())")
        for n in [0, 2, 3, 4, 5] { #expect(await release(n), "command \(n) never waited for its release: \(lines()) \(stderr())") }
        #expect(await eventually(timeout: .seconds(60)) { lines().filter { $0.hasPrefix("end ") }.count == 6 }, "\(lines()) \(stderr())")
        await runner.waitUntilIdle()
        #expect(lines().contains("start id-5 High builds https://ci.example.com/5 dismissed"))
        #expect(stderr() == "")
    }

    @Test("a command past the timeout is stopped with what it started, and its slot goes to the next")
    func timeout() async throws {
        let directory = Repository.temporaryDirectory("notty-runner")
        defer { try? FileManager.default.removeItem(at: directory) }
        let marker = directory.appendingPathComponent("after").path
        let runner = CommandRunner(timeout: 1, limit: 1)
        runner.submit(.init(option: "--exec", command: "sleep 30; touch \(marker)", notification: notification(1)))
        runner.submit(.init(option: "--exec", command: "touch \(marker)-next", notification: notification(2)))
        // Both have ended when the runner is idle: had the first gone on, it would end by
        // touching the marker (after 30 s), not before.
        await runner.waitUntilIdle()
        #expect(FileManager.default.fileExists(atPath: marker + "-next"), "the queued command never ran")
        #expect(!FileManager.default.fileExists(atPath: marker), "the stopped command went on")
    }
}
