import Foundation
import Hummingbird
import HummingbirdTesting
import NottyCore
import NottyPOSIX
import NottyStore
import NottyTestSupport
import Testing

@Suite(
    "Desktop popups on a real session bus with dunst", .timeLimit(.minutes(5)), .serialized,
    .enabled(
        if: TestDesktop.available || TestDesktop.required,
        "SKIPPED LOUDLY: dbus-daemon, Xvfb or dunst is missing (apt-get install -y dbus-daemon xvfb dunst); .ci/run installs them"))
struct DesktopTests {
    @Test(
        "notty poll --desktop: a publish pops up; a dismiss elsewhere closes it (the 1 s figures are notty-bench desktop's); closing it dismisses it on the other device; a click activates it and opens its link, Dismiss in its menu dismisses it; a re-publish replaces it; a restart shows nothing twice and still closes; one handled before it arrives never pops up"
    )
    func popupsFollowEveryDevice() async throws {
        let desktop = try await TestDesktop()
        defer { desktop.stop() }
        let world = try await TwoDevices()
        let (a, b) = (world.a, world.b)
        let logA = world.directory.appendingPathComponent("poll-a.log")
        let pollA = try a.start(["poll", "--live"], log: logA)
        defer { if pollA.isRunning { pollA.signal(SIGTERM) } }
        // The "browser" B opens links with records them.
        let opened = world.directory.appendingPathComponent("opened.txt")
        let browser = world.directory.appendingPathComponent("browser")
        try writeProgram("#!/bin/sh\necho \"$1\" >> '\(opened.path)'\n", to: browser)
        func startB(_ name: String) throws -> (ChildProcess, URL) {
            let log = world.directory.appendingPathComponent(name)
            return (
                try b.start(["poll", "--live", "--desktop"], log: log, environment: desktop.environment.merging(["BROWSER": browser.path]) { $1 }),
                log
            )
        }
        func text(_ url: URL) -> String { (try? String(contentsOf: url, encoding: .utf8)) ?? "" }
        var (pollB, logB) = try startB("poll-b.log")
        defer { if pollB.isRunning { pollB.signal(SIGTERM) } }
        #expect(
            await eventually(timeout: .seconds(60)) {
                text(logB).contains("desktop popups through dunst") && text(logB).contains("connection: live")
                    && text(logA).contains("connection: live")
            },
            "poll --desktop did not start:\n\(text(logB))")
        let storeA = try world.store(a)

        // A publish pops up once.
        let first = try await world.publish("Build #1 failed", body: "3 tests <failed>")
        #expect(await eventually(timeout: .seconds(30)) { (try? await desktop.displayed()) == 1 }, "no popup:\n\(text(logB))")
        // Dismissed on A: B's popup closes (within 1 s: notty-bench desktop).
        #expect(try await a.run(["dismiss", first]).status == 0)
        let dismissStart = ContinuousClock.now
        #expect(
            await eventually(timeout: .seconds(30)) { (try? await desktop.displayed()) == 0 }, "the popup stayed after a dismiss on A:\n\(text(logB))"
        )
        report("dismiss on A → popup closed on B: \(dismissStart.duration(to: .now))")

        // The user closes a popup on B: A's store says Dismissed.
        let second = try await world.publish("Disk 91% full")
        #expect(await eventually(timeout: .seconds(30)) { (try? await desktop.displayed()) == 1 })
        try await desktop.closeTopmost()
        #expect(
            try await eventually(timeout: .seconds(30)) {
                try (await storeA.perform { try $0.notification(id: second) })?.userActionState == .dismissed
            },
            "closing the popup did not dismiss it on A:\n\(text(logB))")

        // A click on a popup (its default action) activates it everywhere and opens its link;
        // "Dismiss" in its menu dismisses it everywhere.
        let linked = try await a.run([
            "publish", "--server", world.service.url, "--client-id", world.service.clientId, "--client-secret=\(world.service.clientSecret)",
            "--uns-id", world.uns, "--title", "PR #7 opened", "--url", "https://example.com/pr/7",
        ])
        let clicked = linked.out.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(linked.status == 0, "\(linked.err)")
        #expect(await eventually(timeout: .seconds(30)) { (try? await desktop.displayed()) == 1 })
        try await desktop.clickTopmost()
        #expect(
            try await eventually(timeout: .seconds(30)) {
                let n = try (await storeA.perform { try $0.notification(id: clicked) })
                return n?.userActionState == .activated && n?.readState == .read
            }, "a click did not activate it on A:\n\(text(logB))")
        #expect(await eventually(timeout: .seconds(30)) { text(opened) == "https://example.com/pr/7\n" }, "the link was not opened: \(text(opened))")
        #expect(await eventually(timeout: .seconds(30)) { (try? await desktop.displayed()) == 0 })
        let menu = try await world.publish("Certificate expires in 7 days")
        #expect(await eventually(timeout: .seconds(30)) { (try? await desktop.displayed()) == 1 })
        try await desktop.chooseAction("Dismiss")
        #expect(
            try await eventually(timeout: .seconds(30)) {
                try (await storeA.perform { try $0.notification(id: menu) })?.userActionState == .dismissed
            },
            "Dismiss in the popup's menu did not dismiss it on A:\n\(text(logB))")
        #expect(await eventually(timeout: .seconds(30)) { (try? await desktop.displayed()) == 0 })

        // A re-publish replaces the popup in place: still one, with the new title.
        let publish = { (title: String) async throws -> String in
            let result = try await a.run([
                "publish", "--server", world.service.url, "--client-id", world.service.clientId, "--client-secret=\(world.service.clientSecret)",
                "--uns-id", world.uns, "--title", title, "--app-notification-id", "deploy-7",
            ])
            guard result.status == 0 else { throw SupportError("publish: \(result.err)") }
            return result.out.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        let third = try await publish("Deploy started")
        #expect(await eventually(timeout: .seconds(30)) { (try? await desktop.displayed()) == 1 })
        #expect(try await publish("Deploy finished") == third)
        #expect(
            await eventually(timeout: .seconds(30)) { desktop.notifyCalls().contains { $0.summary == "Deploy finished" } },
            "the re-publish was not shown")
        let replacement = desktop.notifyCalls().last { $0.summary == "Deploy finished" }
        #expect(replacement?.replacesId != 0, "a re-publish made a second popup: \(desktop.notifyCalls())")
        #expect(try await desktop.displayed() == 1, "a re-publish made a second popup")

        // poll restarted: no second popup, and the old one still closes when handled elsewhere.
        #expect(terminate(pollB), "notty poll did not end within 10 s of SIGTERM")
        let callsBeforeRestart = desktop.notifyCalls().count
        (pollB, logB) = try startB("poll-b2.log")
        #expect(await eventually(timeout: .seconds(30)) { text(logB).contains("connection: live") })
        // A barrier: one more notification, shown after whatever the restart would show.
        let barrier = try await world.publish("Barrier after the restart")
        #expect(await eventually(timeout: .seconds(30)) { desktop.notifyCalls().contains { $0.summary == "Barrier after the restart" } })
        #expect(
            desktop.notifyCalls().dropFirst(callsBeforeRestart).map(\.summary) == ["Barrier after the restart"],
            "the restarted poll showed a popup twice: \(desktop.notifyCalls())")
        #expect(try await a.run(["sync"]).status == 0)
        #expect(try await a.run(["dismiss", barrier]).status == 0)
        #expect(await eventually(timeout: .seconds(30)) { (try? await desktop.displayed()) == 1 })
        #expect(try await a.run(["read", third]).status == 0)
        #expect(await eventually(timeout: .seconds(30)) { (try? await desktop.displayed()) == 0 }, "the restarted poll did not close the old popup")
        let summaries = try await desktop.historySummaries()
        #expect(summaries.contains("Deploy finished"), "the popup did not show the re-published title: \(summaries)")

        // Handled before it arrives: B is stopped, A dismisses a new one; B starts and shows nothing.
        #expect(terminate(pollB), "notty poll did not end within 10 s of SIGTERM")
        let fourth = try await world.publish("Backup failed")
        #expect(try await a.run(["sync"]).status == 0)
        #expect(try await a.run(["dismiss", fourth]).status == 0)
        let callsBeforeThird = desktop.notifyCalls().count
        (pollB, logB) = try startB("poll-b3.log")
        #expect(
            try await eventually(timeout: .seconds(30)) {
                try (await world.store(b).perform { try $0.notification(id: fourth) })?.userActionState == .dismissed
            })
        _ = try await world.publish("Barrier after the third start")
        #expect(await eventually(timeout: .seconds(30)) { desktop.notifyCalls().contains { $0.summary == "Barrier after the third start" } })
        #expect(
            desktop.notifyCalls().dropFirst(callsBeforeThird).map(\.summary) == ["Barrier after the third start"],
            "a notification dismissed before it arrived popped up: \(desktop.notifyCalls())")
        #expect(!text(logB).contains(fourth), "poll reported a notification handled before it arrived:\n\(text(logB))")
    }

    @Test(
        "a popup carries the notification's actions as buttons (PROTOCOL.md §12): an http one chosen in dunst's menu runs once on the service and its clear dismisses it everywhere; a view one opens its link and activates"
    )
    func popupActions() async throws {
        let recorder = TargetRecorder()
        try await recorder.application().test(.live) { client in
            let port = try #require(client.port)
            let desktop = try await TestDesktop()
            defer { desktop.stop() }
            let world = try await TwoDevices()
            let (a, b) = (world.a, world.b)
            let opened = world.directory.appendingPathComponent("opened.txt")
            let browser = world.directory.appendingPathComponent("browser")
            try writeProgram("#!/bin/sh\necho \"$1\" >> '\(opened.path)'\n", to: browser)
            let log = world.directory.appendingPathComponent("poll-b.log")
            func text(_ url: URL) -> String { (try? String(contentsOf: url, encoding: .utf8)) ?? "" }
            let pollB = try b.start(
                ["poll", "--live", "--desktop"], log: log, environment: desktop.environment.merging(["BROWSER": browser.path]) { $1 })
            defer { if pollB.isRunning { pollB.signal(SIGTERM) } }
            #expect(
                await eventually(timeout: .seconds(30)) {
                    text(log).contains("desktop popups through dunst") && text(log).contains("connection: live")
                },
                "poll --desktop did not start:\n\(text(log))")

            let approve = try await world.publish(
                "Deploy web 1.42?",
                extra: [
                    "--action", "http, Approve, http://127.0.0.1:\(port)/approve, clear=true",
                    "--action", "view, Diff, https://git.example.com/compare/42",
                ])
            #expect(await eventually(timeout: .seconds(30)) { (try? await desktop.displayed()) == 1 }, "no popup:\n\(text(log))")
            try await desktop.chooseAction("Approve")
            #expect(
                await eventually(timeout: .seconds(20)) { recorder.matching("POST", "/approve").count == 1 },
                "the action did not run: \(recorder.paths())\n\(text(log))")
            let storeA = try world.store(a)
            #expect(
                try await eventually(timeout: .seconds(20)) {
                    _ = try? await a.run(["sync"])
                    let n = try await storeA.perform { try $0.notification(id: approve) }
                    return n?.userActionState == .dismissed && n?.actionResults?.first?.status == .done
                }, "Approve did not dismiss it on A:\n\(text(log))")
            #expect(await eventually(timeout: .seconds(30)) { text(log).contains("Approve: done") }, "\(text(log))")

            let docs = try await world.publish("Release notes ready", extra: ["--action", "view, Read them, https://docs.example.com/1.42"])
            #expect(await eventually(timeout: .seconds(30)) { (try? await desktop.displayed()) == 1 }, "no popup:\n\(text(log))")
            try await desktop.chooseAction("Read them")
            #expect(
                await eventually(timeout: .seconds(30)) { text(opened) == "https://docs.example.com/1.42\n" },
                "the link was not opened: \(text(opened))")
            #expect(
                try await eventually(timeout: .seconds(20)) {
                    _ = try? await a.run(["sync"])
                    return try (await storeA.perform { try $0.notification(id: docs) })?.userActionState == .activated
                })
            #expect(recorder.hits.value.count == 1)
        }
    }

    @Test(
        "a storm of 40 alerts of one group is one popup with its count; quiet on A holds B's popups back but for High and ends in one summary popup; an ended snooze waits while muted; a timed mute ends by itself; closing the storm's popup dismisses all 40 on A"
    )
    func stormsAndQuiet() async throws {
        let desktop = try await TestDesktop()
        defer { desktop.stop() }
        let world = try await TwoDevices()
        let (a, b) = (world.a, world.b)
        let log = world.directory.appendingPathComponent("poll-b.log")
        let poll = try b.start(["poll", "--live", "--desktop"], log: log, environment: desktop.environment)
        defer { if poll.isRunning { poll.signal(SIGTERM) } }
        func text() -> String { (try? String(contentsOf: log, encoding: .utf8)) ?? "" }
        #expect(
            await eventually(timeout: .seconds(30)) { text().contains("desktop popups through dunst") && text().contains("connection: live") },
            "\(text())")

        // Quiet on A: a normal one never pops up on B, a High one does (a barrier: it comes after).
        #expect(try await a.run(["quiet", "--for", "1h"]).status == 0)
        _ = try await world.publish("Disk 91% full", extra: ["--priority", "none"])
        _ = try await world.publish("Site down", extra: ["--priority", "high"])
        #expect(await eventually(timeout: .seconds(30)) { desktop.notifyCalls().contains { $0.summary == "Site down" } }, "\(desktop.notifyCalls())")
        #expect(!desktop.notifyCalls().contains { $0.summary == "Disk 91% full" }, "a popup while quiet")
        // A snooze that ends while its group is muted does not pop up again until it may.
        let snoozed = try await world.publish("Renew the certificate", extra: ["--priority", "high", "--group", "Certs"])
        #expect(await eventually(timeout: .seconds(30)) { desktop.notifyCalls().contains { $0.summary == "Renew the certificate" } })
        #expect(try await b.run(["snooze", snoozed, "--for", "2s"]).status == 0)
        #expect(try await a.run(["mute", "--group", "Certs"]).status == 0)
        // The snooze runs out: B's Snoozed view no longer has it.
        #expect(
            try await eventually(timeout: .seconds(30), every: .milliseconds(200)) {
                try await b.run(["list", "--view", "snoozed", "--json"]).out.contains(snoozed) == false
            }, "the snooze did not run out")
        _ = try await world.publish("Site still down", extra: ["--priority", "high"])
        #expect(await eventually(timeout: .seconds(30)) { desktop.notifyCalls().contains { $0.summary == "Site still down" } })
        _ = try await world.publish("Site down for good", extra: ["--priority", "high"])
        #expect(await eventually(timeout: .seconds(30)) { desktop.notifyCalls().contains { $0.summary == "Site down for good" } })
        #expect(desktop.notifyCalls().filter { $0.summary == "Renew the certificate" }.count == 1, "an ended snooze popped up while muted")
        #expect(try await a.run(["unmute", "--group", "Certs"]).status == 0)
        #expect(
            await eventually(timeout: .seconds(30)) { desktop.notifyCalls().filter { $0.summary == "Renew the certificate" }.count == 2 },
            "the ended snooze did not pop up once unmuted")

        // Quiet ends: what it held back and is still Unread is one summary popup.
        #expect(try await a.run(["quiet", "off"]).status == 0)
        #expect(
            await eventually(timeout: .seconds(30)) { desktop.notifyCalls().contains { $0.summary == "1 notification while quiet" } },
            "no summary when quiet ended: \(desktop.notifyCalls())")
        #expect(!desktop.notifyCalls().contains { $0.summary == "Disk 91% full" }, "held back, then popped up one by one")
        #expect(
            await eventually(timeout: .seconds(30)) {
                if (try? await desktop.displayed()) ?? 1 > 0 { try? await desktop.closeTopmost() }
                return (try? await desktop.displayed()) == 0
            })

        // A timed mute set on A holds back B's popups of that group, then ends by itself.
        #expect(try await a.run(["mute", "--group", "Backups", "--for", "10s"]).status == 0)
        _ = try await world.publish("Backup slow", extra: ["--group", "Backups"])
        _ = try await world.publish("Cert expires soon")
        #expect(
            await eventually(timeout: .seconds(30)) { desktop.notifyCalls().contains { $0.summary == "Cert expires soon" } },
            "\(desktop.notifyCalls())")
        #expect(!desktop.notifyCalls().contains { $0.summary == "Backup slow" }, "a popup while muted")
        #expect(await eventually(timeout: .seconds(60)) { (try? await b.run(["mute", "--list"]).out) == "" }, "the mute did not end by itself on B")
        _ = try await world.publish("Backup done", extra: ["--group", "Backups"])
        #expect(
            await eventually(timeout: .seconds(30)) { desktop.notifyCalls().contains { $0.summary == "Backup done" } },
            "the mute did not end: \(desktop.notifyCalls())")
        #expect(!desktop.notifyCalls().contains { $0.summary == "Backup slow" }, "a muted one is never announced")
        #expect(
            await eventually(timeout: .seconds(30)) {
                if (try? await desktop.displayed()) ?? 1 > 0 { try? await desktop.closeTopmost() }
                return (try? await desktop.displayed()) == 0
            })

        // 40 alerts of one group (well within a minute): one popup, replaced in place.
        var ids: [String] = []
        for n in 1...40 { ids.append(try await world.publish("CPU at 9\(n % 10)%", extra: ["--group", "HighCPU"])) }
        #expect(
            await eventually(timeout: .seconds(30)) { desktop.notifyCalls().contains { $0.summary == "HighCPU ×40" } },
            "\(desktop.notifyCalls().suffix(5))")
        #expect(await eventually(timeout: .seconds(30)) { (try? await desktop.displayed()) == 1 }, "the storm left more than one popup")
        report("a storm of 40: \(desktop.notifyCalls().filter { $0.summary.hasPrefix("CPU") }.count) single popups before it folded, one popup after")
        // Closing it dismisses all 40, on A too.
        try await desktop.closeTopmost()
        let storeA = try world.store(a)
        #expect(
            try await eventually(timeout: .seconds(20)) {
                _ = try await a.run(["sync"])
                return try ids.allSatisfy { try storeA.notification(id: $0)?.userActionState == .dismissed }
            }, "closing the storm's popup did not dismiss all 40 on A:\n\(text())")
    }

    @Test("no libdbus-1 on the machine: notty does not need it to start, poll --desktop says so in one line and goes on syncing")
    func noLibrary() async throws {
        // notty does not link libdbus (it is opened when --desktop needs it).
        let ldd = try await Repository.run(["ldd", Repository.nottyBinary.path])
        #expect(ldd.status == 0 && ldd.output.contains("libc.so") && !ldd.output.contains("libdbus"), "notty links libdbus:\n\(ldd.output)")
        // Hide the library from one process: a mount namespace with /dev/null over its file.
        let canHide = try await Repository.run(["unshare", "-m", "true"]).status == 0
        #expect(canHide || !TestDesktop.required, "unshare -m must work in CI (run as root)")
        guard canHide else {
            report("SKIPPED LOUDLY: unshare -m is not permitted here, so libdbus-1 cannot be hidden from a process")
            return
        }
        let desktop = try await TestDesktop()
        defer { desktop.stop() }
        let world = try await TwoDevices()
        let log = world.directory.appendingPathComponent("poll.log")
        let hide =
            #"lib=$(readlink -f "$(ldconfig -p | awk '/libdbus-1\.so\.3 /{print $NF; exit}')") && mount --bind /dev/null "$lib" && exec "$0" "$@""#
        let poll = try startLogged(
            "/usr/bin/unshare", ["-m", "sh", "-c", hide, Repository.nottyBinary.path, "poll", "--live", "--desktop"], log: log,
            environment: desktop.environment.merging(["NOTTY_HOME": world.b.home.path]) { $1 })
        defer { if poll.isRunning { poll.signal(SIGTERM) } }
        func text() -> String { (try? String(contentsOf: log, encoding: .utf8)) ?? "" }
        let id = try await world.publish("Synced all the same")
        #expect(
            try await eventually(timeout: .seconds(30)) { try (await world.store(world.b).perform { try $0.notification(id: id) }) != nil },
            "poll stopped syncing:\n\(text())")
        #expect(await eventually(timeout: .seconds(5)) { text().contains(id) }, "poll stopped reporting without libdbus:\n\(text())")
        let lines = text().split(separator: "\n").filter { $0.contains("libdbus") }
        #expect(lines.count == 1 && lines[0].hasPrefix("notty: desktop popups need libdbus-1 (apt install libdbus-1-3)"), "\(text())")
        #expect(try await desktop.displayed() == 0, "a popup without libdbus?")
        #expect(poll.isRunning, "poll ended:\n\(text())")
    }

    @Test("no session bus: one line, and poll goes on syncing")
    func noBus() async throws {
        let world = try await TwoDevices()
        let log = world.directory.appendingPathComponent("poll.log")
        let poll = try world.b.start(
            ["poll", "--live", "--desktop"], log: log, environment: ["DBUS_SESSION_BUS_ADDRESS": "unix:path=/nonexistent/bus"])
        defer { if poll.isRunning { poll.signal(SIGTERM) } }
        let id = try await world.publish("Still synced")
        #expect(try await eventually(timeout: .seconds(30)) { try (await world.store(world.b).perform { try $0.notification(id: id) }) != nil })
        func text() -> String { (try? String(contentsOf: log, encoding: .utf8)) ?? "" }
        #expect(await eventually(timeout: .seconds(30)) { text().contains(id) }, "poll stopped reporting without a bus:\n\(text())")
        #expect(text().split(separator: "\n").filter { $0.contains("D-Bus") }.count == 1, "\(text())")
    }
}
