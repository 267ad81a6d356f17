import Foundation
import NottyCore

// MARK: - The user's preferences (PROTOCOL.md §9)

extension Inbox {
    /// `GET /v1/me/preferences`: every preference, by key.
    public func preferences(userId: String) async throws -> PreferenceList {
        PreferenceList(preferences: try await db { try await storage.preferences(userId: userId) })
    }

    /// `PATCH /v1/me/preferences` `{"preferences":[{"key","value","changedAt"}]}`: each entry is
    /// applied by §9's rule (the later `changedAt` wins per key; a tie goes to this write; a
    /// time ahead of the service's clock counts as now). A `null` or missing value unsets the
    /// key. Answers every preference after the write; the user's devices are rung.
    public func setPreferences(userId: String, body: Data) async throws -> PreferenceList {
        let now = clock.nowMillis()
        var entries: [PreferenceEntry] = []
        do throws(ValidationError) {
            let items = try JSONFields(body: body).array("preferences", required: true)!
            guard items.count <= PreferenceRules.maxPerWrite else {
                throw ValidationError("preferences has \(items.count) entries: send at most \(PreferenceRules.maxPerWrite) at once")
            }
            for (index, item) in items.enumerated() {
                let fields = try JSONFields(value: item, what: "preferences[\(index)]")
                let key = try fields.string("key", max: 256, required: true)!
                guard !key.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
                    throw ValidationError("preferences[\(index)]: the key contains a control character")
                }
                let value = fields.any("value") ?? .null
                guard value.jsonText.utf8.count <= PreferenceRules.maxValueBytes else {
                    throw ValidationError("preferences[\(index)]: the value of \(key) is longer than \(PreferenceRules.maxValueBytes) bytes as JSON")
                }
                let changedAt = try fields.clock("changedAt").map { ISOTime.date(millis: $0) } ?? now
                entries.append(PreferenceEntry(key: key, value: value, changedAt: min(changedAt, now)))
            }
        } catch {
            throw ServiceError.badRequest(error.message)
        }
        let known = Set(try await db { try await storage.preferences(userId: userId) }.map(\.key))
        let keys = known.union(entries.map(\.key))
        guard keys.count <= PreferenceRules.maxKeys else {
            throw ServiceError.badRequest("a user has at most \(PreferenceRules.maxKeys) preferences; this write would make \(keys.count)")
        }
        return PreferenceList(preferences: try await db { try await storage.setPreferences(userId: userId, entries) })
    }
}
