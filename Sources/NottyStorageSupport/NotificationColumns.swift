import Foundation
import NottyCore
import NottyRecords
import NottyService

/// A stored notification as the columns of a `notifications` row, the same in every backend:
/// times in milliseconds since 1970, policies as JSON text, enums by their wire spelling.
package struct NotificationColumns {
    /// The column names, in the order every backend selects and inserts them; `seq` is last
    /// (the SQLite writer binds it apart).
    package static let names = [
        "id", "user_id", "host_name", "app_notification_id", "group_name", "priority", "raw_content",
        "has_visual", "title", "body", "display_ttl", "expires", "created", "modified", "deleted", "read_state", "read_at",
        "action_state", "snoozed_until", "action_at", "target_policy", "fallback_policy", "launch_url", "actions", "team", "changed_by", "seq",
    ]
    package static let list = names.joined(separator: ", ")
    /// ``list`` with `actions` read as NULL: for a row whose actions are not wanted (the row a
    /// re-publish replaces, a tombstone), the longest text is not read at all.
    package static let listWithoutActions = names.map { $0 == "actions" ? "NULL" : $0 }.joined(separator: ", ")

    var id: String
    var userId: String
    var hostName: String
    var appNotificationId: String
    var groupName: String?
    var priority: String
    var rawContent: String?
    var hasVisual: Bool
    var title: String?
    var body: String?
    var displayTTL: Int64?
    var expires: Int64
    var created: Int64
    var modified: Int64
    var deleted: Bool
    var readState: String
    var readAt: Int64
    var actionState: String
    var snoozedUntil: Int64?
    var actionAt: Int64
    var targetPolicy: String?
    var fallbackPolicy: String?
    var launchUrl: String?
    /// The whole actions (PROTOCOL.md §12) as JSON: only the service reads them.
    var actions: String?
    /// The team's name, for a team's notification (PROTOCOL.md §13.1).
    var team: String?
    /// ``ChangedBy`` as JSON.
    var changedBy: String?
    var seq: Int64

    package var stored: StoredNotification {
        let notification = UserNotification(
            id: id, appNotificationId: appNotificationId, targetHostName: hostName, groupName: groupName,
            priority: Priority(rawValue: priority) ?? .none,
            payload: NotificationPayload(rawContent: rawContent, visualContent: hasVisual ? VisualContent(title: title ?? "", body: body) : nil),
            displayTimeToLive: displayTTL.map { Int($0) }, expirationDateTime: ISOTime.date(millis: expires),
            createdDateTime: ISOTime.date(millis: created), lastModifiedDateTime: ISOTime.date(millis: modified),
            status: deleted ? .deleted : .active, readState: ReadState(rawValue: readState) ?? .unread,
            userActionState: UserActionState(rawValue: actionState) ?? .noInteraction,
            snoozedUntil: snoozedUntil.map { ISOTime.date(millis: $0) },
            targetPolicy: targetPolicy.flatMap { JSONValue(jsonText: $0) },
            fallbackPolicy: fallbackPolicy.flatMap { JSONValue(jsonText: $0) }, launchUrl: launchUrl,
            actions: actions.flatMap { NotificationAction.list(JSONValue(jsonText: $0)) }, team: team,
            changedBy: changedBy.flatMap { try? NottyJSON.decoder.decode(ChangedBy.self, from: Data($0.utf8)) })
        var row = StoredNotification(userId: userId, notification: notification, readChangedAt: readAt, actionChangedAt: actionAt, seq: seq)
        row.storedActions = actions
        return row
    }
}

/// One selected row, read by column position: each backend's row type conforms, so that the
/// order of ``NotificationColumns/names`` is decoded in one place.
package protocol ColumnReader {
    func text(_ index: Int) throws -> String
    func optionalText(_ index: Int) throws -> String?
    func integer(_ index: Int) throws -> Int64
    func optionalInteger(_ index: Int) throws -> Int64?
    func flag(_ index: Int) throws -> Bool
}

/// Takes a row's values in column order: each backend's statement arguments conform, so that
/// the order of ``NotificationColumns/names`` is encoded in one place.
package protocol ColumnWriter {
    mutating func text(_ value: String?)
    mutating func integer(_ value: Int64?)
    mutating func flag(_ value: Bool)
}

// In an extension, so that Swift still writes the memberwise initialiser.
extension NotificationColumns {
    /// A row selected with ``list``.
    package init(_ r: some ColumnReader) throws {
        self.init(
            id: try r.text(0), userId: try r.text(1), hostName: try r.text(2), appNotificationId: try r.text(3),
            groupName: try r.optionalText(4), priority: try r.text(5), rawContent: try r.optionalText(6), hasVisual: try r.flag(7),
            title: try r.optionalText(8), body: try r.optionalText(9), displayTTL: try r.optionalInteger(10), expires: try r.integer(11),
            created: try r.integer(12), modified: try r.integer(13), deleted: try r.flag(14), readState: try r.text(15),
            readAt: try r.integer(16), actionState: try r.text(17), snoozedUntil: try r.optionalInteger(18), actionAt: try r.integer(19),
            targetPolicy: try r.optionalText(20), fallbackPolicy: try r.optionalText(21), launchUrl: try r.optionalText(22),
            actions: try r.optionalText(23), team: try r.optionalText(24), changedBy: try r.optionalText(25), seq: try r.integer(26))
    }

    /// Hands `writer` every value, in ``names`` order.
    package func write(to writer: inout some ColumnWriter) {
        for value in [id, userId, hostName, appNotificationId, groupName, priority, rawContent] { writer.text(value) }
        writer.flag(hasVisual)
        for value in [title, body] { writer.text(value) }
        for value in [displayTTL, expires, created, modified] { writer.integer(value) }
        writer.flag(deleted)
        writer.text(readState)
        writer.integer(readAt)
        writer.text(actionState)
        for value in [snoozedUntil, actionAt] { writer.integer(value) }
        for value in [targetPolicy, fallbackPolicy, launchUrl] { writer.text(value) }
        writer.text(actions)
        writer.text(team)
        writer.text(changedBy)
        writer.integer(seq)
    }

    /// A row with every column set, for a backend that learns the columns' types by writing one.
    package static let sample = NotificationColumns(
        id: "", userId: "", hostName: "", appNotificationId: "", groupName: "", priority: "", rawContent: "", hasVisual: true,
        title: "", body: "", displayTTL: 0, expires: 0, created: 0, modified: 0, deleted: false, readState: "", readAt: 0,
        actionState: "", snoozedUntil: 0, actionAt: 0, targetPolicy: "", fallbackPolicy: "", launchUrl: "", actions: "", team: "", changedBy: "",
        seq: 0)

    package init(_ s: StoredNotification) {
        let n = s.notification
        self.init(
            id: n.id, userId: s.userId, hostName: n.targetHostName, appNotificationId: n.appNotificationId, groupName: n.groupName,
            priority: n.priority.rawValue, rawContent: n.payload.rawContent, hasVisual: n.payload.visualContent != nil,
            title: n.payload.visualContent?.title, body: n.payload.visualContent?.body, displayTTL: n.displayTimeToLive.map(Int64.init),
            expires: ISOTime.millis(n.expirationDateTime), created: ISOTime.millis(n.createdDateTime),
            modified: ISOTime.millis(n.lastModifiedDateTime), deleted: n.status == .deleted, readState: n.readState.rawValue,
            readAt: s.readChangedAt, actionState: n.userActionState.rawValue, snoozedUntil: n.snoozedUntil.map { ISOTime.millis($0) },
            actionAt: s.actionChangedAt, targetPolicy: n.targetPolicy?.jsonText, fallbackPolicy: n.fallbackPolicy?.jsonText,
            launchUrl: n.launchUrl, actions: s.storedActions ?? NotificationAction.storedText(n.actions), team: n.team,
            changedBy: n.changedBy.flatMap { try? String(decoding: NottyJSON.encoder.encode($0), as: UTF8.self) }, seq: s.seq)
    }
}

extension AlertFilter {
    /// The filter as SQL conditions (each after ` AND `) on `notifications`' columns; the search
    /// pattern is bound at `placeholder`, compared with `like` (`LIKE`, `ILIKE`).
    package func sqlConditions(like: String, placeholder: String) -> String {
        var conditions: [String] = []
        let dismissed = "action_state = '\(UserActionState.dismissed.rawValue)'"
        if let closed { conditions.append(closed ? dismissed : "NOT (\(dismissed))") }
        if let acknowledged { conditions.append("read_state = '\((acknowledged ? ReadState.read : .unread).rawValue)'") }
        if search != nil { conditions.append(NotificationSearch.condition(like: like, placeholder: placeholder)) }
        return conditions.map { " AND " + $0 }.joined()
    }
}
