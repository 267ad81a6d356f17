import Foundation

// Reading what the service writes, without JSONDecoder: the notification fields of PROTOCOL.md §1
// read from parsed JSON by ``JSONFields`` in its `.wire` leniency. Change pages are read this
// way: `JSONDecoder` spent about 10 µs on each notification, as much as a first sync's writing
// it to the store. It reads what the `Decodable` conformance reads (both are tested against
// each other), and keeps every string as it is: this checks types, not the service's
// publishing rules.

extension UserNotification {
    /// Reads a notification from its JSON object (PROTOCOL.md §1), as the service writes it.
    fileprivate init(wire f: JSONFields) throws(ValidationError) {
        let payload = try f.required("payload") { key throws(ValidationError) in try f.nested(key) }
        let visual = try payload.nested("visualContent")
        self.init(
            id: try f.requiredString("id"), appNotificationId: try f.requiredString("appNotificationId"),
            targetHostName: try f.requiredString("targetHostName"), groupName: try f.string("groupName"),
            priority: try f.required("priority") { key throws(ValidationError) in try f.enumeration(key, Priority.self) },
            payload: NotificationPayload(
                rawContent: try payload.string("rawContent"),
                visualContent: try visual.map { v throws(ValidationError) in
                    VisualContent(title: try v.requiredString("title"), body: try v.string("body"))
                }),
            displayTimeToLive: try f.integer("displayTimeToLive"),
            expirationDateTime: try f.required("expirationDateTime", f.time), createdDateTime: try f.required("createdDateTime", f.time),
            lastModifiedDateTime: try f.required("lastModifiedDateTime", f.time),
            status: try f.required("status") { key throws(ValidationError) in try f.enumeration(key, NotificationStatus.self) },
            readState: try f.required("readState") { key throws(ValidationError) in try f.enumeration(key, ReadState.self) },
            userActionState: try f.required("userActionState") { key throws(ValidationError) in try f.enumeration(key, UserActionState.self) },
            snoozedUntil: try f.time("snoozedUntil"), targetPolicy: f.any("targetPolicy"), fallbackPolicy: f.any("fallbackPolicy"),
            launchUrl: try f.string("launchUrl"), escalations: EscalationRecord.list(f.any("escalations")),
            actions: NotificationAction.list(f.any("actions")), actionResults: ActionResult.list(f.any("actionResults")),
            team: try f.string("team"), changedBy: ChangedBy(f.any("changedBy")))
    }
}

extension ChangesPage {
    /// Reads a page of the change feed (`GET /v1/me/notifications/changes`) from its body.
    /// The notifications are read member by member, never as a whole ``JSONValue``.
    public init(wire body: Data) throws(ValidationError) {
        var parser = JSONParser(data: body)
        var changes: [UserNotification] = []
        var others: [(key: String, value: JSONValue)] = []  // cursor, hasMore
        var sawChanges = false
        var failure: ValidationError?
        let read = parser.readObject { key, parser in
            switch key {
            case "changes":
                sawChanges = true
                changes.removeAll()  // given twice, the last one counts, as in JSONParser's objects
                return parser.readArray { parser in
                    do throws(ValidationError) {
                        changes.append(try UserNotification(wire: try JSONFields(reading: &parser, "a notification")))
                        return true
                    } catch {
                        failure = error
                        return false
                    }
                }
            default:
                guard let value = parser.readValue() else { return false }
                others.append((key, value))
                return true
            }
        }
        if let failure { throw failure }
        guard read, parser.atEnd() else {
            guard JSONParser.isValid(body) else { throw ValidationError("the page is not valid JSON") }
            throw ValidationError(sawChanges ? "changes of the page must be a JSON array" : "the page must be a JSON object")
        }
        guard sawChanges else { throw ValidationError("changes of the page is required") }
        let f = JSONFields(members: others, "the page", leniency: .wire)
        let preferences = try f.array("preferences")?.map { item throws(ValidationError) in
            try PreferenceEntry(wire: try JSONFields(value: item, what: "a preference", leniency: .wire))
        }
        self.init(changes: changes, cursor: try f.requiredString("cursor"), hasMore: try f.required("hasMore", f.bool), preferences: preferences)
    }
}

extension PreferenceEntry {
    /// Reads a preference from its JSON object, as the service writes it (a `null` value: unset).
    init(wire f: JSONFields) throws(ValidationError) {
        self.init(key: try f.requiredString("key"), value: f.any("value") ?? .null, changedAt: try f.required("changedAt", f.time))
    }
}
