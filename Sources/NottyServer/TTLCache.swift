import Foundation
import Synchronization

/// A small thread-safe cache whose entries are trusted for `ttl` seconds.
///
/// Used for look-ups on every request (tokens, apps, subscriptions). Changes made through this
/// process invalidate entries at once; changes made elsewhere (`notty admin` in another
/// process, another instance) are seen within `ttl`.
final class TTLCache<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    private struct Entry { var value: Value; var storedAt: ContinuousClock.Instant }
    private let entries = Mutex<[Key: Entry]>([:])
    private let ttl: Duration
    private let capacity: Int

    init(ttl: Duration, capacity: Int = 100_000) {
        self.ttl = ttl
        self.capacity = capacity
    }

    func get(_ key: Key) -> Value? {
        let now = ContinuousClock.now
        return entries.withLock { entries in
            guard let entry = entries[key] else { return nil }
            if now - entry.storedAt > ttl {
                entries[key] = nil
                return nil
            }
            return entry.value
        }
    }

    func set(_ key: Key, _ value: Value) {
        let now = ContinuousClock.now
        entries.withLock { entries in
            if entries.count >= capacity { entries.removeAll(keepingCapacity: true) }
            entries[key] = Entry(value: value, storedAt: now)
        }
    }

    func remove(_ key: Key) {
        _ = entries.withLock { $0.removeValue(forKey: key) }
    }
}
