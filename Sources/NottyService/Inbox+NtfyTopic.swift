import Crypto
import Foundation
import NottyCore
import NottyRecords
import NottySecrets
import NottyWebhooks
import Synchronization

// MARK: - Following the inbox as an ntfy topic (PROTOCOL.md §8.2)

extension Inbox {
    /// The ntfy topic `token` (a read-only device of platform `ntfy`): `404` when there is
    /// none or it was revoked, `403` when it is a webhook's token (which publishes).
    package func topic(token: String) async throws -> SubscriptionRecord {
        core.forgetCredentialsIfRevokedElsewhere()
        let hash = Secrets.tokenHash(token)
        let opened = try await openedHook(hash: hash)
        guard let subscription = opened?.subscription, !subscription.revoked, opened?.ownerDisabled != true else {
            throw ServiceError.notFound("no such topic: it was revoked, or the URL is mistyped")
        }
        guard subscription.platform == "ntfy", subscription.targetHostName == nil else {
            throw ServiceError.forbidden("this is a webhook's token, which publishes: subscribe to a topic made by notty subscribe --ntfy")
        }
        // The topic's name at the ntfy upstream, learnt from its token (only hashes are stored).
        if config.ntfyUpstream != nil, let publicURL = config.publicURL {
            let upstreamId = NtfyUpstream.topicHash(publicURL: publicURL, topic: token)
            if subscription.upstreamId != upstreamId {
                try await db { try await storage.setUpstreamId(subscriptionId: subscription.id, upstreamId: upstreamId) }
                core.hooksCache.remove("hook:" + hash)
            }
        }
        return subscription
    }

    /// The hook or topic whose URL token hashes to `hash` (live or not), its sealed parts opened:
    /// what publishing to a hook and following a topic read, cached a few seconds.
    func openedHook(hash: String) async throws -> OpenedHook? {
        try await core.hooksCache.value("hook:" + hash) {
            await opened(try await db { try await storage.subscription(webhookHash: hash) })
        }
    }

    /// `subscription` with its sealed webhook secret and Alertmanager URL opened beside it (what
    /// the hook caches hold). A secret that cannot be opened (sealed under a key this service
    /// does not have) is a check no request passes; such a URL is dropped, and both are logged.
    private func opened(_ subscription: SubscriptionRecord?) async -> OpenedHook? {
        guard let s = subscription else { return nil }
        var hook = OpenedHook(subscription: s)
        // A disabled user's topics stop with their tokens (PROTOCOL.md §15); a team's feed is never disabled.
        hook.ownerDisabled = (try? await storage.user(id: s.userId))?.disabled ?? false
        do throws(SecretBox.OpenError) {
            if let secret = s.webhookSecret { hook.secret = .clear(try await secrets.openFetching(secret)) }
        } catch {
            hook.secret = .unopenable
            logger.error("a webhook's secret cannot be opened: its requests are refused", metadata: ["subscription": "\(s.id)", "error": "\(error)"])
        }
        do throws(SecretBox.OpenError) {
            if let url = s.alertmanagerURL { hook.alertmanagerURL = try await secrets.openFetching(url) }
        } catch {
            logger.error(
                "a webhook's Alertmanager URL cannot be opened: its alerts get no Silence action",
                metadata: ["subscription": "\(s.id)", "error": "\(error)"])
        }
        return hook
    }

    /// Whether the topic a stream follows is still there (a revocation ends its streams).
    func topicIsLive(token: String) async -> Bool {
        do {
            _ = try await topic(token: token)
            return true
        } catch let error as ServiceError {
            return error.kind != .notFound && error.kind != .forbidden
        } catch {
            return true  // storage away: the stream stays; the revocation is seen when it is back
        }
    }

    /// Wakes every stream of `userId` (doorbells and topics), as a change does: a revoked
    /// topic's streams then see it and end.
    func wakeStreams(userId: String) async {
        guard let latest = try? await latestCursor(userId: userId) else { return }
        hub.ring([userId: latest])
    }
}

/// What an ntfy subscriber of a topic is sent: the user's inbox as ntfy events. Each change of
/// a notification in the feed becomes one event: in Unread, a `message` whose `sequence_id` is
/// its id; live but not in Unread, a `message_clear`; deleted or expired, a `message_delete`.
///
/// A stream remembers nothing but its feed position: a `message`'s id depends only on the
/// notification and its content (the ntfy app keeps each id once, so a change that leaves it
/// in Unread with the same content shows nothing new, and a re-publish with other content
/// shows again), and clearing or deleting what a phone does not have does nothing there.
package final class NtfyFollower: Sendable {
    let inbox: Inbox
    let userId: String
    let topic: String
    /// Where the phone reaches this service (`--public-url`, else the request's host): its
    /// buttons point back here.
    let baseURL: String
    /// The feed position read up to.
    private let cursor = Mutex<Int64>(0)

    /// How many notifications in Unread a stream reads when it starts (what a phone replays).
    static let replayLimit = 1000

    package init(inbox: Inbox, userId: String, topic: String, baseURL: String) {
        self.inbox = inbox
        self.userId = userId
        self.topic = topic
        self.baseURL = baseURL
    }

    /// Which of what is in Unread a new stream replays (`poll=1`, `since=`).
    package enum Replay: Equatable, Sendable {
        case none
        case all
        /// Those that arrived at or after this time (`since=<unix seconds>`).
        case since(Date)
        /// The one message with this id (`poll=1&id=`: what an iPhone woken by the upstream asks for).
        case message(String)

        /// Whether a `poll=` value asks for the replay alone (ntfy's `1`, `true`, `yes`).
        package static func isPoll(_ value: (some StringProtocol)?) -> Bool {
            ["1", "true", "yes"].contains(value?.lowercased() ?? "")
        }

        /// `since=all|<unix time>|<message id>`, `poll=1` (the whole of Unread when no `since`).
        package init(query: [String: String]) {
            let poll = Self.isPoll(query["poll"])
            if poll, let id = query["id"], !id.isEmpty {
                self = .message(id)
                return
            }
            switch query["since"] {
            case nil, ""?: self = poll ? .all : .none
            case let value?:
                if let seconds = Int64(value), seconds >= 0 {
                    self = .since(Date(timeIntervalSince1970: TimeInterval(seconds)))
                } else if let ago = DurationText.seconds(value) {  // ntfy's since=10m
                    self = .since(Date().addingTimeInterval(-TimeInterval(ago)))
                } else {
                    // `all`, or a message id: what is in Unread now (the phone keeps each message
                    // id once, so a replay shows nothing twice).
                    self = .all
                }
            }
        }
    }

    /// Starts following: the feed position first (nothing after it is missed), then the
    /// `message` events of what is in Unread that `replay` asks for, oldest first.
    package func start(replay: Replay) async throws -> [NtfyAnswer] {
        let latest = try await inbox.latestCursor(userId: userId)
        cursor.withLock { $0 = latest }
        guard replay != .none else { return [] }
        let unread = try await inbox.list(userId: userId, view: .unread, top: Self.replayLimit, skip: 0)
            .sorted { ($0.createdDateTime, $0.id) < ($1.createdDateTime, $1.id) }
        let interruptions = try await self.interruptions()
        switch replay {
        case .none: return []
        case .all: return unread.map { message($0, interruptions) }
        case .since(let date): return unread.filter { $0.createdDateTime >= date }.map { message($0, interruptions) }
        case .message(let id): return unread.filter { Self.messageId($0) == id }.map { message($0, interruptions) }
        }
    }

    /// The events of the changes since the last call (after a ring).
    package func changes() async throws -> [NtfyAnswer] {
        var events: [NtfyAnswer] = []
        let interruptions = try await self.interruptions()
        while true {
            let page = try await inbox.changes(userId: userId, since: cursor.withLock { $0 }, limit: 500)
            let now = inbox.clock.nowMillis()
            for notification in page.changes {
                if !notification.isLive(at: now) {
                    events.append(ended(notification, event: "message_delete"))
                } else if NotificationView.unread.contains(notification, now: now) {
                    events.append(message(notification, interruptions))
                } else {
                    events.append(ended(notification, event: "message_clear"))
                }
            }
            guard let next = Int64(page.cursor) else { return events }
            cursor.withLock { $0 = max($0, next) }
            if !page.hasMore { return events }
        }
    }

    /// The `open` and `keepalive` events ntfy sends.
    package func control(_ event: String) -> NtfyAnswer {
        NtfyAnswer(id: NtfyAnswer.newMessageId(), time: inbox.clock.nowMillis(), expires: nil, event: event, topic: topic)
    }

    /// What the user's quiet hours and mutes say now (PROTOCOL.md §9).
    private func interruptions() async throws -> Interruptions {
        Interruptions(preferences: try await inbox.preferences(userId: userId).preferences, now: inbox.clock.nowMillis())
    }

    /// A notification as an ntfy message; one that may not interrupt now (quiet, muted) comes
    /// at priority 1, so the phone keeps it without a sound.
    private func message(_ notification: UserNotification, _ interruptions: Interruptions) -> NtfyAnswer {
        let title = notification.payload.visualContent?.title
        let body = notification.payload.visualContent?.body ?? notification.payload.rawContent
        return NtfyAnswer(
            id: Self.messageId(notification), time: notification.createdDateTime, expires: notification.expirationDateTime, event: "message",
            topic: topic, title: body == nil ? nil : title, message: body ?? title ?? "(no text)",
            priority: interruptions.interrupts(notification) ? NtfyMessage.number(notification.priority) : 1,
            click: notification.launchUrl, sequenceId: notification.id, actions: buttons(notification))
    }

    /// A message's buttons (PROTOCOL.md §12): "Dismiss", which dismisses it everywhere, then the
    /// publisher's actions, 3 in all: an http action points back at this service under the
    /// topic's secret URL (the service runs it; its request never reaches the phone), a view
    /// action opens its URL.
    func buttons(_ notification: UserNotification) -> [NtfyAction] {
        let path = baseURL + "/" + (topic.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? topic) + "/notty/" + notification.id
        var buttons = [NtfyAction(id: "notty-dismiss", action: "http", label: "Dismiss", url: path + "/dismiss", method: "POST", clear: true)]
        for (index, action) in (notification.actions ?? []).enumerated() where buttons.count < NotificationAction.maxPerNotification {
            switch action.kind {
            case .http:
                buttons.append(
                    NtfyAction(
                        id: "notty-\(index + 1)", action: "http", label: action.label, url: path + "/act/\(index + 1)", method: "POST",
                        clear: action.clear))
            case .view:
                if let url = action.url {
                    buttons.append(NtfyAction(id: "notty-\(index + 1)", action: "view", label: action.label, url: url, clear: action.clear))
                }
            }
        }
        return buttons
    }

    private func ended(_ notification: UserNotification, event: String) -> NtfyAnswer {
        NtfyAnswer(
            id: NtfyAnswer.newMessageId(), time: inbox.clock.nowMillis(), expires: nil, event: event, topic: topic, sequenceId: notification.id)
    }

    /// A message's id: the same notification with the same content has the same id on every
    /// stream and every replay (the ntfy app keeps each id once), 12 letters and digits.
    static func messageId(_ notification: UserNotification) -> String {
        let content = [
            notification.id, notification.payload.visualContent?.title ?? "", notification.payload.visualContent?.body ?? "",
            notification.payload.rawContent ?? "", notification.priority.rawValue, notification.launchUrl ?? "",
        ].joined(separator: "\u{1F}")
        let alphabet = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
        var id = ""
        for byte in SHA256.hash(data: Data(content.utf8)).prefix(12) { id.append(alphabet[Int(byte) % alphabet.count]) }
        return id
    }

    /// What one wake of the hub sends (a ring, or a tick: ``DoorbellHub/tickValue``): the
    /// inbox's events since the last wake, and a keepalive for a tick; nil when the topic was
    /// revoked and the stream ends.
    package func events(after value: Int64) async throws -> [NtfyAnswer]? {
        guard await inbox.topicIsLive(token: topic) else { return nil }
        // A tick may have taken a ring's place: the feed is read unless this stream is known
        // to be at the user's newest position.
        var events: [NtfyAnswer] = []
        if value != DoorbellHub.tickValue || inbox.knownLatestCursor(userId: userId) != cursor.withLock({ $0 }) {
            events = try await changes()
        }
        if value == DoorbellHub.tickValue { events.append(control("keepalive")) }
        return events
    }
}
