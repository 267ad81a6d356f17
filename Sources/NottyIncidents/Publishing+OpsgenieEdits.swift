import Foundation
import NottyCore
import NottyRecords
import NottyService
import NottyWebhooks
import Synchronization

// MARK: - Opsgenie's alert edits and notes (PROTOCOL.md §16.2)

extension Publishing {
    /// `POST /v2/alerts/{identifier}/notes|tags|details`, `DELETE …/tags|details` and
    /// `PUT …/message|description|priority`: the alert's content changed on every device and
    /// its state kept (an acknowledged alert stays Read; nothing pops up again or escalates
    /// anew). Answers the request's id; `422` (``Opsgenie/Refusal``) past notty's limits.
    public func opsgenieEdit(key: String?, _ identifier: OpsgenieIdentifier, _ edit: Opsgenie.Edit) async throws -> String {
        let hook = try await opsgenieHook(key: key)
        let now = clock.nowMillis()
        try takeRate(of: hook.app, now: now)
        let alert = try await opsgenieAlert(identifier, of: hook)
        try await opsgenieEdit(alert, of: try await feedHook(of: alert, hook), edit, now: now)
        return Opsgenie.RequestRecord(action: edit.action, alertId: alert.id, alias: alert.appNotificationId, processedAt: ISOTime.millis(now))
            .requestId
    }

    /// Makes `edit` to `alert` in one write (two edits at once both count); `404` when it
    /// went meanwhile.
    func opsgenieEdit(_ alert: UserNotification, of hook: Hook, _ edit: Opsgenie.Edit, now: Date) async throws {
        let refused = Mutex<Opsgenie.Refusal?>(nil)
        let edited = try await db {
            try await storage.edit(
                userId: hook.subscription.userId, hostName: hook.app.hostName, appNotificationId: alert.appNotificationId, now: now
            ) { current in
                guard current.id == alert.id, current.isLive(at: now) else { return nil }
                do throws(Opsgenie.Refusal) {
                    return try Opsgenie.edited(current, edit, now: now)
                } catch {
                    refused.withLock { $0 = error }
                    return nil
                }
            }
        }
        if let refusal = refused.withLock({ $0 }) { throw refusal }
        guard edited != nil else { throw ServiceError.notFound("Alert does not exist") }
    }

    /// `GET /v2/alerts/{identifier}/notes?limit=&order=&offset=&direction=`: the alert's kept
    /// notes (`{"note","owner","createdAt","offset"}`, `offset` the note's place), newest
    /// first (`order=asc`: oldest first), `limit` 1–100 (20); `offset` with `direction`
    /// `next` (the default) or `prev` pages from a note's place.
    public func opsgenieNotes(
        key: String?, _ identifier: OpsgenieIdentifier, limit: Int?, order: String?, offset: String?, direction: String?
    ) async throws -> (notes: [JSONValue], next: String?) {
        let hook = try await opsgenieHook(key: key)
        let limit = limit ?? 20
        guard (1...100).contains(limit) else { throw ServiceError.unprocessable("limit is 1 to 100") }
        guard order == nil || order == "asc" || order == "desc" else { throw ServiceError.unprocessable("order is asc or desc") }
        guard direction == nil || direction == "next" || direction == "prev" else { throw ServiceError.unprocessable("direction is next or prev") }
        let start = try offset.map { text in
            guard let place = Int(text), place >= 0 else { throw ServiceError.unprocessable("offset is a note's offset, a whole number") }
            return place
        }
        let notes = Array(Opsgenie.Record(of: try await opsgenieAlert(identifier, of: hook)).notes.enumerated())
        var ordered = order == "asc" ? notes : notes.reversed()
        if let start {
            let after = direction != "prev"
            let ascending = order == "asc"
            ordered = ordered.filter { place, _ in after == ascending ? place > start : place < start }
            if direction == "prev" { ordered = Array(ordered.suffix(limit)) }
        }
        let page = ordered.prefix(limit)
        let answer = page.map { place, note in
            JSONValue.object([
                "note": .string(note.note), "owner": .string(note.owner),
                "createdAt": .string(ISOTime.format(note.createdAt)), "offset": .string(String(place)),
            ])
        }
        return (answer, ordered.count > page.count ? page.last.map { String($0.offset) } : nil)
    }
}
