import Foundation
import GRDB
import NottyCore

/// The user's preferences on this device (PROTOCOL.md §9): the service's as the feed brought them,
/// and the ones set here, pending until the service has them. Per key the later `changedAt`
/// wins, as on the service; a pending one keeps a tie (it reaches the service later, and
/// there the later arrival wins).
extension LocalStore {
    /// Every preference as this device knows it, by key (unset ones with a `null` value).
    @available(
        *, noasync, message: "blocks on SQLite: call it inside `await store.perform { … }` (a thread of its own), never on Swift's cooperative pool"
    )
    public func preferences() throws -> [PreferenceEntry] {
        try database.read { db in try preferences(db) }
    }

    func preferences(_ db: Database) throws -> [PreferenceEntry] {
        try Row.fetchAll(db, sql: "SELECT key, value, changed_at FROM preferences ORDER BY key").map(Self.entry)
    }

    /// Sets a preference on this device, stamped by its hybrid clock and pending until sent.
    @available(
        *, noasync, message: "blocks on SQLite: call it inside `await store.perform { … }` (a thread of its own), never on Swift's cooperative pool"
    )
    @discardableResult
    public func setPreference(key: String, value: JSONValue, now: Date = Date()) throws -> PreferenceEntry {
        try write { db in try setPreference(db, key: key, value: value, now: now) }
    }

    func setPreference(_ db: Database, key: String, value: JSONValue, now: Date) throws -> PreferenceEntry {
        let clock = try nextClock(db, now: now)
        try setMeta(db, "hlc", String(clock))
        try db.execute(
            sql: """
                INSERT INTO preferences (key, value, changed_at, pending) VALUES (?, ?, ?, 1)
                ON CONFLICT (key) DO UPDATE SET value = excluded.value, changed_at = excluded.changed_at, pending = 1
                """, arguments: [key, value.jsonText, clock])
        try bumpRevision(db)
        return PreferenceEntry(key: key, value: value, changedAt: ISOTime.date(millis: clock))
    }

    /// Sets quiet (PROTOCOL.md §9) on this device, pending until sent: until `until` (`strict`: High
    /// too), or off when nil (inside a scheduled window, off until the window's end: the
    /// schedule goes on). The preferences it starts from are read in the same transaction.
    /// Answers the interruptions before the change and the value written.
    @available(
        *, noasync, message: "blocks on SQLite: call it inside `await store.perform { … }` (a thread of its own), never on Swift's cooperative pool"
    )
    @discardableResult
    public func setQuiet(until: Date?, strict: Bool = false, now: Date = Date()) throws -> (before: Interruptions, value: JSONValue) {
        try write { db in
            let before = Interruptions(preferences: try preferences(db), now: now)
            let value = until.map { Interruptions.quietValue(until: $0, strict: strict, skip: before.skip) } ?? before.offValue(now: now)
            _ = try setPreference(db, key: Interruptions.quietKey, value: value, now: now)
            return (before, value)
        }
    }

    /// The preferences set here and not yet acknowledged by the service.
    @available(
        *, noasync, message: "blocks on SQLite: call it inside `await store.perform { … }` (a thread of its own), never on Swift's cooperative pool"
    )
    public func pendingPreferences() throws -> [PreferenceEntry] {
        try database.read { db in
            try Row.fetchAll(db, sql: "SELECT key, value, changed_at FROM preferences WHERE pending = 1 ORDER BY key").map(Self.entry)
        }
    }

    /// The service's answer to `sent`: each sent one that is unchanged here takes the
    /// service's entry for its key (the winner, with the clock the service kept: it clamps one
    /// ahead of its own) and is no longer pending; the rest of the answer is applied by the rule.
    @available(
        *, noasync, message: "blocks on SQLite: call it inside `await store.perform { … }` (a thread of its own), never on Swift's cooperative pool"
    )
    public func acknowledgePreferences(sent: [PreferenceEntry], answer: [PreferenceEntry]) throws {
        try write { db in
            let answered = Dictionary(answer.map { ($0.key, $0) }, uniquingKeysWith: { _, last in last })
            for entry in sent {
                guard let winner = answered[entry.key] else { continue }
                try db.execute(
                    sql: """
                        UPDATE preferences SET value = ?, changed_at = ?, pending = 0 WHERE key = ? AND value = ? AND changed_at = ? AND pending = 1
                        """,
                    arguments: [
                        winner.value.jsonText, ISOTime.millis(winner.changedAt), entry.key, entry.value.jsonText, ISOTime.millis(entry.changedAt),
                    ])
            }
            if try applyServicePreferences(db, answer) { try bumpRevision(db) }
        }
    }

    /// Whether the service's preferences were fetched whole once (a device that synced before
    /// they existed has its cursor past them).
    @available(
        *, noasync, message: "blocks on SQLite: call it inside `await store.perform { … }` (a thread of its own), never on Swift's cooperative pool"
    )
    public func preferencesFetched() throws -> Bool {
        try database.read { db in try meta(db, "preferences_fetched") != nil }
    }

    /// Applies the service's whole list and remembers that it was fetched.
    @available(
        *, noasync, message: "blocks on SQLite: call it inside `await store.perform { … }` (a thread of its own), never on Swift's cooperative pool"
    )
    public func applyFetchedPreferences(_ entries: [PreferenceEntry]) throws {
        try write { db in
            if try applyServicePreferences(db, entries) { try bumpRevision(db) }
            try setMeta(db, "preferences_fetched", "1")
        }
    }

    /// Applies preferences from the service by the rule; answers whether any changed here.
    func applyServicePreferences(_ db: Database, _ entries: [PreferenceEntry]) throws -> Bool {
        var changed = false
        for entry in entries {
            let value = entry.value.jsonText, changedAt = ISOTime.millis(entry.changedAt)
            try observeClock(db, millis: changedAt)
            if let row = try Row.fetchOne(
                db.cachedStatement(sql: "SELECT value, changed_at, pending FROM preferences WHERE key = ?"), arguments: [entry.key])
            {
                let (storedValue, storedAt, pending): (String, Int64, Bool) = (row[0], row[1], row[2])
                if storedAt > changedAt || (pending && storedAt == changedAt) { continue }
                if storedValue == value && storedAt == changedAt && !pending { continue }
            }
            try db.cachedStatement(
                sql: """
                    INSERT INTO preferences (key, value, changed_at, pending) VALUES (?, ?, ?, 0)
                    ON CONFLICT (key) DO UPDATE SET value = excluded.value, changed_at = excluded.changed_at, pending = 0
                    """
            ).execute(arguments: [entry.key, value, changedAt])
            changed = true
        }
        return changed
    }

    static func entry(_ row: Row) -> PreferenceEntry {
        PreferenceEntry(key: row[0], value: JSONParser.parse(Data((row[1] as String).utf8)) ?? .null, changedAt: ISOTime.date(millis: row[2]))
    }
}
