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
        let entries = try Self.preferenceEntries(body, now: clock.nowMillis())
        if let team = entries.first(where: { $0.key.hasPrefix(Interruptions.teamPrefix) }) {
            throw ServiceError.badRequest(
                "\(team.key.prefix(64)): keys that begin with team. are a team's mutes, which its owners write (notty mute --team TEAM)")
        }
        // A member sees their teams' mutes beside their own (PROTOCOL.md §16.4): they are not theirs to count.
        let stored = try await db { try await storage.preferences(userId: userId) }.filter { !$0.key.hasPrefix(Interruptions.teamPrefix) }
        do throws(ValidationError) {
            try SavedView.check(entries, over: stored)
        } catch {
            throw ServiceError.badRequest(error.message)
        }
        let known = Set(stored.map(\.key))
        let keys = known.union(entries.map(\.key))
        guard keys.count <= PreferenceRules.maxKeys else {
            throw ServiceError.badRequest("a user has at most \(PreferenceRules.maxKeys) preferences; this write would make \(keys.count)")
        }
        return PreferenceList(preferences: try await db { try await storage.setPreferences(userId: userId, entries) })
    }

    /// A preferences write's entries (`{"preferences":[{"key","value","changedAt"}]}`), `400`
    /// with words for a bad one.
    static func preferenceEntries(_ body: Data, now: Date) throws -> [PreferenceEntry] {
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
        return entries
    }

    // MARK: - A team's maintenance windows (PROTOCOL.md §16.4)

    /// `GET /v1/teams/{name}/preferences` (any member): the team's mutes and maintenance
    /// windows, `mute.app.<host>` and `mute.group.<name>` as a user's (§9).
    public func teamPreferences(team name: String, userId: String) async throws -> PreferenceList {
        let (team, _) = try await teams.membership(name: name, userId: userId)
        return PreferenceList(preferences: try await db { try await storage.preferences(userId: team.id) })
    }

    /// `PATCH /v1/teams/{name}/preferences` (owners): writes the team's mutes and windows as a
    /// user's preferences are written (§9: the later `changedAt` wins); only `mute.app.<host>`
    /// and `mute.group.<name>` keys, with a mute's value or `null`. Every member's devices see
    /// them as `team.<name>.mute.…` (their preferences and change feed) and hold that team's
    /// notifications back; the team's escalation policy is not paged inside them.
    public func setTeamPreferences(team name: String, userId: String, body: Data) async throws -> PreferenceList {
        let (team, role) = try await teams.membership(name: name, userId: userId)
        guard role == .owner else { throw ServiceError.forbidden("only the owners of \(team.name) mute its notifications") }
        let entries = try Self.preferenceEntries(body, now: clock.nowMillis())
        for entry in entries {
            guard Interruptions.muted(team: entry.key) else {
                throw ServiceError.badRequest("\(entry.key.prefix(64)): a team has mutes only, mute.app.HOST or mute.group.NAME")
            }
            guard entry.value == .null || Interruptions.isMuteValue(entry.value) else {
                throw ServiceError.badRequest("\(entry.key.prefix(64)): a mute is {\"until\": ISO time or null, \"from\"?: ISO time}, or null")
            }
        }
        let known = Set(try await db { try await storage.preferences(userId: team.id) }.map(\.key))
        guard known.union(entries.map(\.key)).count <= PreferenceRules.maxKeys else {
            throw ServiceError.badRequest("a team has at most \(PreferenceRules.maxKeys) mutes")
        }
        return PreferenceList(preferences: try await db { try await storage.setPreferences(userId: team.id, entries) })
    }
}
