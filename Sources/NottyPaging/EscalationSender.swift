import Foundation
import NottyCore
import NottyPOSIX
import NottyRecords
import NottySecrets
import NottyService

/// How one delivery reaches its target (PROTOCOL.md §11): ntfy's JSON publish, its clear and delete;
/// a webhook's JSON event; the administrator's command with the notification in `NOTTY_*`
/// variables. What is sent is built by pure functions (tested on their own); sending is the
/// outbound client's and the shell's.
public struct EscalationSender: Sendable {
    /// Why a delivery did not go through, in words `notty escalate --list` shows.
    public struct Failure: Error, Sendable, Equatable {
        public var message: String
        /// Whether trying again later may help.
        public var retryable: Bool
    }

    let outbound: (any OutboundHTTP)?
    let commands: [String: String]
    /// Opens targets as stored (sealed: their credentials are).
    let secrets: SecretBox
    /// How long a command may run before it is stopped (and counts as failed).
    let commandTimeout: Duration

    public init(
        outbound: (any OutboundHTTP)?, commands: [String: String], commandTimeout: Duration = .seconds(30),
        secrets: SecretBox = .ephemeral()
    ) {
        self.outbound = outbound
        self.secrets = secrets
        self.commands = commands
        self.commandTimeout = commandTimeout
    }

    /// Sends `delivery`; nil when the target took it.
    public func send(_ delivery: EscalationDelivery) async -> Failure? {
        let target: EscalationTarget
        do {
            switch delivery.page {
            case .unreachable(let reason): return Failure(message: reason, retryable: false)
            case .target(let stored): target = try EscalationTarget(parsing: try await secrets.openFetching(stored: stored))
            }
        } catch let error as SecretBox.OpenError {
            return Failure(message: "the target cannot be used: \(error)", retryable: false)
        } catch {
            return Failure(message: (error as? ValidationError)?.message ?? "\(error)", retryable: false)
        }
        switch target {
        case .ntfy(let url):
            guard let request = Self.ntfyRequest(url: url, delivery: delivery) else {
                return Failure(message: "not an ntfy topic URL: \(EscalationTarget.withoutCredentials(url))", retryable: false)
            }
            return await http(request)
        case .webhook(let url):
            return await http(Self.webhookRequest(url: url, delivery: delivery))
        case .command(let name):
            guard let line = commands[name] else {
                return Failure(message: "the service has no command named \(name) any more ([escalation.commands] in server.toml)", retryable: false)
            }
            let outcome = await ShellCommand.run(line, variables: Self.commandVariables(delivery), timeout: commandTimeout)
            if outcome.succeeded { return nil }
            if outcome.timedOut { return Failure(message: "ran longer than \(commandTimeout): stopped", retryable: true) }
            return Failure(message: "the command " + outcome.words, retryable: true)
        }
    }

    private func http(_ request: OutboundRequest) async -> Failure? {
        guard let outbound else { return Failure(message: "this service makes no outbound requests", retryable: false) }
        do {
            let response = try await outbound.send(request)
            if response.succeeded { return nil }
            return Failure(message: "answered \(response.status)", retryable: response.isWorthRetrying)
        } catch {
            return Failure(message: error.description, retryable: error.isWorthRetrying)
        }
    }

    // MARK: - What is sent

    /// An ntfy topic URL taken apart: the server's root (where JSON is published), the topic,
    /// and the credentials of its `user:password@` (Basic) or `token@` (Bearer).
    struct NtfyTopic: Equatable {
        var root: String
        var topicURL: String
        var topic: String
        var query: String
        var authorization: String?
    }

    static func ntfyTopic(_ url: String) -> NtfyTopic? {
        guard var parts = URLComponents(string: url), let host = parts.host, !host.isEmpty else { return nil }
        var authorization: String?
        if let user = parts.percentEncodedUser.flatMap({ $0.removingPercentEncoding }), !user.isEmpty {
            if let password = parts.percentEncodedPassword.flatMap({ $0.removingPercentEncoding }) {
                authorization = "Basic " + Data("\(user):\(password)".utf8).base64EncodedString()
            } else {
                authorization = "Bearer " + user
            }
        }
        parts.user = nil
        parts.password = nil
        let query = parts.percentEncodedQuery.map { "?" + $0 } ?? ""
        parts.query = nil
        parts.fragment = nil
        var path = parts.percentEncodedPath
        while path.hasSuffix("/") { path.removeLast() }
        guard let slash = path.lastIndex(of: "/"), path.index(after: slash) < path.endIndex,
            let topic = String(path[path.index(after: slash)...]).removingPercentEncoding
        else { return nil }
        parts.percentEncodedPath = String(path[..<slash])
        guard let root = parts.string else { return nil }
        return NtfyTopic(
            root: root + "/", topicURL: root + "/" + String(path[path.index(after: slash)...]), topic: topic, query: query,
            authorization: authorization)
    }

    /// ntfy: the JSON publish (`sequence_id` = the notification's id, priority 5) for
    /// `escalated`, `PUT …/<id>/clear` for `handled`, `DELETE …/<id>` for `deleted`.
    static func ntfyRequest(url: String, delivery: EscalationDelivery) -> OutboundRequest? {
        guard let topic = ntfyTopic(url) else { return nil }
        var headers: [OutboundHeader] = []
        if let authorization = topic.authorization { headers.append(OutboundHeader("Authorization", authorization)) }
        let n = delivery.notification
        let sequence = n.id.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed.subtracting(CharacterSet(charactersIn: "/"))) ?? n.id
        switch delivery.event {
        case .escalated, .test:
            var body: [String: JSONValue] = ["topic": .string(topic.topic)]
            let text = n.payload.visualContent?.body ?? n.payload.rawContent ?? ""
            body["title"] = .string(n.displayTitle)
            body["message"] = .string(text.isEmpty ? n.displayTitle : text)
            if delivery.event == .escalated {
                body["priority"] = .number(5)
                body["sequence_id"] = .string(n.id)
                body["tags"] = .array([.string("rotating_light")])
            } else {
                body["priority"] = .number(3)
            }
            if let launchUrl = n.launchUrl { body["click"] = .string(launchUrl) }
            headers.append(OutboundHeader("Content-Type", "application/json"))
            return OutboundRequest(method: "POST", url: topic.root + topic.query, headers: headers, body: Data(JSONValue.object(body).jsonText.utf8))
        case .handled:
            return OutboundRequest(method: "PUT", url: topic.topicURL + "/" + sequence + "/clear" + topic.query, headers: headers)
        case .deleted:
            return OutboundRequest(method: "DELETE", url: topic.topicURL + "/" + sequence + topic.query, headers: headers)
        }
    }

    /// A webhook: `POST` of `{"event", "rule", "notification", "handledBy"}`.
    static func webhookRequest(url: String, delivery: EscalationDelivery) -> OutboundRequest {
        struct Event: Encodable {
            var event: String
            var rule: String
            var notification: UserNotification
            var handledBy: HandledBy?
            /// The member a team's policy paged (PROTOCOL.md §13.2).
            var paged: String?
        }
        let body =
            (try? NottyJSON.encoder.encode(
                Event(
                    event: delivery.event.rawValue, rule: delivery.ruleName, notification: delivery.notification,
                    handledBy: delivery.handledBy, paged: delivery.recipient))) ?? Data()
        return OutboundRequest(method: "POST", url: url, headers: [OutboundHeader("Content-Type", "application/json")], body: body)
    }

    /// A command's variables: the notification's `NOTTY_*`, `NOTTY_EVENT`, `NOTTY_RULE`, and
    /// with `handled`, `NOTTY_HANDLED_BY` (the device) and `NOTTY_STATE`; for a team's policy,
    /// `NOTTY_PAGED` (the member paged) and `NOTTY_HANDLED_BY_USER` (the member who handled it).
    static func commandVariables(_ delivery: EscalationDelivery) -> [String: String] {
        var variables = delivery.notification.commandVariables
        variables["NOTTY_EVENT"] = delivery.event.rawValue
        variables["NOTTY_RULE"] = delivery.ruleName
        if let handledBy = delivery.handledBy {
            variables["NOTTY_STATE"] = handledBy.state
            variables["NOTTY_HANDLED_BY"] = handledBy.device ?? ""
            if let user = handledBy.user { variables["NOTTY_HANDLED_BY_USER"] = user }
        }
        if let paged = delivery.recipient { variables["NOTTY_PAGED"] = paged }
        return variables
    }
}
