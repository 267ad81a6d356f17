import Foundation
import NottyCore
import NottyDBus
import NottyDesktop
import NottyTestSupport
import Testing

/// The only code that calls libdbus, on its own: a private session bus with dunst on it.
@Suite(
    "DesktopBus on a real session bus with dunst", .timeLimit(.minutes(5)),
    .enabled(
        if: TestDesktop.available || TestDesktop.required,
        "SKIPPED LOUDLY: dbus-daemon, Xvfb or dunst is missing (apt-get install -y dbus-daemon xvfb dunst); .ci/run installs them"))
struct DesktopBusTests {
    @Test("asks the daemon who it is; shows, replaces in place and closes popups; hears the user close one (reason 2) and its own close (reason 3)")
    func roundTrip() async throws {
        let desktop = try await TestDesktop()
        defer { desktop.stop() }
        let signals = Locked<[DesktopBus.Signal]>([])
        let bus = try DesktopBus(address: desktop.busAddress) { signal in signals.update { $0.append(signal) } }
        defer { bus.stop() }
        #expect(bus.server.hasPrefix("dunst"), "\(bus.server)")

        var content = PopupContent(.fixture(id: "n1", title: "Build failed", body: "3 <tests> & more"))
        let first = try await bus.notify(content)
        #expect(first != 0)
        #expect(await eventually(timeout: .seconds(10)) { (try? await desktop.displayed()) == 1 })
        content.summary = "Build fixed"
        #expect(try await bus.notify(content, replacing: first) == first)
        #expect(await eventually(timeout: .seconds(10)) { desktop.notifyCalls().count == 2 }, "\(desktop.notifyCalls())")
        #expect(desktop.notifyCalls() == [.init(replacesId: 0, summary: "Build failed"), .init(replacesId: first, summary: "Build fixed")])
        #expect(try await desktop.displayed() == 1, "a replacement made a second popup")

        try await desktop.closeTopmost()  // as the user would
        #expect(await eventually(timeout: .seconds(10)) { signals.value.contains(.closed(popupId: first, reason: 2)) }, "\(signals.value)")

        let second = try await bus.notify(PopupContent(.fixture(id: "n2", title: "Disk 91% full")))
        #expect(await eventually(timeout: .seconds(10)) { (try? await desktop.displayed()) == 1 })
        bus.close(second)
        #expect(await eventually(timeout: .seconds(10)) { signals.value.contains(.closed(popupId: second, reason: 3)) }, "\(signals.value)")
        #expect(try await desktop.displayed() == 0)
    }

    @Test("no bus at the address: one sentence that says what to do, not a crash")
    func noBus() throws {
        do {
            _ = try DesktopBus(address: "unix:path=/nonexistent/notty-bus") { _ in }
            Issue.record("connected to a bus that is not there")
        } catch {
            #expect(error.description.contains("no session D-Bus"), "\(error.description)")
        }
    }
}
