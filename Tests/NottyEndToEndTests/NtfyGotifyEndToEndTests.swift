import Foundation
import NottyCore
import NottyPOSIX
import NottyTestSupport
import Testing

enum Apprise {
    static let available: Bool = (try? Repository.runWaiting(["python3", "-c", "import apprise"]).status) == 0
    static let required = ProcessInfo.processInfo.environment["CI"] == "true"

    /// Apprise's own command line (`apprise -t TITLE -b BODY URL`), run through the Python that
    /// has it, so a script directory missing from PATH does not matter.
    static func notify(_ url: String, title: String, body: String) async throws -> (status: Int32, output: String) {
        try await Repository.run([
            "python3", "-c", "import sys; from apprise.cli import main; sys.argv[0] = 'apprise'; main()",
            "-vv", "-t", title, "-b", body, url,
        ])
    }
}

@Suite(
    "Apprise, curl and an ntfy subscriber against notty serve: the ntfy and Gotify dialects (PROTOCOL.md §8)", .serialized, .timeLimit(.minutes(5)))
struct NtfyGotifyEndToEndTests {
    @Test(
        "ntfy://, gotify://, json:// and form:// each reach a device with title, body and priority; a wrong token makes Apprise report failure and nothing arrives",
        .enabled(
            if: Apprise.available || Apprise.required,
            "SKIPPED LOUDLY: Apprise is not installed (python3 -m pip install apprise); .ci/run installs it"))
    func appriseURLs() async throws {
        #expect(Apprise.available, "Apprise must be installed in CI")
        let world = try await TwoDevices()
        let made = try await world.a.run(["subscribe", "--app", "ci.example.com", "--webhook"])
        #expect(made.status == 0, "\(made.err)")
        let hookURL = made.out.trimmingCharacters(in: .whitespacesAndNewlines)
        let token = String(try #require(hookURL.split(separator: "/").last))
        let host = try #require(URL(string: world.service.url)).host! + ":" + String(try #require(URL(string: world.service.url)).port!)
        let path = "/v1/hooks/\(token)"

        let cases: [(url: String, title: String, priority: Priority)] = [
            ("ntfy://\(host)/\(token)?priority=high", "via ntfy", .high),
            ("gotify://\(host)/\(token)?priority=low", "via gotify", .low),
            ("json://\(host)\(path)?:priority=high", "via json", .high),
            ("form://\(host)\(path)?:priority=low", "via form", .low),
            ("ntfy://\(host)/\(token)", "plain ntfy", .none),
        ]
        for item in cases {
            let sent = try await Apprise.notify(item.url, title: item.title, body: "body of \(item.title)\nsecond line")
            #expect(sent.status == 0, "\(item.url): \(sent.output)")
        }
        for wrong in [
            "ntfy://\(host)/not-a-token", "gotify://\(host)/not-a-token", "json://\(host)/v1/hooks/not-a-token",
            "form://\(host)/v1/hooks/not-a-token",
        ] {
            let refused = try await Apprise.notify(wrong, title: "must not arrive", body: "x")
            #expect(refused.status != 0, "\(wrong) was reported sent: \(refused.output)")
        }

        #expect(try await world.b.run(["sync"]).status == 0)
        let listed = try await world.b.run(["list", "--view", "all", "--json"]).out.split(separator: "\n")
            .map { try NottyJSON.decoder.decode(UserNotification.self, from: Data($0.utf8)) }
        for item in cases {
            let found = listed.first { $0.payload.visualContent?.title == item.title }
            #expect(
                found?.payload.visualContent?.body == "body of \(item.title)\nsecond line",
                "\(item.url): \(listed.map { $0.payload.visualContent?.title ?? "" })")
            #expect(found?.priority == item.priority, "\(item.url)")
        }
        #expect(listed.count == cases.count)
        #expect(!listed.contains { $0.payload.visualContent?.title == "must not arrive" })
    }

    @Test("the curl examples of ntfy's and Gotify's documentation, as written there, publish to notty serve")
    func curlExamples() async throws {
        let world = try await TwoDevices()
        let made = try await world.a.run(["subscribe", "--app", "ci.example.com", "--webhook"])
        let token = String(try #require(made.out.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: "/").last))
        let base = world.service.url
        let commands: [[String]] = [
            ["curl", "-sf", "-d", "Backup successful 😀", "\(base)/\(token)"],
            [
                "curl", "-sf", "-H", "Title: Unauthorized access detected", "-H", "Priority: urgent", "-H", "Tags: warning,skull",
                "-d", "Remote access to phils-laptop detected. Act right away.", "\(base)/\(token)",
            ],
            ["curl", "-sf", "-H", "t: Dogs are better than cats", "-H", "p: 2", "-d", "Oh my ...", "\(base)/\(token)"],
            ["curl", "-sf", "\(base)/\(token)/trigger"],
            [
                "curl", "-sf", "\(base)", "-d",
                #"{"topic":"\#(token)","message":"Disk space is low at 5.1 GB","title":"Low disk space alert","tags":["warning","cd"],"priority":4,"click":"https://homecamera.lan/xasds1h2xsSsa/"}"#,
            ],
            ["curl", "-sf", "\(base)/message?token=\(token)", "-F", "title=my title", "-F", "message=my message", "-F", "priority=5"],
            [
                "curl", "-sf", "-X", "POST", "\(base)/message", "-H", "X-Gotify-Key: \(token)", "-H", "Content-Type: application/json",
                "-d", #"{"message":"**Markdown** message","extras":{"client::display":{"contentType":"text/markdown"}}}"#,
            ],
        ]
        for command in commands {
            let result = try await Repository.run(command)
            #expect(result.status == 0, "\(command): \(result.output)")
        }
        #expect(try await world.b.run(["sync"]).status == 0)
        let titles = Set(
            try await world.b.run(["list", "--view", "all", "--json"]).out.split(separator: "\n")
                .map { try NottyJSON.decoder.decode(UserNotification.self, from: Data($0.utf8)).payload.visualContent?.title ?? "" })
        #expect(
            titles == [
                "Backup successful 😀", "⚠️ 💀 Unauthorized access detected", "Dogs are better than cats", "triggered",
                "⚠️ 💿 Low disk space alert", "my title", "**Markdown** message",
            ], "\(titles)")
    }

    @Test(
        "notty subscribe --ntfy: a curl NDJSON subscriber gets a publish as message and, when device A dismisses it with notty, message_clear; notty devices lists the topic as ntfy; revoked, the stream ends"
    )
    func phoneTopic() async throws {
        let world = try await TwoDevices()
        let made = try await world.a.run(["subscribe", "--ntfy", "--name", "phone"])
        let url = made.out.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(made.status == 0, "\(made.out)\(made.err)")
        #expect(url.hasPrefix(world.service.url + "/"), "\(made.out)\(made.err)")
        #expect(!url.contains("\n"), "\(made.out)\(made.err)")
        let log = world.directory.appendingPathComponent("phone.ndjson")
        let phone = try startLogged("/usr/bin/env", ["curl", "-sN", "\(url)/json"], log: log, environment: [:])
        defer { if phone.isRunning { phone.signal(SIGTERM) } }
        func events() -> [JSONValue] {
            ((try? String(contentsOf: log, encoding: .utf8)) ?? "").split(separator: "\n").compactMap { JSONValue(jsonText: String($0)) }
        }
        func has(_ event: String, _ id: String? = nil) -> Bool {
            events().contains { value in
                guard case .object(let object) = value, case .string(event)? = object["event"] else { return false }
                if let id { return object["sequence_id"] == .string(id) }
                return true
            }
        }
        #expect(try await eventually(timeout: .seconds(20)) { has("open") }, "no open event")
        let id = try await world.publish("Backup failed", body: "nas-1: disk full")
        #expect(try await eventually(timeout: .seconds(20)) { has("message", id) }, "no message: \(events())")
        #expect(try await world.a.run(["sync"]).status == 0)
        let dismissed = try await world.a.run(["dismiss", String(id.prefix(8))])
        #expect(dismissed.status == 0, "\(dismissed.err)")
        #expect(try await eventually(timeout: .seconds(20)) { has("message_clear", id) }, "no message_clear: \(events())")

        let devices = try await world.a.run(["devices"]).out
        #expect(devices.contains("phone"), "\(devices)")
        #expect(devices.contains("ntfy"), "\(devices)")
        let listed = try await world.a.run(["devices", "--json"]).out
        let topicId = try #require(
            listed.split(separator: "\n").compactMap { JSONValue(jsonText: String($0)) }.first { value in
                if case .object(let object) = value, object["platform"] == .string("ntfy") { return true }
                return false
            }.flatMap { value -> String? in
                if case .object(let object) = value, case .string(let id)? = object["id"] ?? object["userNotificationSubscriptionId"] { return id }
                return nil
            }, "\(listed)")
        let revoked = try await world.a.run(["devices", "revoke", topicId])
        #expect(revoked.status == 0, "\(revoked.out)\(revoked.err)")
        #expect(revoked.out.contains("ntfy topic"), "\(revoked.out)\(revoked.err)")
        #expect(try await eventually(timeout: .seconds(20)) { !phone.isRunning }, "the revoked topic's stream did not end")
        let after = try await Repository.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "\(url)/auth"])
        #expect(after.output == "404")
    }

    @Test("notty serve stops on SIGTERM with ntfy streams open: they end, and it exits without waiting out a timeout")
    func stopsWithStreamsOpen() async throws {
        let world = try await TwoDevices()
        let url = try await world.a.run(["subscribe", "--ntfy"]).out.trimmingCharacters(in: .whitespacesAndNewlines)
        let logs = ["json", "sse"].map { world.directory.appendingPathComponent("stream.\($0)") }
        let phones = try zip(["json", "sse"], logs).map {
            try startLogged("/usr/bin/env", ["curl", "-sN", "\(url)/\($0)"], log: $1, environment: [:])
        }
        defer { for phone in phones where phone.isRunning { phone.signal(SIGTERM) } }
        #expect(
            await eventually(timeout: .seconds(20)) {
                logs.allSatisfy { ((try? String(contentsOf: $0, encoding: .utf8)) ?? "").contains(#""event":"open""#) }
            }, "the streams did not open")
        let service = try #require(world.service.process)
        let start = ContinuousClock.now
        service.signal(SIGTERM)
        #expect(await eventually(timeout: .seconds(30)) { !service.isRunning }, "notty serve did not exit within 30 s of SIGTERM")
        print("notty serve exited \(ContinuousClock.now - start) after SIGTERM with 2 ntfy streams open")
        #expect(await eventually(timeout: .seconds(10)) { phones.allSatisfy { !$0.isRunning } }, "a stream did not end")
    }
}
