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

/// One notification as every notty wire format writes it (SPEC §1), with Graph's names.
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
    /// An absolute http(s) URL the notification is about (SPEC §7.1): what "open" opens.
    public var launchUrl: String?

    public init(
        id: String, appNotificationId: String, targetHostName: String, groupName: String? = nil,
        priority: Priority, payload: NotificationPayload, displayTimeToLive: Int? = nil,
        expirationDateTime: Date, createdDateTime: Date, lastModifiedDateTime: Date,
        status: NotificationStatus = .active, readState: ReadState = .unread,
        userActionState: UserActionState = .noInteraction, snoozedUntil: Date? = nil,
        targetPolicy: JSONValue? = nil, fallbackPolicy: JSONValue? = nil, launchUrl: String? = nil
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
    }

    enum CodingKeys: String, CodingKey {
        case id, appNotificationId, targetHostName, groupName, priority, payload, displayTimeToLive
        case expirationDateTime, createdDateTime, lastModifiedDateTime, status, readState
        case userActionState, snoozedUntil, targetPolicy, fallbackPolicy, launchUrl
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
