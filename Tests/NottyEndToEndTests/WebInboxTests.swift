import Foundation
import NottyCore
import NottyPOSIX
import NottyTestSupport
import Testing

/// The web inbox (PROTOCOL.md §14) in a real headless Chromium, driven by Playwright for Python
/// (`Tests/browser/web_inbox.py`), against a real `notty serve` and a real `notty` device.
@Suite("The web inbox in a real browser", .timeLimit(.minutes(5)), .serialized)
struct WebInboxTests {
    /// Why the browser cannot run here (nil: it can).
    static let unavailable: String? = {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/chromium") else {
            return "Debian's chromium is not installed (apt-get install -y chromium)"
        }
        guard (try? Repository.runWaiting(["python3", "-c", "import playwright"]).status) == 0 else {
            return "Playwright for Python is not installed (pip install playwright)"
        }
        return nil
    }()

    /// Whether the browser runs here; when it does not, says so loudly (and fails in CI).
    static func browserRuns() -> Bool {
        guard let why = unavailable else { return true }
        if ProcessInfo.processInfo.environment["CI"] == "true" { Issue.record("\(why): .ci/run installs it") }
        print("SKIPPED LOUDLY: \(why)")
        return false
    }

    @Test(
        "sign in (a wrong password says so), a strict CSP and an HttpOnly SameSite=Strict cookie, a cross-site change refused; a script-looking title stays text; d and u; a notty device's dismiss leaves the browser's list live and the browser's r reaches the device; 1–6 and Enter; 360 px wide with no sideways scroll; the browser is a device notty devices lists and revokes"
    )
    func browserIsADevice() async throws {
        guard Self.browserRuns() else { return }
        let world = try await TwoDevices()
        let hostile = #"<img src=x onerror="alert(1)"><script>alert(2)</script>"#
        _ = try await world.publish("Disk usage 91% on db-primary")
        // A history longer than the inbox's first page (100 rows): the search finds what that
        // page does not hold. They are activated on a notty device, so the views the browser
        // counts are as before.
        let fillers = try await withThrowingTaskGroup(of: [String].self) { group in
            for worker in 0..<4 {
                group.addTask {
                    var ids: [String] = []
                    for n in stride(from: worker, to: 104, by: 4) { ids.append(try await world.publish("Nightly report \(n)")) }
                    return ids
                }
            }
            return try await group.reduce(into: [String]()) { $0 += $1 }
        }
        #expect(try await world.a.run(["sync"]).status == 0)
        let activated = try await world.a.run(["activate"] + fillers)
        #expect(activated.status == 0, "\(activated.err)")
        let elsewhere = try await world.publish("Standup in 15 minutes")
        _ = try await world.publish(hostile)
        #expect(try await world.b.run(["sync"]).status == 0)
        // A saved view made on a notty device: the browser shows it as a tab (PROTOCOL.md §17).
        let saved = try await world.a.run(["view", "add", "disks", "disk usage"])
        #expect(saved.status == 0, "\(saved.err)")

        let workdir = world.directory.appendingPathComponent("browser")
        try FileManager.default.createDirectory(at: workdir, withIntermediateDirectories: true)
        let log = world.directory.appendingPathComponent("browser.log")
        let arguments = [
            Repository.root.appendingPathComponent("Tests/browser/web_inbox.py").path, world.service.url, workdir.path, hostile,
        ]
        let script = try startLogged("/usr/bin/env", ["python3"] + arguments, log: log, environment: [:])
        defer { terminate(script, grace: 2) }
        func said() -> String { (try? String(contentsOf: log, encoding: .utf8)) ?? "" }
        func written(_ name: String) -> String? { try? String(contentsOf: workdir.appendingPathComponent(name), encoding: .utf8) }

        // Signed in: a notty device dismisses one; the browser's list follows by itself.
        #expect(await eventually(timeout: .seconds(120)) { written("signed-in") != nil || !script.isRunning }, "\(said())")
        #expect(try await world.b.run(["dismiss", elsewhere]).status == 0)
        try elsewhere.write(to: workdir.appendingPathComponent("dismissed-elsewhere"), atomically: true, encoding: .utf8)

        // The browser reads one: the device sees it after a sync.
        #expect(await eventually(timeout: .seconds(60)) { written("read-here") != nil || !script.isRunning }, "\(said())")
        if let readId = written("read-here") {
            #expect(try await world.b.run(["sync"]).status == 0)
            let shown = try await world.b.run(["show", readId, "--json"])
            #expect(shown.out.contains(#""readState":"Read""#), "\(shown.out) \(shown.err)")
        }
        let ended = await script.exited()
        #expect(ended.code == 0, "\(said())")
        if let figures = said().split(separator: "\n").last { report("web inbox: \(figures)") }
        // The browser is a device: notty devices lists it by the name given at sign-in; revoked, its cookie is refused at once.
        let devices = try await world.a.run(["devices"])
        let line = try #require(devices.out.split(separator: "\n").first { $0.contains("work laptop browser") }, "\(devices.out)")
        let id = try #require(line.split(separator: " ").first { $0.count >= 8 }.map(String.init), "\(line)")
        #expect(try await world.a.run(["devices", "revoke", id]).status == 0)
        let cookie = try await signIn(world.service.url)
        #expect(try await status(world.service.url, cookie: cookie) == "200")
        let mine = try await world.a.run(["devices"])
        let fresh = try #require(mine.out.split(separator: "\n").first { $0.contains("curl browser") }, "\(mine.out)")
        #expect(try await world.a.run(["devices", "revoke", String(fresh.split(separator: " ")[0])]).status == 0)
        #expect(try await status(world.service.url, cookie: cookie) == "401", "a revoked browser's cookie still works")
    }

    @Test(
        "Web Push: a publish is pushed to the browser's push service (a stand-in on loopback) signed with VAPID and encrypted for it, and the app's service worker shows it; dismissed on a notty device, a close push, and the service worker closes it"
    )
    func webPush() async throws {
        guard Self.browserRuns() else { return }
        // The stand-in push service listens on a port of the script's choosing on loopback.
        let world = try await TwoDevices(serveArguments: ["--webpush-allow", "http://127.0.0.1:"])
        let workdir = world.directory.appendingPathComponent("push")
        try FileManager.default.createDirectory(at: workdir, withIntermediateDirectories: true)
        let log = world.directory.appendingPathComponent("push.log")
        let script = try startLogged(
            "/usr/bin/env",
            ["python3", Repository.root.appendingPathComponent("Tests/browser/web_push.py").path, world.service.url, workdir.path],
            log: log, environment: [:])
        defer { terminate(script, grace: 2) }
        func said() -> String { (try? String(contentsOf: log, encoding: .utf8)) ?? "" }
        func written(_ name: String) -> String? { try? String(contentsOf: workdir.appendingPathComponent(name), encoding: .utf8) }

        #expect(await eventually(timeout: .seconds(120)) { written("subscribed") != nil || !script.isRunning }, "\(said())")
        _ = try await world.publish("Disk usage 97% on db-primary", extra: ["--priority", "high"])
        try "yes".write(to: workdir.appendingPathComponent("published"), atomically: true, encoding: .utf8)
        #expect(await eventually(timeout: .seconds(60)) { written("shown") != nil || !script.isRunning }, "\(said())")
        if let id = written("shown") {
            #expect(try await world.b.run(["sync"]).status == 0)
            #expect(try await world.b.run(["dismiss", id]).status == 0)
        }
        let ended = await script.exited()
        #expect(ended.code == 0, "\(said())")
        // Its figures: how often DevTools' delivery had to be made again.
        if let figures = said().split(separator: "\n").last { print("web push: \(figures)") }
    }

    @Test(
        "notty demo --web hands $BROWSER a one-time link; in Chromium at 390 × 844 with touch: the pure modules' checks, axe on sign-in, list and detail, the link used once, every view on screen and targets ≥ 44 px with no key hints, tap to open, swipe to dismiss, and offline: the list after a reload and after the browser is started again, the change made offline sent once when the service is back"
    )
    func phoneAndDemo() async throws {
        guard Self.browserRuns() else { return }
        guard TmuxSession.available else {
            if ProcessInfo.processInfo.environment["CI"] == "true" { Issue.record("tmux is not installed: .ci/run installs it") }
            print("SKIPPED LOUDLY: tmux is not installed (apt-get install -y tmux)")
            return
        }
        guard (try? Repository.runWaiting(["python3", "-c", "import axe_playwright_python"]).status) == 0 else {
            if ProcessInfo.processInfo.environment["CI"] == "true" { Issue.record("axe-playwright-python is not installed: .ci/run installs it") }
            print("SKIPPED LOUDLY: axe-playwright-python is not installed (pip install axe-playwright-python)")
            return
        }
        let home = Repository.temporaryDirectory("notty-demo-web")
        defer { try? FileManager.default.removeItem(at: home) }
        // $BROWSER: a program that writes down the link it is given, as a browser would open it.
        let opened = home.appendingPathComponent("opened")
        let browser = home.appendingPathComponent("browser")
        try "#!/bin/sh\nprintf '%s' \"$1\" > \(opened.path).part && mv \(opened.path).part \(opened.path)\n".write(
            to: browser, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: browser.path)
        let session = try TmuxSession(
            command: "\(Repository.nottyBinary.path) demo --web --every 0 --data \(home.path)/demo",
            environment: ["NOTTY_HOME": home.path, "XDG_RUNTIME_DIR": home.path, "BROWSER": browser.path])
        defer { session.close() }
        #expect(await eventually(timeout: .seconds(30)) { FileManager.default.fileExists(atPath: opened.path) }, "\(session.shown)")
        let link = try String(contentsOf: opened, encoding: .utf8)
        #expect(link.hasPrefix("http://127.0.0.1:") && link.contains("/#signin="), "\(link)")
        #expect(
            await session.waitFor("Build #4812 failed on main", timeout: .seconds(20)), "the center did not open after the link:\n\(session.shown)")

        let workdir = home.appendingPathComponent("phone")
        try FileManager.default.createDirectory(at: workdir, withIntermediateDirectories: true)
        let log = home.appendingPathComponent("phone.log")
        let arguments = ["python3", Repository.root.appendingPathComponent("Tests/browser/web_phone.py").path, link, workdir.path]
        let script = try startLogged("/usr/bin/env", arguments, log: log, environment: [:])
        defer { terminate(script, grace: 2) }
        let ended = await script.exited()
        let said = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
        #expect(ended.code == 0, "\(said)")
        if let figures = said.split(separator: "\n").last { report("web inbox on a phone: \(figures)") }
        // The demo's center saw the phone's changes (a dismiss by swipe, another made offline).
        #expect(await session.waitFor("Dismissed 4", timeout: .seconds(20)), "the phone's dismissals did not reach the center:\n\(session.shown)")
    }

    @Test("the files notty serve embeds are Resources/web's (scripts/web-embed)")
    func embeddedFilesAreCurrent() async throws {
        let checked = try await Repository.run(["python3", Repository.root.appendingPathComponent("scripts/web-embed").path, "--check"])
        #expect(checked.status == 0, "\(checked.output)")
    }

    /// Signs in as a browser does (same Origin) with curl: the session cookie's value.
    func signIn(_ url: String) async throws -> String {
        let answer = try await Repository.run([
            "curl", "-s", "-D", "-", "-o", "/dev/null", "-H", "Origin: \(url)", "-H", "Content-Type: application/json", "--data",
            #"{"username":"alice","password":"s3cret-pw","deviceName":"curl browser"}"#, url + "/v1/web/session",
        ])
        let header = try #require(answer.output.split(separator: "\r\n").first { $0.lowercased().hasPrefix("set-cookie:") }, "\(answer.output)")
        #expect(header.contains("HttpOnly") && header.contains("SameSite=Strict"), "\(header)")
        return String(header.dropFirst("set-cookie: ".count).prefix { $0 != ";" })
    }

    func status(_ url: String, cookie: String) async throws -> String {
        try await Repository.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "-H", "Cookie: \(cookie)", url + "/v1/me"]).output
    }
}
