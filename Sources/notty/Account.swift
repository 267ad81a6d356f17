import ArgumentParser
import Foundation
import NottyCenter
import NottyCommandLine
import NottyCore
import NottyStore
import NottySync

struct Login: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "login",
        abstract: "Sign this device in to a notty service.",
        discussion: """
            Stores the tokens in credentials.json (mode 0600), registers this device with the \
            service and pulls your notification history into the local store.

              notty login http://127.0.0.1:8787 --user alice
              echo "$PASSWORD" | notty login https://notty.example.com --user alice --password-stdin
            """)

    @Argument(help: ArgumentHelp("The service's base URL.", valueName: "url")) var url: String
    @Option(help: "Your user name on the service.") var user: String
    @Flag(name: .customLong("password-stdin"), help: "Read the password from standard input instead of asking.") var passwordStdin = false
    @Option(help: "A name for this device (default: the host name).") var device: String?

    func validate() throws {
        guard HTTPURL(url) != nil else {
            throw ArgumentParser.ValidationError("the URL must look like http://127.0.0.1:8787 or https://notty.example.com")
        }
    }

    func run() async throws {
        try await reportingErrors {
            let server = url.hasSuffix("/") ? String(url.dropLast()) : url
            let password = passwordStdin ? (readLine(strippingNewline: true) ?? "") : readPassword(prompt: "Password for \(user): ")
            guard !password.isEmpty else { throw CLIError("no password given") }
            let deviceName = device ?? ProcessInfo.processInfo.hostName
            let store = try await signInDevice(Device(), server: server, userName: user, password: password, deviceName: deviceName)
            let counts = try await store.perform { try $0.counts() }
            say("signed in as \(user) at \(server) (device \(deviceName)): \(counts.all) notification(s), \(counts.unread) unread")
        }
    }
}

struct Logout: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "logout",
        abstract: "Sign this device out.",
        discussion:
            "Revokes the tokens and this device's registration, and forgets them. The local store stays (to sign in again quickly) unless --purge is given. Changes still queued are lost only with --purge."
    )

    @Flag(help: "Also delete the local store (notifications and queued changes).") var purge = false

    func run() async throws {
        try await reportingErrors {
            let local = Device()
            guard let credentials = try local.credentialsFile.load() else {
                if purge { try removeStore(local) }
                say("not signed in")
                return
            }
            let client = ServiceClient(file: local.credentialsFile, credentials: credentials, timeout: .seconds(5))
            do {
                if let subscription = credentials.subscriptionId {
                    _ = try await client.send(.DELETE, "/v1/me/subscriptions/\(subscription)")
                }
                let current = await client.current
                let tokens = [current.accessToken, current.refreshToken].compactMap { $0 }
                for token in tokens {
                    _ = try await ServiceClient.postForm(credentials.server + "/oauth2/v2.0/revoke", ["token": token])
                }
            } catch {
                warn("could not tell the service (\(error)); forgetting the tokens here anyway")
            }
            try local.credentialsFile.remove()
            if purge { try removeStore(local) }
            say("signed out of \(credentials.account)\(purge ? "; local store deleted" : "")")
        }
    }

    private func removeStore(_ local: Device) throws {
        for suffix in ["", "-wal", "-shm"] where FileManager.default.fileExists(atPath: local.paths.store + suffix) {
            try FileManager.default.removeItem(atPath: local.paths.store + suffix)
        }
    }
}

struct Subscribe: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "subscribe",
        abstract: "Print a userNotificationSubscriptionId for an app server, a webhook URL, or an ntfy topic for a phone.",
        discussion: """
            Give the printed id to the app server: it publishes to you with it in the \
            X-UNS-ID header. The app must be registered on the service (notty admin app \
            add HOSTNAME).

            --webhook prints a URL instead, for tools that cannot sign in (Alertmanager, \
            Grafana, GitHub, GitLab, curl): whatever is POSTed to it becomes notifications \
            from the app (see docs/GUIDE.md, "Webhooks"). It is shown this once; notty devices \
            lists it and notty devices revoke ID kills it. With --secret, GitHub must sign \
            with it, GitLab send it as its secret token, and others as Authorization: \
            Bearer SECRET.

            With --alertmanager URL (Alertmanager's own address), each firing alert carries a \
            "Silence 1h" action: pressed on any device (notty act, the center, a popup, the \
            phone), the service creates a silence for the alert's labels through \
            Alertmanager's API and, when it is made, dismisses the notification everywhere.

            The same URL is an ntfy topic and a Gotify app token for tools that speak \
            those (Apprise's ntfy:// and gotify://, Home Assistant, Uptime Kuma, ...).

            --ntfy prints an ntfy topic URL that follows your whole inbox, for the ntfy \
            phone app (add the server part as a server, subscribe to the topic): what \
            arrives in Unread pops up on the phone, and goes away there when it is \
            read, dismissed or deleted on any device. It is listed by notty devices as \
            platform ntfy; revoking it ends its streams at once.

              notty subscribe --app ci.example.com
              notty subscribe --app alerts.example.com --webhook
              notty subscribe --app alerts.example.com --webhook --alertmanager http://alertmanager:9093
              curl -d 'Backup failed' "$(notty subscribe --app backup.example.com --webhook)"
              notty subscribe --ntfy --name phone
              notty subscribe --app alerts.example.com --webhook --team ops

            --team NAME (the team's owners): the app publishes to the team instead: each \
            notification is the whole team's, handled once by whichever member takes it \
            (see notty team).
            """)

    @Option(help: ArgumentHelp("The app's host name (its targetHostName).", valueName: "hostname")) var app: String?
    @Flag(help: "Make a webhook URL for the app instead of a subscription id.") var webhook = false
    @Option(help: ArgumentHelp("A secret the webhook's sender must prove (with --webhook).", valueName: "secret")) var secret: String?
    @Option(help: ArgumentHelp("With --webhook: Alertmanager's address; firing alerts get a \"Silence 1h\" action.", valueName: "url"))
    var alertmanager: String?
    @Flag(help: "Make an ntfy topic URL that follows your inbox (for the ntfy phone app).") var ntfy = false
    @Option(help: ArgumentHelp("The topic's name in notty devices (with --ntfy; default: ntfy).", valueName: "name")) var name: String?
    @Option(help: ArgumentHelp("With --app: publish to this team of yours (owners), not to you alone.", valueName: "team")) var team: String?

    func validate() throws {
        if ntfy && (app != nil || webhook || secret != nil) {
            throw ArgumentParser.ValidationError("--ntfy follows your whole inbox: leave out --app, --webhook and --secret")
        }
        if !ntfy && app == nil { throw ArgumentParser.ValidationError("say which app with --app HOSTNAME, or make a phone's topic with --ntfy") }
        if name != nil && !ntfy { throw ArgumentParser.ValidationError("--name goes with --ntfy") }
        if team != nil && app == nil { throw ArgumentParser.ValidationError("--team goes with --app HOSTNAME") }
        if let team, let problem = Team.nameProblem(team) { throw ArgumentParser.ValidationError(problem) }
        if let name, name.isEmpty || name.count > 256 { throw ArgumentParser.ValidationError("--name must be 1…256 characters") }
        if secret != nil && !webhook { throw ArgumentParser.ValidationError("--secret goes with --webhook") }
        if let secret, secret.isEmpty || secret.count > 256 { throw ArgumentParser.ValidationError("--secret must be 1…256 characters") }
        if alertmanager != nil && !webhook { throw ArgumentParser.ValidationError("--alertmanager goes with --webhook") }
        if let alertmanager, !LaunchURL.isValid(alertmanager) {
            throw ArgumentParser.ValidationError("--alertmanager must be Alertmanager's http(s) address, e.g. http://alertmanager:9093")
        }
    }

    func run() async throws {
        try await reportingErrors {
            let (client, _, _) = try await Device().session()
            if ntfy {
                let topic = try await client.subscribe(deviceName: name ?? "ntfy", platform: "ntfy")
                guard let url = topic.topicUrl else {
                    throw CLIError("the service answered without a topic URL: is it older than notty's ntfy topics?")
                }
                say(url)
                return
            }
            let deviceName = await client.current.deviceName ?? ProcessInfo.processInfo.hostName
            let subscription = try await client.subscribe(
                deviceName: deviceName, targetHostName: app, platform: webhook ? "webhook" : "websocket", secret: secret,
                alertmanager: alertmanager, team: team)
            if webhook {
                guard let url = subscription.webhookUrl else {
                    throw CLIError("the service answered without a webhook URL: is it older than notty's webhooks?")
                }
                say(url)
            } else {
                say(subscription.userNotificationSubscriptionId)
            }
        }
    }
}

/// Signs `device` in (password grant), registers it, saves its credentials, ties its store to
/// the account and pulls the history (a failed first pull is only a warning: `notty sync`
/// tries again). What `notty login` and `notty demo` share.
func signInDevice(_ device: Device, server: String, userName: String, password: String, deviceName: String) async throws -> LocalStore {
    var credentials = try await ServiceClient.signIn(server: server, userName: userName, password: password)
    let client = ServiceClient(file: device.credentialsFile, credentials: credentials)
    let me = try await client.send(.GET, "/v1/me")
    if me.status == 200, let info = try? NottyJSON.decoder.decode(Me.self, from: me.body) { credentials.userId = info.id }
    let subscription = try await client.subscribe(deviceName: deviceName)
    credentials.deviceName = deviceName
    credentials.deviceId = subscription.deviceId
    credentials.subscriptionId = subscription.userNotificationSubscriptionId
    try await client.update { $0 = credentials }
    let store = try await device.store()
    let account = credentials.account
    try await store.perform { try $0.bind(account: account) }
    do {
        try await SyncEngine(store: store, transport: HTTPTransport(client: client)).sync()
    } catch {
        warn("signed in, but the first sync failed: \(error) (notty sync tries again)")
    }
    return store
}

struct PasswordCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "password",
        abstract: "Change your password on the service.",
        discussion: """
            Asks your current password and the new one (at least 8 characters). A wrong current \
            password counts toward the lockout, as a failed sign-in does. With \
            --sign-out-others every other device, browser and calendar feed of yours is signed \
            out (what to do after a leak); this device stays signed in.

              notty password
              printf '%s\\n%s\\n' "$OLD" "$NEW" | notty password --password-stdin --sign-out-others
            """)

    @Flag(name: .customLong("password-stdin"), help: "Read the current password, then the new one, a line each, from standard input.")
    var passwordStdin = false
    @Flag(name: .customLong("sign-out-others"), help: "Also sign out every other device, browser and calendar feed of yours.")
    var signOutOthers = false

    func run() async throws {
        try await reportingErrors {
            let current: String, new: String
            if passwordStdin {
                current = readLine(strippingNewline: true) ?? ""
                new = readLine(strippingNewline: true) ?? ""
            } else {
                current = readPassword(prompt: "Current password: ")
                new = readPassword(prompt: "New password: ")
                guard readPassword(prompt: "New password again: ") == new else { throw CLIError("the new passwords differ: nothing was changed") }
            }
            guard !current.isEmpty, !new.isEmpty else {
                throw CLIError("give the current password and the new one (with --password-stdin: a line each)")
            }
            let (client, _, _) = try await Device().session()
            let body = JSONValue.object(["current": .string(current), "new": .string(new), "signOutOthers": .bool(signOutOthers)])
            let answer = try await client.send(.POST, "/v1/me/password", json: Data(body.jsonText.utf8))
            guard answer.status == 204 else {
                let error = answer.errorText
                throw SyncError.refused(status: answer.status, code: error.code, message: error.message)
            }
            say("password changed" + (signOutOthers ? "; every other device of yours is signed out" : ""))
        }
    }
}
