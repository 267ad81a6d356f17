import Foundation
import NottyCore
import NottyPOSIX
import NottyStore
import NottyTestSupport

/// PROTOCOL.md §9's figures. Device B runs `notty poll --live --desktop` against a real notification
/// daemon (dunst on its own session bus and Xvfb).
/// - A storm: 1,000 alerts of one group published as fast as 16 clients can; the popups B
///   showed (dbus-monitor's `Notify` calls and dunst's count), the time from the last publish's
///   answer until B's group popup says "×1000", and B's resident memory.
/// - Quiet toggles: another device sets quiet on and off through the service (one `PATCH
///   /v1/me/preferences`, as its outbox flush sends it); timed until B's store holds the new
///   value (B's poll has applied it: what it interrupts with follows from that row).
struct InterruptionsBench {
    let service: ServiceBench
    let device: SyncedDevice

    func run(toggles: Int, storm: Int) async throws {
        guard let (desktop, poll, log) = try await device.pollOnDesktop(bench: "interruptions") else { return }
        defer { desktop.stop() }
        defer {
            poll.signal(SIGTERM)
            poll.wait()
        }
        let store = try await LocalStore.open(path: device.storePath)
        do {
            _ = try await waitFor(.seconds(30)) { (try? String(contentsOf: log, encoding: .utf8))?.contains("connection: live") == true ? true : nil }
            try await quietToggles(toggles, store: store)
            try await self.storm(storm, desktop: desktop, pid: poll.pid)
        } catch {
            throw SupportError("\(error); notty poll said:\n\((try? String(contentsOf: log, encoding: .utf8)) ?? "")")
        }
    }

    private func quietToggles(_ toggles: Int, store: LocalStore) async throws {
        var samples: [Double] = []
        for round in 0...toggles {
            let value = round % 2 == 0 ? Interruptions.quietValue(until: Date().addingTimeInterval(3600), strict: false) : .null
            let entry = JSONValue.object(["key": .string(Interruptions.quietKey), "value": value, "changedAt": .string(ISOTime.format(Date()))])
            let start = ContinuousClock.now
            let (status, answer) = try await service.request(
                .PATCH, "/v1/me/preferences", token: service.userToken,
                body: JSONValue.object(["preferences": .array([entry])]).jsonText)
            guard status == 200 else { throw SupportError("PATCH /v1/me/preferences answered \(status): \(answer.prefix(200))") }
            _ = try await waitFor(round == 0 ? .seconds(20) : .seconds(5)) {
                try store.preferences().first { $0.key == Interruptions.quietKey }?.value == value ? true : nil
            }
            if round > 0 { samples.append((ContinuousClock.now - start).seconds * 1000) }  // round 0 warms up
        }
        print("quiet set on device A (PATCH /v1/me/preferences) → applied by B's `notty poll --live --desktop`: \(summary(samples))")
    }

    private func storm(_ count: Int, desktop: TestDesktop, pid: pid_t) async throws {
        let before = desktop.notifyCalls().count
        let start = ContinuousClock.now
        let sent = Locked(0)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for client in 0..<16 {
                group.addTask {
                    for n in stride(from: client, to: count, by: 16) {
                        let body =
                            #"{"appNotificationId":"storm-\#(n)","groupName":"HighCPU","payload":{"visualContent":{"title":"CPU at 9\#(n % 10)% on web-\#(n)"}}}"#
                        let (status, text) = try await service.request(
                            .POST, "/beta/me/notifications", token: service.appToken, body: body,
                            headers: [("X-UNS-ID", service.unsId)])
                        guard status == 201 else { throw SupportError("publish answered \(status): \(text.prefix(200))") }
                        sent.update { $0 += 1 }
                    }
                }
            }
            try await group.waitForAll()
        }
        let published = ContinuousClock.now
        let title = "HighCPU ×\(count)"
        _ = try await waitFor(.seconds(120)) { desktop.notifyCalls().contains { $0.summary == title } ? true : nil }
        let reflected = ContinuousClock.now
        let calls = desktop.notifyCalls().dropFirst(before)
        let single = calls.filter { $0.summary.hasPrefix("CPU at") }.count
        let updates = calls.filter { $0.summary.hasPrefix("HighCPU ×") }.count
        let shown = try await desktop.displayed()
        let (resident, peak) = memory(pid: pid)
        print(
            String(
                format:
                    "a storm of %d alerts of one group (16 clients, %.2f s to publish): %d single popups before it folded, then 1 group popup updated in place %d times; popups on screen at the end: %d",
                sent.value, (published - start).seconds, single, updates, shown))
        print(
            String(
                format:
                    "the last alert's answer → the group popup says \"%@\": %.0f ms; `notty poll --live --desktop` resident %.1f MiB, peak %.1f MiB",
                title, (reflected - published).seconds * 1000, Double(resident) / 1_048_576, Double(peak) / 1_048_576))
    }
}
