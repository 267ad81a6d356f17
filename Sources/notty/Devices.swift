import ArgumentParser
import Foundation
import NottyCenter
import NottyCommandLine
import NottyCore
import NottySync

struct Devices: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "devices",
        abstract: "List your devices, app subscriptions and webhooks, or revoke one.",
        discussion: """
            Devices are the places you signed in (name, how it listens, when it was last \
            seen; this one is marked). App subscriptions are the ids you gave app servers \
            (notty subscribe), webhooks the URLs you gave tools (notty subscribe \
            --webhook). Revoking a device signs it out at once: its tokens stop working on \
            the next request. Revoking an app subscription stops that id; revoking a \
            webhook makes its URL answer 404.

              notty devices
              notty devices revoke 3f2a9c
            """,
        subcommands: [DeviceList.self, DeviceRevoke.self],
        defaultSubcommand: DeviceList.self)
}

struct DeviceList: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "List your devices, app subscriptions and webhooks.")

    @Flag(help: "One JSON object per line: the service's subscription object plus thisDevice.") var json = false

    func run() async throws {
        try await reportingErrors {
            let (client, _, _) = try await Device().session()
            let mine = await client.current.subscriptionId
            let all = try await client.subscriptions()
            if json {
                for item in all {
                    var object: [String: JSONValue] = [
                        "userNotificationSubscriptionId": .string(item.userNotificationSubscriptionId), "deviceId": .string(item.deviceId),
                        "kind": .string(item.isDevice ? "device" : item.isWebhook ? "webhook" : "app"),
                        "thisDevice": .bool(item.userNotificationSubscriptionId == mine),
                        "expirationDateTime": .string(ISOTime.format(item.expirationDateTime)),
                    ]
                    object["deviceName"] = item.deviceName.map(JSONValue.string) ?? .null
                    object["platform"] = item.platform.map(JSONValue.string) ?? .null
                    object["targetHostName"] = item.targetHostName.map(JSONValue.string) ?? .null
                    object["createdDateTime"] = item.createdDateTime.map { .string(ISOTime.format($0)) } ?? .null
                    object["lastSeenDateTime"] = item.lastSeenDateTime.map { .string(ISOTime.format($0)) } ?? .null
                    if item.isWebhook { object["hasSecret"] = .bool(item.hasSecret ?? false) }
                    print(JSONValue.object(object).jsonText)
                }
                return
            }
            let now = Date()
            let devices = all.filter(\.isDevice), apps = all.filter { !$0.isDevice && !$0.isWebhook }, hooks = all.filter(\.isWebhook)
            let names = Dictionary(devices.map { ($0.deviceId, $0.deviceName ?? "-") }, uniquingKeysWith: { first, _ in first })
            say("devices")
            if devices.isEmpty { say("  none") }
            for item in devices {
                let seen = item.lastSeenDateTime.map { "seen " + ago($0, now: now) } ?? "never seen"
                let this = item.userNotificationSubscriptionId == mine ? "  (this device)" : ""
                say("  \(item.userNotificationSubscriptionId.prefix(8))  \(item.deviceName ?? "-")  \(item.platform ?? "-")  \(seen)\(this)")
            }
            say("app subscriptions")
            if apps.isEmpty { say("  none (notty subscribe --app HOSTNAME makes one)") }
            for item in apps {
                let created = item.createdDateTime.map { "created " + ago($0, now: now) } ?? ""
                let by = names[item.deviceId].map { "  from \($0)" } ?? ""
                say("  \(item.userNotificationSubscriptionId.prefix(8))  \(item.targetHostName ?? "-")  \(created)\(by)")
            }
            say("webhooks")
            if hooks.isEmpty { say("  none (notty subscribe --app HOSTNAME --webhook makes one)") }
            for item in hooks {
                let created = item.createdDateTime.map { "created " + ago($0, now: now) } ?? ""
                let secret = item.hasSecret == true ? "  with a secret" : ""
                say("  \(item.userNotificationSubscriptionId.prefix(8))  \(item.targetHostName ?? "-")  \(created)\(secret)")
            }
            // What the service's per-user limits count (PROTOCOL.md §15).
            let signedIn = Set(devices.filter { $0.platform != "ical" }.map(\.deviceId)).count
            let calendars = devices.filter { $0.platform == "ical" }.count
            say(
                "held: \(signedIn) of 100 devices and browsers, \(apps.count + hooks.count) of 100 app subscriptions and hooks, \(calendars) of 10 calendar feeds"
            )
        }
    }

    private func ago(_ date: Date, now: Date) -> String { TimeText.relative(date, now: now) }
}

struct DeviceRevoke: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "revoke",
        abstract: "Revoke a device (it is signed out at once), an app subscription or a webhook.")

    @Argument(help: "An id from notty devices, or a unique prefix of at least 6 characters.") var id: String

    func validate() throws {
        guard id.count >= 6 else { throw ArgumentParser.ValidationError("give at least 6 characters of the id (notty devices lists them)") }
    }

    func run() async throws {
        try await reportingErrors {
            let (client, _, _) = try await Device().session()
            let all = try await client.subscriptions()
            let matches = all.filter { $0.userNotificationSubscriptionId.hasPrefix(id.lowercased()) }
            guard let target = matches.first else { throw CLIError("no device or app subscription \(id): notty devices lists them") }
            guard matches.count == 1 else { throw CLIError("\(id) matches \(matches.count) ids: give more characters") }
            try await client.revokeSubscription(id: target.userNotificationSubscriptionId)
            let short = target.userNotificationSubscriptionId.prefix(8)
            if target.isWebhook {
                say("revoked the webhook for \(target.targetHostName ?? "-") (\(short)): its URL answers 404")
            } else if target.platform == "ntfy" {
                say("revoked the ntfy topic \(target.deviceName ?? "-") (\(short)): its streams end and it answers 404")
            } else if target.platform == "ical" {
                say("revoked the \(target.deviceName ?? "calendar") (\(short)): its URL answers 404")
            } else if !target.isDevice {
                say("revoked the subscription for \(target.targetHostName ?? "-") (\(short)): app servers using it are refused")
            } else if target.userNotificationSubscriptionId == (await client.current.subscriptionId) {
                say("revoked this device (\(target.deviceName ?? "-"), \(short)): it is signed out; notty login signs it in again")
            } else {
                say("revoked device \(target.deviceName ?? "-") (\(short)): its tokens no longer work")
            }
        }
    }
}
