import Foundation

/// The visible part of a notification (`payload.visualContent`).
public struct VisualContent: Codable, Sendable, Equatable {
    public var title: String
    public var body: String?

    public init(title: String, body: String? = nil) {
        self.title = title
        self.body = body
    }
}

/// `payload`: raw data for the client, a visible toast, or both.
public struct NotificationPayload: Codable, Sendable, Equatable {
    public var rawContent: String?
    public var visualContent: VisualContent?

    public init(rawContent: String? = nil, visualContent: VisualContent? = nil) {
        self.rawContent = rawContent
        self.visualContent = visualContent
    }
}

/// One notification as every notty wire format writes it (PROTOCOL.md §1), with Graph's names.
public struct UserNotification: Codable, Sendable, Equatable, Identifiable {
    public var id: String
    public var appNotificationId: String
    public var targetHostName: String
    public var groupName: String?
    public var priority: Priority
    public var payload: NotificationPayload
    public var displayTimeToLive: Int?
    public var expirationDateTime: Date
    public var createdDateTime: Date
    public var lastModifiedDateTime: Date
    public var status: NotificationStatus
    public var readState: ReadState
    public var userActionState: UserActionState
    public var snoozedUntil: Date?
    public var targetPolicy: JSONValue?
    public var fallbackPolicy: JSONValue?
    /// An absolute http(s) URL the notification is about (PROTOCOL.md §7.1): what "open" opens.
    public var launchUrl: String?
    /// Where it was escalated (PROTOCOL.md §11), oldest first; nil (absent on the wire) when never.
    public var escalations: [EscalationRecord]?
    /// What the publisher offers to do (PROTOCOL.md §12), at most 3; nil (absent on the wire) when
    /// nothing. Devices are sent each action's shown form only (``NotificationAction``).
    public var actions: [NotificationAction]?
    /// How the actions run so far went, one per action that ran (its latest run).
    public var actionResults: [ActionResult]?
    /// The team whose notification this is (PROTOCOL.md §13.1); nil (absent) for the user's own.
    public var team: String?
    /// Who made the latest change of a team notification's state; nil (absent) when none did.
    public var changedBy: ChangedBy?

    public init(
        id: String, appNotificationId: String, targetHostName: String, groupName: String? = nil,
        priority: Priority, payload: NotificationPayload, displayTimeToLive: Int? = nil,
        expirationDateTime: Date, createdDateTime: Date, lastModifiedDateTime: Date,
        status: NotificationStatus = .active, readState: ReadState = .unread,
        userActionState: UserActionState = .noInteraction, snoozedUntil: Date? = nil,
        targetPolicy: JSONValue? = nil, fallbackPolicy: JSONValue? = nil, launchUrl: String? = nil, escalations: [EscalationRecord]? = nil,
        actions: [NotificationAction]? = nil, actionResults: [ActionResult]? = nil, team: String? = nil, changedBy: ChangedBy? = nil
    ) {
        self.id = id
        self.appNotificationId = appNotificationId
        self.targetHostName = targetHostName
        self.groupName = groupName
        self.priority = priority
        self.payload = payload
        self.displayTimeToLive = displayTimeToLive
        self.expirationDateTime = expirationDateTime
        self.createdDateTime = createdDateTime
        self.lastModifiedDateTime = lastModifiedDateTime
        self.status = status
        self.readState = readState
        self.userActionState = userActionState
        self.snoozedUntil = snoozedUntil
        self.targetPolicy = targetPolicy
        self.fallbackPolicy = fallbackPolicy
        self.launchUrl = launchUrl
        self.escalations = escalations
        self.actions = actions
        self.actionResults = actionResults
        self.team = team
        self.changedBy = changedBy
    }

    enum CodingKeys: String, CodingKey {
        case id, appNotificationId, targetHostName, groupName, priority, payload, displayTimeToLive
        case expirationDateTime, createdDateTime, lastModifiedDateTime, status, readState
        case userActionState, snoozedUntil, targetPolicy, fallbackPolicy, launchUrl, escalations, actions, actionResults, team, changedBy
    }

    /// Writes every field, nulls included, so clients see a stable shape.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(id, forKey: .id)
        try c.encode(appNotificationId, forKey: .appNotificationId)
        try c.encode(targetHostName, forKey: .targetHostName)
        try c.encode(groupName, forKey: .groupName)
        try c.encode(priority, forKey: .priority)
        try c.encode(payload, forKey: .payload)
        try c.encode(displayTimeToLive, forKey: .displayTimeToLive)
        try c.encode(expirationDateTime, forKey: .expirationDateTime)
        try c.encode(createdDateTime, forKey: .createdDateTime)
        try c.encode(lastModifiedDateTime, forKey: .lastModifiedDateTime)
        try c.encode(status, forKey: .status)
        try c.encode(readState, forKey: .readState)
        try c.encode(userActionState, forKey: .userActionState)
        try c.encode(snoozedUntil, forKey: .snoozedUntil)
        try c.encodeIfPresent(targetPolicy, forKey: .targetPolicy)
        try c.encodeIfPresent(fallbackPolicy, forKey: .fallbackPolicy)
        try c.encodeIfPresent(launchUrl, forKey: .launchUrl)  // absent means none, as for the policies
        if let escalations, !escalations.isEmpty { try c.encode(escalations, forKey: .escalations) }
        if let actions, !actions.isEmpty { try c.encode(actions, forKey: .actions) }
        if let actionResults, !actionResults.isEmpty { try c.encode(actionResults, forKey: .actionResults) }
        try c.encodeIfPresent(team, forKey: .team)
        try c.encodeIfPresent(changedBy, forKey: .changedBy)
    }

    /// The title shown to a person: the visual title, else the raw content, else the app id.
    public var displayTitle: String {
        payload.visualContent?.title ?? payload.rawContent ?? appNotificationId
    }

    /// Whether the notification is still shown at `now` (active and not expired).
    public func isLive(at now: Date) -> Bool {
        status == .active && expirationDateTime > now
    }
}

extension UserNotification {
    /// The notification as a command gets it (`notty poll --exec`, an escalation's
    /// `command:`): `NOTTY_ID`, `NOTTY_TITLE`, `NOTTY_BODY`, `NOTTY_PRIORITY`, `NOTTY_APP`,
    /// `NOTTY_GROUP`, `NOTTY_URL`, always as variables, never pasted into the command's line.
    public var commandVariables: [String: String] {
        [
            "NOTTY_ID": id, "NOTTY_TITLE": displayTitle, "NOTTY_BODY": payload.visualContent?.body ?? payload.rawContent ?? "",
            "NOTTY_PRIORITY": priority.rawValue, "NOTTY_APP": targetHostName, "NOTTY_GROUP": groupName ?? "", "NOTTY_URL": launchUrl ?? "",
        ]
    }
}

/// One escalation of a notification (PROTOCOL.md §11): to which target (shown without credentials),
/// by which rule, when, and how it went (`sent`, or `failed` with the error, given up after a
/// day of retries).
public struct EscalationRecord: Codable, Sendable, Equatable, JSONWritable {
    public var target: String
    public var rule: String
    public var at: Date
    public var outcome: String
    public var error: String?
    /// Whom it paged: the member (PROTOCOL.md §13.2, a team's policy); nil for a user's own rule.
    public var user: String?

    public init(target: String, rule: String, at: Date, outcome: String, error: String? = nil, user: String? = nil) {
        self.target = target
        self.rule = rule
        self.at = at
        self.outcome = outcome
        self.error = error
        self.user = user
    }

    public func write(to w: inout JSONWriter) {
        w.raw(#"{"at":"#); w.time(at)
        if let error { w.raw(#","error":"#); w.string(error) }
        w.raw(#","outcome":"#); w.string(outcome)
        w.raw(#","rule":"#); w.string(rule)
        w.raw(#","target":"#); w.string(target)
        if let user { w.raw(#","user":"#); w.string(user) }
        w.raw("}")
    }

    /// The records of a JSON array (as the wire and the device's store have them); what is
    /// not a record is left out.
    public static func list(_ value: JSONValue?) -> [EscalationRecord]? {
        guard case .array(let items)? = value else { return nil }
        let records = items.compactMap { item -> EscalationRecord? in
            guard case .object(let o) = item, case .string(let target)? = o["target"], case .string(let rule)? = o["rule"],
                case .string(let atText)? = o["at"], let at = ISOTime.parse(atText), case .string(let outcome)? = o["outcome"]
            else { return nil }
            let error: String? = if case .string(let text)? = o["error"] { text } else { nil }
            let user: String? = if case .string(let text)? = o["user"] { text } else { nil }
            return EscalationRecord(target: target, rule: rule, at: at, outcome: outcome, error: error, user: user)
        }
        return records.isEmpty ? nil : records
    }

    /// The records as a JSON value.
    public static func value(_ records: [EscalationRecord]) -> JSONValue {
        .array(
            records.map { r in
                var o: [String: JSONValue] = [
                    "target": .string(r.target), "rule": .string(r.rule), "at": .string(ISOTime.format(r.at)), "outcome": .string(r.outcome),
                ]
                if let error = r.error { o["error"] = .string(error) }
                if let user = r.user { o["user"] = .string(user) }
                return .object(o)
            })
    }

    /// A line for a person: `ntfy:https://ntfy.sh/alerts 2m ago (night)`, or its failure.
    public func line(now: Date) -> String {
        (user.map { "paged \($0) at " } ?? "") + "\(target) \(TimeText.relative(at, now: now)) (\(rule))"
            + (outcome == "sent" ? "" : ": \(outcome)" + (error.map { ", \($0)" } ?? ""))
    }
}
