import Crypto
import Foundation
import NottyCore
import NottyRecords
import NottySecrets
import NottyWebhooks

// MARK: - Webhooks (PROTOCOL.md §7.2)

extension Publishing {
    /// Answers `POST /v1/hooks/{token}`: checks the URL, the secret and the app's rate, parses
    /// the body with the kind that recognises it (``Webhooks``), and publishes what it becomes
    /// in one transaction. Returns the ids published (created or updated), in order.
    public func webhook(token: String, _ request: WebhookRequest) async throws -> [String] {
        let hook = try await hook(token: token)
        let kind = Webhooks.kind(of: request)
        try Self.check(kind.credential(request), secret: hook.secret, body: request.body, kind: kind.name)
        let parsed: [WebhookNotification]
        do {
            parsed = try kind.notifications(request)
        } catch {
            throw ServiceError.badRequest("\(kind.name) webhook: \(error.message)")
        }
        return try await publish(parsed.map { Self.withSilence($0, alertmanager: hook.alertmanagerURL) }, as: hook).map(\.id)
    }

    /// A firing alert from a webhook made with `--alertmanager` gets "Silence 1h" (PROTOCOL.md §12),
    /// after the sender's own actions (within the 3).
    static func withSilence(_ item: WebhookNotification, alertmanager: String?) -> WebhookNotification {
        guard let alertmanager, let labels = item.labels, !labels.isEmpty, !item.resolved,
            (item.actions?.count ?? 0) < NotificationAction.maxPerNotification
        else { return item }
        var item = item
        item.actions = (item.actions ?? []) + [NotificationAction.silence(alertmanager: alertmanager, labels: labels, hours: 1)]
        return item
    }

    /// The hook of a door that cannot send a secret (Gotify's API, the incident doors): `unknown`
    /// when no hook has this token, `secret` when its hook has a secret.
    package func hookWithoutSecret(token: String, unknown: ServiceError, secret: ServiceError) async throws -> Hook {
        let hook: Hook
        do {
            hook = try await self.hook(token: token)
        } catch let error as ServiceError where error.kind == .notFound || error.kind == .forbidden {
            throw unknown
        }
        if hook.subscription.webhookSecret != nil { throw secret }
        return hook
    }

    /// The webhook whose URL token is `token`, and its app: `404` when there is none, it was
    /// revoked, or the token is an ntfy topic (a device's, PROTOCOL.md §8.2: `403`).
    package func hook(token: String) async throws -> Hook {
        core.forgetCredentialsIfRevokedElsewhere()
        let hash = Secrets.tokenHash(token)
        let opened = try await inbox.openedHook(hash: hash)
        guard let opened, !opened.subscription.revoked else {
            throw ServiceError.notFound("no such webhook: it was revoked, or the URL is mistyped")
        }
        let subscription = opened.subscription
        guard let host = subscription.targetHostName else {
            throw ServiceError.forbidden(
                "this is a topic to subscribe to, not to publish to: publish with a webhook's token (notty subscribe --app HOST --webhook)")
        }
        guard let app = try await app(hostName: host) else { throw ServiceError.notFound("no such webhook: its app was removed") }
        return Hook(
            subscription: subscription, app: app, secret: opened.secret, alertmanagerURL: opened.alertmanagerURL, ownerDisabled: opened.ownerDisabled)
    }

    /// A webhook and the app it publishes as, with its secret and Alertmanager URL opened.
    package struct Hook: Sendable {
        package let subscription: SubscriptionRecord
        package let app: AppRecord
        let secret: OpenedHook.Secret
        let alertmanagerURL: String?
        /// Its user is disabled: it still publishes (their notifications are kept, PROTOCOL.md
        /// §15), but reads and changes nothing through an incident door (§16).
        package var ownerDisabled = false

        /// This hook publishing into `feed`: a team's its user owns (an Opsgenie alert's
        /// `responders`, PROTOCOL.md §16.2).
        package func publishing(toFeed feed: String) -> Hook {
            var subscription = subscription
            subscription.userId = feed
            return Hook(subscription: subscription, app: app, secret: secret, alertmanagerURL: alertmanagerURL, ownerDisabled: ownerDisabled)
        }
    }

    /// Publishes what a request to a hook became, in one transaction, within the app's rate
    /// and the service's limits (every notification is checked before anything is written: one
    /// bad alert refuses the request). Returns the notifications published, in order.
    package func publish(_ parsed: [WebhookNotification], as hook: Hook, merge: PublishInput.Merge? = nil) async throws -> [UserNotification] {
        guard !parsed.isEmpty else { return [] }
        let now = clock.nowMillis()
        try takeRate(of: hook.app, count: parsed.count, now: now)
        let team = try await teamName(ofFeed: hook.subscription.userId)
        let inputs = try parsed.enumerated().map { index, item in
            var input = try publishInput(
                item, index: index, count: parsed.count, userId: hook.subscription.userId, hostName: hook.app.hostName, now: now)
            input.team = team
            input.merge = merge
            return input
        }
        let published = try await db { try await storage.publish(batch: inputs) }
        metrics.publishes.increment(by: Int64(published.count))
        return published
    }

    /// The registered app `hostName`, through the credentials cache (emptied when an app is removed).
    private func app(hostName: String) async throws -> AppRecord? {
        try await core.apps.value("host:" + hostName.lowercased()) { try await db { try await storage.app(hostName: hostName) } }
    }

    /// Whether a request proves it knows the webhook's secret, in constant time (`401` if not).
    /// Checks a hook's secret, when it has one; one that could not be opened is matched by no
    /// request (a random secret stands for it).
    static func check(_ credential: WebhookCredential, secret: OpenedHook.Secret, body: Data, kind: String) throws {
        switch secret {
        case .none: return
        case .clear(let clear): try check(credential, secret: clear, body: body, kind: kind)
        case .unopenable: try check(credential, secret: Secrets.newToken(), body: body, kind: kind)
        }
    }

    static func check(_ credential: WebhookCredential, secret: String, body: Data, kind: String) throws {
        switch credential {
        case .hmacSHA256(let given):
            let expected = Hex.string(HMAC<SHA256>.authenticationCode(for: body, using: SymmetricKey(data: Data(secret.utf8))))
            guard let given, Secrets.constantTimeEqual(given, expected) else {
                throw ServiceError.unauthenticated("\(kind) webhook: X-Hub-Signature-256 does not match this webhook's secret")
            }
        case .token(let given):
            // Hashed first: equal-length strings to compare, whatever was sent.
            guard let given, Secrets.constantTimeEqual(Secrets.tokenHash(given), Secrets.tokenHash(secret)) else {
                throw ServiceError.unauthenticated(
                    kind == "gitlab"
                        ? "gitlab webhook: X-Gitlab-Token is not this webhook's secret"
                        : "\(kind) webhook: this webhook has a secret: send it as Authorization: Bearer SECRET")
            }
        }
    }

    /// A parsed notification as a publish, within the service's limits (`400` when not).
    package func publishInput(_ item: WebhookNotification, index: Int, count: Int, userId: String, hostName: String, now: Date) throws -> PublishInput
    {
        let what = count > 1 ? "notification \(index + 1) of \(count): " : ""
        let limits = config.limits
        let id = item.appNotificationId ?? "hook-\(Identifiers.timeOrdered())"
        guard !id.isEmpty, id.unicodeScalars.count <= limits.appNotificationId else {
            throw ServiceError.badRequest("\(what)the id must be 1 to \(limits.appNotificationId) characters")
        }
        if let group = item.groupName, group.unicodeScalars.count > limits.groupName {
            throw ServiceError.badRequest("\(what)the group is longer than \(limits.groupName) characters")
        }
        for text in [id, item.groupName, item.title, item.body, item.launchUrl].compactMap({ $0 }) where text.containsNUL {
            throw ServiceError.badRequest("\(what)the text contains the character U+0000 (NUL): remove it")
        }
        let title =
            item.title.unicodeScalars.count > limits.title
            ? String(String.UnicodeScalarView(item.title.unicodeScalars.prefix(limits.title))) : item.title
        let requested: Date? =
            switch item.expiration {
            case .at(let date): date
            case .after(let seconds): now + TimeInterval(seconds)
            case nil: nil
            }
        let expiration: Date
        do {
            expiration = try self.expiration(requested, now: now)
        } catch let error as ServiceError {
            throw ServiceError.badRequest(what + error.message.replacingOccurrences(of: "expirationDateTime", with: "expires"))
        }
        let request = PublishRequest(
            appNotificationId: id, groupName: item.groupName, priority: item.priority,
            payload: NotificationPayload(rawContent: item.rawContent, visualContent: VisualContent(title: title, body: item.body)),
            launchUrl: item.launchUrl,
            actions: item.actions)
        return PublishInput(
            userId: userId, hostName: hostName, request: request, expiration: expiration, now: now, resolved: item.resolved,
            secrets: secrets)
    }
}
