import ArgumentParser
import Foundation
import NottyCore
import NottyStore
import NottySync

struct Login: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Sign this device in to a notty service.",
        discussion: """
            Stores the tokens in credentials.json (mode 0600), registers this device with the
            service and pulls your notification history into the local store.

              notty login http://127.0.0.1:8787 --user alice
              echo "$PASSWORD" | notty login https://notty.example.com --user alice --password-stdin
            """)

    @Argument(help: ArgumentHelp("The service's base URL.", valueName: "url")) var url: String
    @Option(help: "Your user name on the service.") var user: String
    @Flag(name: .customLong("password-stdin"), help: "Read the password from standard input instead of asking.") var passwordStdin = false
    @Option(help: "A name for this device (default: the host name).") var device: String?

    func validate() throws {
        guard let components = URLComponents(string: url), ["http", "https"].contains(components.scheme?.lowercased() ?? ""), components.host?.isEmpty == false else {
            throw ArgumentParser.ValidationError("the URL must look like http://127.0.0.1:8787 or https://notty.example.com")
        }
    }

    func run() async throws {
        try await reportingErrors {
            let server = url.hasSuffix("/") ? String(url.dropLast()) : url
            let password = passwordStdin ? (readLine(strippingNewline: true) ?? "") : readPassword(prompt: "Password for \(user): ")
            guard !password.isEmpty else { throw CLIError("no password given") }
            let local = Device()
            var credentials = try await ServiceClient.signIn(server: server, userName: user, password: password)
            let client = ServiceClient(file: local.credentialsFile, credentials: credentials)
            let me = try await client.send(.GET, "/v1/me")
            if me.status == 200, let info = try? NottyJSON.decoder.decode(Me.self, from: me.body) { credentials.userId = info.id }
            let deviceName = device ?? ProcessInfo.processInfo.hostName
            let body = JSONValue.object(["deviceName": .string(deviceName), "platform": .string("websocket")]).jsonText
            let answer = try await client.send(.POST, "/v1/me/subscriptions", json: Data(body.utf8))
            guard answer.status == 201, let subscription = try? NottyJSON.decoder.decode(SubscriptionInfo.self, from: answer.body) else {
                throw CLIError("the service did not register this device (\(answer.status) \(answer.errorText.code))")
            }
            try await client.update { saved in
                saved = credentials
                saved.deviceName = deviceName
                saved.deviceId = subscription.deviceId
                saved.subscriptionId = subscription.userNotificationSubscriptionId
            }
            let store = try local.store()
            try store.bind(account: credentials.account)
            let engine = SyncEngine(store: store, transport: HTTPTransport(client: client))
            do {
                try await engine.sync()
            } catch {
                warn("signed in, but the first sync failed: \(error) (notty sync tries again)")
            }
            let counts = try store.counts()
            print("signed in as \(user) at \(server) (device \(deviceName)): \(counts.all) notification(s), \(counts.unread) unread")
        }
    }
}

struct Logout: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Sign this device out.",
        discussion: "Revokes the tokens and this device's registration, and forgets them. The local store stays (to sign in again quickly) unless --purge is given. Changes still queued are lost only with --purge.")

    @Flag(help: "Also delete the local store (notifications and queued changes).") var purge = false

    func run() async throws {
        try await reportingErrors {
            let local = Device()
            guard let credentials = try local.credentialsFile.load() else {
                if purge { try removeStore(local) }
                print("not signed in")
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
                    _ = try await ServiceClient.send(
                        .POST, credentials.server + "/oauth2/v2.0/revoke", headers: [("Content-Type", "application/x-www-form-urlencoded")],
                        body: Data(FormEncoding.encode(["token": token]).utf8))
                }
            } catch {
                warn("could not tell the service (\(error)); forgetting the tokens here anyway")
            }
            try local.credentialsFile.remove()
            if purge { try removeStore(local) }
            print("signed out of \(credentials.account)\(purge ? "; local store deleted" : "")")
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
        abstract: "Print a userNotificationSubscriptionId for an app server.",
        discussion: """
            Give the printed id to the app server: it publishes to you with it in the X-UNS-ID
            header. The app must be registered on the service (notty admin app add HOSTNAME).

              notty subscribe --app ci.example.com
            """)

    @Option(help: ArgumentHelp("The app's host name (its targetHostName).", valueName: "hostname")) var app: String

    func run() async throws {
        try await reportingErrors {
            let (client, _, _) = try Device().session()
            let deviceName = await client.current.deviceName ?? ProcessInfo.processInfo.hostName
            let body = JSONValue.object(["targetHostName": .string(app), "deviceName": .string(deviceName), "platform": .string("websocket")]).jsonText
            let answer = try await client.send(.POST, "/v1/me/subscriptions", json: Data(body.utf8))
            guard answer.status == 201, let subscription = try? NottyJSON.decoder.decode(SubscriptionInfo.self, from: answer.body) else {
                throw CLIError("the service refused: \(answer.status) \(answer.errorText.code): \(answer.errorText.message)")
            }
            print(subscription.userNotificationSubscriptionId)
        }
    }
}
