import ArgumentParser
import Foundation
import NottyCenter
import NottyCommandLine
import NottyCore
import NottySync

struct Publish: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "publish",
        abstract: "Publish a notification as an app server would (Graph contract).",
        discussion: """
            Gets an app token (client_credentials) and POSTs /beta/me/notifications with the \
            user's X-UNS-ID. NOTTY_SERVER, NOTTY_CLIENT_ID and NOTTY_CLIENT_SECRET stand in \
            for the flags. Prints the new notification's id.

            A busy service (503, or 429 with Retry-After) is asked again twice, after \
            Retry-After (at most 10 s) or 1 s, then 2 s: the publish keeps its \
            --app-notification-id, so one that did land is updated in place, never doubled.

              notty publish --server http://127.0.0.1:8787 --client-id ID --client-secret S \\
                --uns-id UNS --title "Build failed" --body "main: 3 tests failed" --priority high \\
                --action "http, Re-run, https://ci.example.com/api/runs/42/rerun, clear=true"

            --action takes ntfy's short form: view, LABEL, URL or http, LABEL, URL with \
            method=, headers.NAME=, body= and clear=true (at most 3). An http action is run by \
            the service when a device presses it (notty act); its URL, headers and body stay \
            on the service.
            """)

    @Option(help: "The service's base URL (or NOTTY_SERVER).") var server: String?
    @Option(name: .customLong("client-id"), help: "The app's client id (or NOTTY_CLIENT_ID).") var clientId: String?
    @Option(name: .customLong("client-secret"), help: "The app's client secret (or NOTTY_CLIENT_SECRET).") var clientSecret: String?
    @Option(name: .customLong("uns-id"), help: "The user's userNotificationSubscriptionId (from notty subscribe).") var unsId: String
    @Option(help: "The title.") var title: String
    @Option(help: "The body text.") var body: String?
    @Option(help: "Raw content for the client.") var raw: String?
    @Option(name: .customLong("app-notification-id"), help: "Your id for it; publishing it again updates it in place (default: a new UUID).")
    var appNotificationId: String?
    @Option(help: "A group name.") var group: String?
    @Option(help: ArgumentHelp("A link (http or https) the notification is about: what o, notty open and a popup's click open.", valueName: "url"))
    var url: String?
    @Option(help: "none, low or high (default high).") var priority: String?
    @Option(help: ArgumentHelp("Lifetime: 90s, 15m, 4h, 7d (default: the service's).", valueName: "duration")) var expires: DurationArgument?
    @Option(
        name: .customLong("action"),
        help: ArgumentHelp(
            "An action, in ntfy's short form (repeatable, at most 3): \"http, Silence 1h, https://…, method=POST, clear=true\".", valueName: "action")
    ) var actions: [String] = []

    func validate() throws {
        if let priority, Priority(spelling: priority) == nil { throw ArgumentParser.ValidationError("--priority must be none, low or high") }
        if let url, !LaunchURL.isValid(url) { throw ArgumentParser.ValidationError("--url must be an absolute http or https URL") }
        _ = try parsedActions()
    }

    func parsedActions() throws -> [NotificationAction] {
        var parsed: [NotificationAction] = []
        for text in actions {
            do {
                parsed += try NotificationAction.parse(header: text)
            } catch {
                throw ArgumentParser.ValidationError("--action: \(error.message)")
            }
        }
        if parsed.count > NotificationAction.maxPerNotification {
            throw ArgumentParser.ValidationError("--action: at most \(NotificationAction.maxPerNotification) actions")
        }
        return parsed
    }

    func run() async throws {
        try await reportingErrors {
            let env = ProcessInfo.processInfo.environment
            guard var base = server ?? env["NOTTY_SERVER"] else { throw CLIError("give --server URL (or set NOTTY_SERVER)") }
            if base.hasSuffix("/") { base.removeLast() }
            guard let clientId = clientId ?? env["NOTTY_CLIENT_ID"], let secret = clientSecret ?? env["NOTTY_CLIENT_SECRET"] else {
                throw CLIError(
                    "give --client-id and --client-secret (or set NOTTY_CLIENT_ID and NOTTY_CLIENT_SECRET); notty admin app add HOSTNAME prints them")
            }
            let tokenAnswer = try await Self.patiently {
                try await ServiceClient.postForm(
                    base + "/oauth2/v2.0/token",
                    [
                        "grant_type": "client_credentials", "client_id": clientId, "client_secret": secret,
                        "scope": "https://graph.microsoft.com/.default",
                    ])
            }
            guard tokenAnswer.status == 200, let token = try? NottyJSON.decoder.decode(TokenResponse.self, from: tokenAnswer.body) else {
                throw CLIError(
                    "the service refused the app credentials (\(tokenAnswer.status) \(tokenAnswer.errorText.code)): check --client-id and --client-secret"
                )
            }
            let request = PublishRequest(
                appNotificationId: appNotificationId ?? UUID().uuidString.lowercased(), groupName: group,
                priority: priority.flatMap { Priority(spelling: $0) },
                payload: NotificationPayload(rawContent: raw, visualContent: VisualContent(title: title, body: body)),
                expirationDateTime: expires.map { Date().addingTimeInterval(TimeInterval($0.seconds)) }, launchUrl: url,
                actions: try parsedActions().isEmpty ? nil : try parsedActions())
            let body = request.jsonBody()
            let answer = try await Self.patiently {
                try await ServiceClient.send(
                    .POST, base + "/beta/me/notifications",
                    headers: [("Authorization", "Bearer \(token.access_token)"), ("X-UNS-ID", unsId), ("Content-Type", "application/json")],
                    body: body)
            }
            guard answer.status == 201, let stored = try? NottyJSON.decoder.decode(UserNotification.self, from: answer.body) else {
                throw CLIError("the service refused the notification (\(answer.status) \(answer.errorText.code)): \(answer.errorText.message)")
            }
            say(stored.id)
        }
    }

    /// `send`, asked again (twice at most) while the service answers that it is busy: `503`
    /// (its storage did not answer; a write may still have landed) or `429`. It waits
    /// `Retry-After` when given (at most 10 s), else 1 s and then 2 s. Safe for a publish: the
    /// same app notification id updates in place.
    static func patiently(_ send: () async throws -> HTTPAnswer) async throws -> HTTPAnswer {
        var answer = try await send()
        for pause in [1, 2] where answer.status == 503 || answer.status == 429 {
            let asked = answer.headers.first(name: "Retry-After").flatMap { Int($0.trimmingCharacters(in: .whitespaces)) }
            try await Task.sleep(for: .seconds(min(max(asked ?? pause, 0), 10)))
            answer = try await send()
        }
        return answer
    }
}
