import Foundation
import NottyCore

// What the service keeps to escalate (PROTOCOL.md §11): which rules watch which unhandled
// notifications and when each is due (tracks), what is to be sent (deliveries, an outbox),
// what each target was last sent (so that handling takes it back), and each target's last
// delivery and last error (`notty escalate --list`).

/// What a delivery tells its target.
public enum EscalationEvent: String, Sendable, Codable, CaseIterable {
    /// The notification is still unhandled: somebody must be told.
    case escalated
    /// It was handled on some device: take the escalation back.
    case handled
    /// It was deleted or expired: take it back for good.
    case deleted
    /// `notty escalate test`: not about any notification.
    case test
}

/// One rule's watch over one notification while it is unhandled.
public struct EscalationTrack: Sendable, Equatable {
    public var notificationId: String
    public var ruleId: String
    public var userId: String
    /// When the notification became unhandled: the rule's clock starts here.
    public var since: Date
    /// When it is sent next; nil: sent, and not to be sent again (no `repeat`).
    public var dueAt: Date?
    /// How many times it was sent since `since`.
    public var sent: Int

    public init(notificationId: String, ruleId: String, userId: String, since: Date, dueAt: Date?, sent: Int = 0) {
        self.notificationId = notificationId
        self.ruleId = ruleId
        self.userId = userId
        self.since = since
        self.dueAt = dueAt
        self.sent = sent
    }
}

/// Who handled a notification, as a `handled` event says it (PROTOCOL.md §11).
public struct HandledBy: Codable, Sendable, Equatable {
    /// The member who handled it (a team's notification, PROTOCOL.md §13.2); nil for a user's own.
    public var user: String?
    /// The device's name (or id) when the service knows it.
    public var device: String?
    /// The view it went to: `read`, `activated`, `dismissed` or `snoozed`.
    public var state: String
    public var at: Date

    public init(user: String? = nil, device: String?, state: String, at: Date) {
        self.user = user
        self.device = device
        self.state = state
        self.at = at
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encodeIfPresent(user, forKey: .user)
        try c.encode(device, forKey: .device)  // null, not left out: a stable shape
        try c.encode(state, forKey: .state)
        try c.encode(at, forKey: .at)
    }

    enum CodingKeys: String, CodingKey { case user, device, state, at }
}

/// One message to one target, kept until it is delivered (or given up after a day).
public struct EscalationDelivery: Sendable, Equatable {
    public var id: String
    public var userId: String
    public var notificationId: String
    public var ruleId: String
    public var ruleName: String
    /// The target as the rule has it (credentials included).
    public var target: String
    public var event: EscalationEvent
    /// The notification as it was when this was decided.
    public var notification: UserNotification
    public var handledBy: HandledBy?
    /// Whom a team's policy pages with it (the member whose contact `target` is).
    public var recipient: String?
    public var attempts: Int
    /// When it was first due: retries stop a day after.
    public var firstAt: Date
    /// When it is tried next.
    public var nextAt: Date
    public var lastError: String?

    public init(
        id: String, userId: String, notificationId: String, ruleId: String, ruleName: String, target: String, event: EscalationEvent,
        notification: UserNotification, handledBy: HandledBy? = nil, recipient: String? = nil, attempts: Int = 0, firstAt: Date, nextAt: Date,
        lastError: String? = nil
    ) {
        self.recipient = recipient
        self.id = id
        self.userId = userId
        self.notificationId = notificationId
        self.ruleId = ruleId
        self.ruleName = ruleName
        self.target = target
        self.event = event
        self.notification = notification
        self.handledBy = handledBy
        self.attempts = attempts
        self.firstAt = firstAt
        self.nextAt = nextAt
        self.lastError = lastError
    }

    /// What it carries, as stored and as a webhook's body has it.
    struct Payload: Codable {
        var notification: UserNotification
        var handledBy: HandledBy?
        var recipient: String?
    }

    /// The stored form of what it carries: `{"notification": {…§1…}, "handledBy": {…}, "recipient"}`.
    public var payloadJSON: String {
        let payload = Payload(notification: notification, handledBy: handledBy, recipient: recipient)
        return String(decoding: (try? NottyJSON.encoder.encode(payload)) ?? Data(), as: UTF8.self)
    }

    /// What ``payloadJSON`` stored, read back.
    public static func payload(_ text: String) -> (notification: UserNotification, handledBy: HandledBy?, recipient: String?)? {
        guard let payload = try? NottyJSON.decoder.decode(Payload.self, from: Data(text.utf8)) else { return nil }
        return (payload.notification, payload.handledBy, payload.recipient)
    }

    /// What a test of a rule or a contact sends (`notty escalate test`, `notty contact test`):
    /// a High notification that lives a minute, never stored.
    public static func testNotification(_ appNotificationId: String, title: String, body: String, now: Date) -> UserNotification {
        UserNotification(
            id: "notty-test-" + DeliveryIds.next(now: now), appNotificationId: appNotificationId, targetHostName: "notty", priority: .high,
            payload: NotificationPayload(visualContent: VisualContent(title: title, body: body)),
            expirationDateTime: now + 60, createdDateTime: now, lastModifiedDateTime: now)
    }

    /// How a page that reached nobody is stored (``PageTarget/unreachable(_:)``).
    static let unreachablePrefix = "unreachable:"

    /// Where this delivery goes.
    public var page: PageTarget { PageTarget(stored: target) }
}

/// Where one page goes: a target as stored (sealed, or a paging target), or nobody, with why (a
/// member without contacts, a team without a rotation). A page to nobody fails at once with its
/// reason, so that the policy's list and the notification show it rather than skip it
/// (PROTOCOL.md §13.2). One type instead of a prefix each reader tested.
public enum PageTarget: Sendable, Equatable {
    case target(String)
    case unreachable(String)

    /// The column's text as stored.
    public init(stored: String) {
        if stored.hasPrefix(EscalationDelivery.unreachablePrefix) {
            self = .unreachable(String(stored.dropFirst(EscalationDelivery.unreachablePrefix.count)))
        } else {
            self = .target(stored)
        }
    }

    /// As the store keeps it.
    public var stored: String {
        switch self {
        case .target(let target): target
        case .unreachable(let reason): EscalationDelivery.unreachablePrefix + reason
        }
    }
}

/// What a target was last sent about a notification: an `escalated` that a handling takes back
/// with `handled`, and a deletion with `deleted`.
public struct EscalationSent: Sendable, Equatable {
    public var notificationId: String
    public var userId: String
    public var target: String
    public var ruleId: String
    public var ruleName: String
    public var lastEvent: EscalationEvent

    public init(notificationId: String, userId: String, target: String, ruleId: String, ruleName: String, lastEvent: EscalationEvent) {
        self.notificationId = notificationId
        self.userId = userId
        self.target = target
        self.ruleId = ruleId
        self.ruleName = ruleName
        self.lastEvent = lastEvent
    }
}

/// A delivery still to be made, as the planner sees it.
public struct PendingDelivery: Sendable, Equatable {
    public var id: String
    public var notificationId: String
    public var ruleId: String
    public var ruleName: String
    public var target: String
    public var event: EscalationEvent
    /// Being sent now (claimed): it cannot be called back, only followed.
    public var inFlight: Bool

    public init(id: String, notificationId: String, ruleId: String, ruleName: String, target: String, event: EscalationEvent, inFlight: Bool) {
        self.id = id
        self.notificationId = notificationId
        self.ruleId = ruleId
        self.ruleName = ruleName
        self.target = target
        self.event = event
        self.inFlight = inFlight
    }
}

/// What the planner is given for one user: the notifications that changed since it last
/// looked, and what is kept about them.
public struct EscalationPlanInput: Sendable {
    public var userId: String
    public var changed: [UserNotification]
    public var rules: [EscalationRule]
    public var tracks: [EscalationTrack]
    public var sent: [EscalationSent]
    public var pending: [PendingDelivery]
    public var now: Date

    public init(
        userId: String, changed: [UserNotification], rules: [EscalationRule], tracks: [EscalationTrack], sent: [EscalationSent],
        pending: [PendingDelivery], now: Date
    ) {
        self.userId = userId
        self.changed = changed
        self.rules = rules
        self.tracks = tracks
        self.sent = sent
        self.pending = pending
        self.now = now
    }
}

/// What the planner decided: the storage writes it in the same transaction as it read.
public struct EscalationPlan: Sendable, Equatable {
    public var saveTracks: [EscalationTrack] = []
    /// Tracks to forget, by notification and rule.
    public var dropTracks: [(notificationId: String, ruleId: String)] = []
    /// Deliveries not yet begun that no longer should be (handled before they were sent).
    public var cancel: [String] = []
    public var deliveries: [EscalationDelivery] = []
    public var saveSent: [EscalationSent] = []

    public init() {}

    public var isEmpty: Bool { saveTracks.isEmpty && dropTracks.isEmpty && cancel.isEmpty && deliveries.isEmpty && saveSent.isEmpty }

    public static func == (a: Self, b: Self) -> Bool {
        a.saveTracks == b.saveTracks && a.dropTracks.map { [$0.0, $0.1] } == b.dropTracks.map { [$0.0, $0.1] } && a.cancel == b.cancel
            && a.deliveries == b.deliveries && a.saveSent == b.saveSent
    }
}

/// A track that is due, with what deciding it needs.
public struct EscalationDue: Sendable {
    public var track: EscalationTrack
    /// Nil when it is gone (purged).
    public var notification: UserNotification?
    /// Nil when the rule was removed.
    public var rule: EscalationRule?
    public var preferences: [PreferenceEntry]

    public init(track: EscalationTrack, notification: UserNotification?, rule: EscalationRule?, preferences: [PreferenceEntry]) {
        self.track = track
        self.notification = notification
        self.rule = rule
        self.preferences = preferences
    }
}

/// What becomes of a due track: the deliveries it makes, and the track after (nil: forgotten).
public struct EscalationFiring: Sendable, Equatable {
    public var deliveries: [EscalationDelivery]
    public var track: EscalationTrack?

    public init(deliveries: [EscalationDelivery], track: EscalationTrack?) {
        self.deliveries = deliveries
        self.track = track
    }
}

/// A delivery that is over for now, and what is recorded of it: how it went, and what its
/// notification shows (an `escalated` delivered or given up).
public struct FinishedDelivery: Sendable {
    public var delivery: EscalationDelivery
    public var result: DeliveryResult
    public var log: EscalationRecord?

    public init(delivery: EscalationDelivery, result: DeliveryResult, log: EscalationRecord?) {
        self.delivery = delivery
        self.result = result
        self.log = log
    }
}

/// How a delivery went.
public enum DeliveryResult: Sendable, Equatable {
    case delivered
    /// Failed; tried again at the given time.
    case retry(at: Date, error: String)
    /// Failed for good (not worth retrying, or a day of retries is over).
    case failed(error: String)
}
