import Foundation
import NottyCenter
import NottyCore
import NottyTestSupport
import Testing

@Suite("notty poll's commands (CommandRunner)")
struct CommandRunnerTests {
    func notification(_ n: Int) -> UserNotification {
        UserNotification(
            id: "id-\(n)", appNotificationId: "a\(n)", targetHostName: "ci.example.com", groupName: "builds", priority: .high,
            payload: NotificationPayload(rawContent: nil, visualContent: VisualContent(title: "Build \(n) failed", body: "main is red")),
            expirationDateTime: Date().addingTimeInterval(3600), createdDateTime: Date(), lastModifiedDateTime: Date(), launchUrl: "https://ci.example.com/\(n)")
    }

    @Test("at most 4 at once, the rest started in order as others end; each gets the NOTTY_ variables")
    func limitAndOrder() async throws {
        let directory = Repository.temporaryDirectory("notty-runner")
        defer { try? FileManager.default.removeItem(at: directory) }
        let log = directory.appendingPathComponent("log").path
        // Each command logs its start, holds a slot until its release file exists, logs its end.
        let command = #"echo "start $NOTTY_ID $NOTTY_PRIORITY $NOTTY_GROUP $NOTTY_URL $NOTTY_STATE" >> "# + log
            + #"; while [ ! -e "# + directory.path + #"/release-$NOTTY_ID ]; do sleep 0.02; done; echo "end $NOTTY_ID" >> "# + log
        let runner = CommandRunner(timeout: 30)
        for n in 0..<6 { runner.submit(.init(option: "--exec", command: command, notification: notification(n), state: n == 5 ? "dismissed" : nil)) }
        func lines() -> [String] { ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init) }
        #expect(await eventually(timeout: .seconds(5)) { lines().count == 4 })
        try await Task.sleep(for: .milliseconds(300))
        #expect(lines().count == 4 && lines().allSatisfy { $0.hasPrefix("start id-") }, "a fifth started while four ran: \(lines())")
        #expect(Set(lines()) == Set((0..<4).map { "start id-\($0) High builds https://ci.example.com/\($0) " }))
        // Release the second: the fifth starts (the queue is in order).
        FileManager.default.createFile(atPath: directory.appendingPathComponent("release-id-1").path, contents: nil)
        #expect(await eventually(timeout: .seconds(5)) { lines().contains("start id-4 High builds https://ci.example.com/4 ") })
        #expect(!lines().contains { $0.hasPrefix("start id-5") })
        for n in [0, 2, 3, 4, 5] { FileManager.default.createFile(atPath: directory.appendingPathComponent("release-id-\(n)").path, contents: nil) }
        runner.waitUntilIdle()
        #expect(lines().contains("start id-5 High builds https://ci.example.com/5 dismissed"))
        #expect(lines().filter { $0.hasPrefix("end ") }.count == 6)
    }

    @Test("a command past the timeout is stopped with what it started, and its slot goes to the next")
    func timeout() async throws {
        let directory = Repository.temporaryDirectory("notty-runner")
        defer { try? FileManager.default.removeItem(at: directory) }
        let marker = directory.appendingPathComponent("after").path
        let runner = CommandRunner(timeout: 1, limit: 1)
        runner.submit(.init(option: "--exec", command: "sleep 30; touch \(marker)", notification: notification(1)))
        runner.submit(.init(option: "--exec", command: "touch \(marker)-next", notification: notification(2)))
        #expect(await eventually(timeout: .seconds(10)) { FileManager.default.fileExists(atPath: marker + "-next") }, "the queued command never ran")
        try await Task.sleep(for: .milliseconds(200))
        #expect(!FileManager.default.fileExists(atPath: marker), "the stopped command went on")
    }
}
