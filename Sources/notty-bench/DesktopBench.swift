import Foundation
import NottyCore
import NottyPOSIX
import NottyStore
import NottyTestSupport

/// Issue 16's figures: device B runs `notty poll --live --desktop` against a real notification
/// daemon (dunst on its own session bus and Xvfb); another device dismisses through the service
/// (one PATCH, as its outbox flush sends it); timed until B has sent `CloseNotification` (its
/// popup mapping in the store drops the notification; dunst tells only the popup's owner that
/// it closed, so no other connection can see the close itself). At the end dunst must show no
/// popup. Also the resident memory of that `notty poll` with the whole history in its store.
struct DesktopBench {
    let service: ServiceBench
    let device: SyncedDevice

    func run(rounds: Int) async throws {
        guard let (desktop, poll, log) = try await device.pollOnDesktop(bench: "desktop") else { return }
        defer { desktop.stop() }
        defer {
            poll.signal(SIGTERM)
            poll.wait()
        }
        let store = try await LocalStore.open(path: device.storePath)
        var samples: [Double] = []
        do {
            for round in 0...rounds {
                // A new notification pops up on B; then another device dismisses it.
                let (status, text) = try await service.request(
                    .POST, "/beta/me/notifications", token: service.appToken,
                    body: #"{"appNotificationId":"popup-\#(round)","payload":{"visualContent":{"title":"Popup \#(round)"}}}"#,
                    headers: [("X-UNS-ID", service.unsId)])
                guard status == 201,
                    let id = JSONValue(jsonText: text).flatMap({ value -> String? in
                        if case .object(let o) = value, case .string(let id)? = o["id"] { return id }
                        return nil
                    })
                else { throw SupportError("publish answered \(status): \(text.prefix(200))") }
                _ = try await waitFor(round == 0 ? .seconds(20) : .seconds(5)) {
                    try store.popups().first { $0.notificationId == id }?.popupId
                }
                let start = ContinuousClock.now
                let (patched, answer) = try await service.request(
                    .PATCH, "/v1/me/notifications/\(id)", token: service.userToken,
                    body: #"{"userActionState":"Dismissed","changedAt":\#(ISOTime.millis(Date())),"mutationId":"\#(UUID().uuidString)"}"#)
                guard patched == 200 else { throw SupportError("PATCH answered \(patched): \(answer.prefix(200))") }
                _ = try await waitFor(.seconds(5)) { try store.popups().contains { $0.notificationId == id } ? nil : true }
                if round > 0 { samples.append((ContinuousClock.now - start).seconds * 1000) }  // round 0 warms up
            }
        } catch {
            throw SupportError("\(error); notty poll said:\n\((try? String(contentsOf: log, encoding: .utf8)) ?? "")")
        }
        try await Task.sleep(for: .milliseconds(300))
        print(
            "dismiss on device A → popup closed on B's desktop (`notty poll --live --desktop`, dunst): \(summary(samples)); popups left on screen: \(try await desktop.displayed())"
        )
        let (resident, peak) = memory(pid: poll.pid)
        print(
            String(
                format: "`notty poll --live --desktop` with %d notifications in its store: resident %.1f MiB, peak %.1f MiB",
                device.count, Double(resident) / 1_048_576, Double(peak) / 1_048_576))
    }
}

extension SyncedDevice {
    /// dunst on a private session bus (and Xvfb) with this device's `notty poll --live
    /// --desktop` against it, logging to poll-`bench`.log; nil, said, when the desktop's
    /// programs are missing. The caller stops both.
    func pollOnDesktop(bench: String) async throws -> (desktop: TestDesktop, poll: ChildProcess, log: URL)? {
        guard TestDesktop.available else {
            print("\(bench): skipped: dbus-daemon, Xvfb or dunst is missing (apt-get install -y dbus-daemon xvfb dunst)")
            return nil
        }
        let desktop = try await TestDesktop()
        let log = home.appendingPathComponent("poll-\(bench).log")
        do {
            return (desktop, try cli.start(["poll", "--live", "--desktop"], log: log, environment: desktop.environment), log)
        } catch {
            desktop.stop()
            throw error
        }
    }
}
