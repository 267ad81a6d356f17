import Foundation

/// Failed sign-ins counted against one key: a user name (`user:alice`), a client id
/// (`client:…`) or a client address (`address:203.0.113.7`). Kept in storage, so that every
/// instance and `notty admin lockouts` see the same.
public struct GuessRecord: Sendable, Equatable {
    public var key: String
    /// Failures in the window that began at `windowStart`.
    public var failures: Int
    public var windowStart: Date
    /// Refused until then (no password hash is computed meanwhile).
    public var lockedUntil: Date?
    /// Lockouts so far; each lasts twice the one before.
    public var strikes: Int

    public init(key: String, failures: Int, windowStart: Date, lockedUntil: Date?, strikes: Int) {
        self.key = key
        self.failures = failures
        self.windowStart = windowStart
        self.lockedUntil = lockedUntil
        self.strikes = strikes
    }
}

/// How many failed guesses a key may have (PROTOCOL.md §2.1 has the grants; README, "Running the
/// service", the numbers): `limit` failures within `window` lock the key for `lockout`, and
/// a failure while the key has been locked before (within `memory`) locks it again at once
/// for twice as long, up to `longestLockout`.
public struct GuessPolicy: Sendable {
    public var limit: Int
    public var window: TimeInterval = 300
    public var lockout: TimeInterval = 60
    public var longestLockout: TimeInterval = 86_400
    /// How long a key that stopped failing keeps its strikes.
    public var memory: TimeInterval = 3_600

    public init(limit: Int) { self.limit = limit }

    /// Per user name and per client id: 10 failures in 5 minutes.
    public static let perName = GuessPolicy(limit: 10)
    /// Per client address: more, since several people may share one address.
    public static let perAddress = GuessPolicy(limit: 100)

    /// Seconds to wait when `record` is locked at `now`, else nil.
    public func refusal(_ record: GuessRecord?, now: Date) -> Int? {
        guard let until = record?.lockedUntil, until > now else { return nil }
        return max(1, Int((until.timeIntervalSince(now)).rounded(.up)))
    }

    /// `record` after one more failure at `now`.
    public func failed(_ record: GuessRecord?, key: String, now: Date) -> GuessRecord {
        var record = record ?? GuessRecord(key: key, failures: 0, windowStart: now, lockedUntil: nil, strikes: 0)
        let lastActivity = max(record.lockedUntil ?? record.windowStart, record.windowStart)
        if record.strikes > 0, now.timeIntervalSince(lastActivity) > memory { record.strikes = 0 }
        if now.timeIntervalSince(record.windowStart) > window {
            record.failures = 0
            record.windowStart = now
        }
        record.failures += 1
        // Over the limit, or failing again after a lockout: locked, each time twice as long.
        if record.failures >= limit || record.strikes > 0 {
            record.strikes += 1
            record.lockedUntil = now + min(longestLockout, lockout * pow(2, Double(record.strikes - 1)))
            record.failures = 0
            record.windowStart = now
        }
        return record
    }

    /// Whether `record` can be forgotten at `now` (not locked, no strikes worth keeping).
    public func forgettable(_ record: GuessRecord, now: Date) -> Bool {
        let last = max(record.lockedUntil ?? record.windowStart, record.windowStart)
        return now.timeIntervalSince(last) > max(window, memory)
    }
}

/// The keys a sign-in is counted against.
enum GuessKeys {
    static func user(_ name: String) -> String { "user:" + String(name.lowercased().prefix(256)) }
    static func client(_ id: String) -> String { "client:" + String(id.prefix(256)) }
    static func address(_ address: String) -> String { "address:" + address }

    static func policy(for key: String) -> GuessPolicy { key.hasPrefix("address:") ? .perAddress : .perName }
}
