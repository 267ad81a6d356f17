import Crypto
import Foundation
import NottyCore
import NottyRecords
import NottySecrets
import NottyService
import NottyWebhooks
import Synchronization

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
    package static func messageId(_ notification: UserNotification) -> String {
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
