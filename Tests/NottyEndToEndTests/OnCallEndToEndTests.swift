import Foundation
import HummingbirdTesting
import NottyTestSupport
import Testing

/// On call (PROTOCOL.md §13.2) with real processes: `notty serve`, three members through the
/// real `notty`, a stand-in webhook receiver for their contacts, and Python's `icalendar` as
/// the calendar app.
@Suite("On call end to end", .timeLimit(.minutes(5)), .serialized)
struct OnCallEndToEndTests {
    let home = FileManager.default.temporaryDirectory.appendingPathComponent("notty-oncall-\(UUID().uuidString)")

    @Test(
        "a rotation, an override and a calendar feed; the team's policy pages the on-call member and not the other, and the page is taken back with who handled it; every bad input is one line"
    )
    func onCall() async throws {
        defer { try? FileManager.default.removeItem(at: home) }
        let recorder = TargetRecorder()
        try await recorder.application().test(.live) { client in
            let port = try #require(client.port)
            let serve = try await ServeProcess(directory: home.appendingPathComponent("service"))
            defer { serve.stop() }
            for user in ["bob", "carol"] {
                let added = try await serve.admin.run(["admin", "user", "add", user], input: "s3cret-pw\n")
                #expect(added.status == 0, "\(added.err)")
            }
            #expect(try await serve.admin.run(["admin", "team", "add", "ops", "--owner", "alice"]).status == 0)
            let alice = NottyCLI(home: home.appendingPathComponent("alice"))
            try await alice.login(serve.url, device: "laptop")
            var members = ["alice": alice]
            for user in ["bob", "carol"] {
                let cli = NottyCLI(home: home.appendingPathComponent(user))
                let signedIn = try await cli.run(["login", serve.url, "--user", user, "--password-stdin", "--device", "phone"], input: "s3cret-pw\n")
                #expect(signedIn.status == 0, "\(signedIn.err)")
                #expect(try await alice.run(["team", "ops", "--add", user]).status == 0)
                members[user] = cli
            }
            let (bob, carol) = (members["bob"]!, members["carol"]!)
            let hook = { (user: String) in "webhook:http://127.0.0.1:\(port)/\(user)" }
            #expect(try await alice.run(["contact", "add", hook("alice")]).status == 0)
            let bobsContact = try await bob.run(["contact", "add", hook("bob")])
            #expect(bobsContact.status == 0 && bobsContact.out.contains("/bob"), "\(bobsContact.err)")

            // The rotation: bob, then alice, a week each, from an hour ago (UTC): bob is on call.
            let utc = DateFormatter()
            utc.locale = Locale(identifier: "en_US_POSIX")
            utc.timeZone = TimeZone(identifier: "UTC")
            utc.dateFormat = "yyyy-MM-dd HH:mm"
            let now = Date()
            let start = utc.string(from: now - 3600)
            let rotation = try await alice.run(["oncall", "ops", "--rotation", "bob,alice", "--shift", "1w", "--start", start, "--zone", "UTC"])
            #expect(rotation.status == 0 && rotation.out.contains("now: bob until "), "\(rotation.out) \(rotation.err)")
            let shown = try await carol.run(["oncall", "ops", "--json"])
            let view = try #require(try JSONSerialization.jsonObject(with: Data(shown.out.utf8)) as? [String: Any], "\(shown.out) \(shown.err)")
            #expect((view["now"] as? [String: Any])?["user"] as? String == "bob")
            #expect((view["next"] as? [[String: Any]])?.first?["user"] as? String == "alice")
            let mine = try await bob.run(["oncall"])
            #expect(mine.status == 0 && mine.out.hasPrefix("on call for ops until "), "\(mine.out) \(mine.err)")
            let status = try await bob.run(["status"])
            #expect(status.out.contains("on call:    on call for ops until "), "\(status.out)")
            #expect(try await carol.run(["status"]).out.contains("on call:    no"))
            let teams = try await carol.run(["team"])
            #expect(teams.out.contains("\n  on call: bob until "), "\(teams.out)")
            let teamJSON = try await carol.run(["team", "ops", "--json"])
            let teamObject = try JSONSerialization.jsonObject(with: Data(teamJSON.out.utf8)) as? [String: Any]
            #expect((teamObject?["onCall"] as? [String: Any])?["user"] as? String == "bob", "\(teamJSON.out)")

            // Overrides: carol may not put alice on call; alice (an owner) may put carol on call.
            let from = utc.string(from: now + 2 * 86_400), until = utc.string(from: now + 3 * 86_400)
            let notHers = try await carol.run(["oncall", "ops", "--override", "alice", "--from", from, "--until", until])
            #expect(notHers.status == 1 && notHers.err.contains("only an owner of ops overrides for someone else"), "\(notHers.err)")
            let made = try await alice.run(["oncall", "ops", "--override", "carol", "--from", from, "--until", until])
            #expect(made.status == 0 && made.out.contains(": carol on call for ops from "), "\(made.out) \(made.err)")
            let overrideId = String(made.out.prefix { $0 != ":" })
            #expect(try await bob.run(["oncall", "ops"]).out.contains("override \(overrideId): carol "))

            // Every bad input: one line, and nothing written.
            for (cli, arguments, says) in [
                (alice, ["oncall", "ops", "--rotation", "bob,zed", "--shift", "1w", "--start", start], "zed is not a member of ops"),
                (alice, ["oncall", "ops", "--rotation", "bob", "--shift", "1w", "--start", start, "--zone", "Mars/Olympus"], "unknown time zone"),
                (alice, ["oncall", "ops", "--rotation", "bob", "--shift", "0h", "--start", start], "longer than 0"),
                (alice, ["oncall", "ops", "--rotation", "bob", "--shift", "5w", "--start", start], "at most 4 weeks"),
                (alice, ["oncall", "ops", "--override", "bob", "--from", until, "--until", from], "ends (\(from)) before it starts"),
                (bob, ["oncall", "ops", "--rotation", "bob", "--shift", "1d", "--start", start], "only the owners of ops set its rotation"),
                (alice, ["escalate", "add", "--team", "ops", "--after", "0s", "--to", "user:zed"], "zed is not a member of ops"),
                (
                    bob, ["escalate", "add", "--team", "ops", "--after", "0s", "--to", "oncall"],
                    "only the owners of ops change its escalation policy"
                ),
                (alice, ["escalate", "add", "--after", "1m", "--to", "oncall"], "is for a team's policy"),
                (carol, ["contact", "add", "webhook:http://169.254.169.254/latest/"], "is not allowed: "),
            ] {
                let refused = try await cli.run(arguments)
                #expect(
                    refused.status != 0 && refused.err.contains(says) && refused.err.split(separator: "\n").count == 1
                        && !refused.err.contains("USAGE"),
                    "\(arguments): \(refused.status) \(refused.out) \(refused.err)")
            }
            #expect(try await carol.run(["oncall", "ops"]).out.contains("now: bob until "), "the refused rotations changed nothing")

            // The team's policy: the on-call member at once, everyone after 10 minutes.
            let policy = try await alice.run([
                "escalate", "add", "--team", "ops", "--after", "0s", "--to", "oncall", "--after", "10m", "--to", "team", "--repeat", "30m",
                "--name", "page",
            ])
            #expect(policy.status == 0 && policy.out.split(separator: "\n").count == 2, "\(policy.out) \(policy.err)")
            let listed = try await carol.run(["escalate", "--list", "--team", "ops"])
            #expect(listed.out.contains("carol has no contacts: a page cannot reach them"), "\(listed.out) \(listed.err)")
            #expect(
                listed.out.contains("page: after 0s, High only → oncall") && listed.out.contains("page-2: after 10m, every 30m again"),
                "\(listed.out)")

            // A High notification to the team: bob is paged, alice is not.
            let uns = try await alice.run(["subscribe", "--app", "ci.example.com", "--team", "ops"])
            #expect(uns.status == 0, "\(uns.err)")
            let published = try await alice.run([
                "publish", "--server", serve.url, "--client-id", serve.clientId, "--client-secret=\(serve.clientSecret)",
                "--uns-id", uns.out.trimmingCharacters(in: .whitespacesAndNewlines), "--title", "db1 down", "--priority", "high",
            ])
            #expect(published.status == 0, "\(published.err)")
            let id = published.out.trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(
                await eventually(timeout: .seconds(60)) { !recorder.matching("POST", "/bob").isEmpty },
                "bob was not paged: \(recorder.paths()) \(serve.logText(last: 3000))"
            )
            let page = try #require(recorder.matching("POST", "/bob").first?.json)
            #expect(page["event"] as? String == "escalated" && page["paged"] as? String == "bob" && page["rule"] as? String == "page", "\(page)")
            #expect((page["notification"] as? [String: Any])?["id"] as? String == id)

            // Every device shows who is paged: carol's.
            #expect(try await carol.run(["sync"]).status == 0)
            let pagedShown = await eventually(timeout: .seconds(30)) {
                _ = try? await carol.run(["sync"])
                return ((try? await carol.run(["show", id]))?.out ?? "").contains("escalated:   paged bob at webhook:http://127.0.0.1:\(port) ")
            }
            let carolShows = try await carol.run(["show", id]).out
            #expect(pagedShown, "\(carolShows)")
            let line = try #require(try await carol.run(["list", "--json"]).out.split(separator: "\n").first { $0.contains(id) })
            let records = try #require(
                (try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])?["escalations"] as? [[String: Any]])
            #expect(records.first?["user"] as? String == "bob" && records.first?["outcome"] as? String == "sent", "\(records)")

            // Alice handles it on her laptop: bob's page is taken back, saying alice did it.
            #expect(try await alice.run(["sync"]).status == 0)
            let dismissedAt = Date()
            #expect(try await alice.run(["dismiss", id]).status == 0)
            #expect(await eventually(timeout: .seconds(30)) { recorder.matching("POST", "/bob").count == 2 }, "\(recorder.paths())")
            let handled = try #require(recorder.matching("POST", "/bob").last)
            let by = try #require(handled.json?["handledBy"] as? [String: Any], "\(handled.body)")
            #expect(handled.json?["event"] as? String == "handled")
            #expect(by["user"] as? String == "alice" && by["device"] as? String == "laptop" && by["state"] as? String == "dismissed", "\(by)")
            report(
                "alice's dismiss → bob's page taken back: \(Int(handled.at.timeIntervalSince(dismissedAt) * 1000)) ms (the dismiss command's own run included)"
            )
            #expect(recorder.matching("POST", "/alice").isEmpty, "alice was not on call, and the later step never fired")

            // The calendar: bob's shifts as iCalendar, read by a real parser; revoked like a device.
            let ical = try await bob.run(["oncall", "ops", "--ical"])
            let url = try #require(ical.out.split(separator: "\n").first.map(String.init), "\(ical.err)")
            #expect(url.hasPrefix(serve.url + "/v1/calendars/") && url.hasSuffix(".ics"), "\(url)")
            if try await Repository.run(["python3", "-c", "import icalendar"]).status != 0 {
                Issue.record("Python's icalendar is not installed (pip install icalendar): .ci/run installs it")
            }
            let checked = try await Repository.run([
                "python3", "-c",
                """
                import sys, urllib.request, icalendar
                with urllib.request.urlopen(sys.argv[1]) as r:
                    assert r.headers.get_content_type() == "text/calendar", r.headers
                    cal = icalendar.Calendar.from_ical(r.read())
                events = [e for e in cal.walk("VEVENT")]
                for e in events:
                    assert e.decoded("DTSTART").tzinfo is not None and e.decoded("DTEND") > e.decoded("DTSTART"), e
                print(len(events), len({str(e["UID"]) for e in events}), str(events[0]["SUMMARY"]), events[0].decoded("DTSTART").isoformat())
                """, url,
            ])
            #expect(checked.status == 0, "\(checked.output)")
            let parts = checked.output.split(separator: " ")
            // Every other week over 120 days (30 back, 90 ahead): 8 or 9 shifts, each with its own UID.
            #expect(parts.count >= 4 && (8...10).contains(Int(parts[0]) ?? 0) && parts[0] == parts[1], "\(checked.output)")
            #expect(checked.output.contains("On call for ops"), "\(checked.output)")
            let devices = try await bob.run(["devices"])
            let calendarLine = try #require(devices.out.split(separator: "\n").first { $0.contains("on-call calendar (ops)") }, "\(devices.out)")
            let calendarId = String(calendarLine.split(separator: " ").first { $0.count >= 8 && $0.allSatisfy { $0.isHexDigit || $0 == "-" } } ?? "")
            let revoked = try await bob.run(["devices", "revoke", calendarId])
            #expect(revoked.status == 0 && revoked.out.contains("its URL answers 404"), "\(revoked.out) \(revoked.err)")
            let gone = try await Repository.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", url])
            #expect(gone.output == "404", "\(gone.output)")
            #expect(try await alice.run(["oncall", "ops", "--remove-override", overrideId]).status == 0)
            #expect(try await !bob.run(["oncall", "ops"]).out.contains("override \(overrideId)"))
        }
    }
}
