import Foundation
import Synchronization

/// A small thread-safe cache whose entries are trusted for `ttl` seconds.
///
/// Used for the look-ups of every publish (app tokens, apps, subscriptions). Revocations and
/// deletions through this process remove entries at once, and other instances' (and
/// `notty admin`'s, on PostgreSQL) empty it through the storage's credentials announcement.
/// Other changes made elsewhere are seen within `ttl`.
///
/// A look-up that missed fills the entry only if nothing was removed meanwhile (``generation``),
/// so a record read just before a revocation is never cached after it.
package final class TTLCache<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    private struct Entry { var value: Value; var storedAt: ContinuousClock.Instant }
    private struct State { var entries: [Key: Entry] = [:]; var generation = 0 }
    private let state = Mutex(State())
    private let ttl: Duration
    private let capacity: Int

    package init(ttl: Duration, capacity: Int = 100_000) {
        self.ttl = ttl
        self.capacity = capacity
    }

    /// Changes whenever something is removed: read it before looking up what to ``set(_:_:generation:)``.
    var generation: Int { state.withLock { $0.generation } }

    package func get(_ key: Key) -> Value? {
        let now = ContinuousClock.now
        return state.withLock { state in
            guard let entry = state.entries[key] else { return nil }
            if now - entry.storedAt > ttl {
                state.entries[key] = nil
                return nil
            }
            return entry.value
        }
    }

    /// Stores `value` unless something was removed since `generation` was read.
    package func set(_ key: Key, _ value: Value, generation: Int) {
        let now = ContinuousClock.now
        state.withLock { state in
            guard state.generation == generation else { return }
            if state.entries.count >= capacity { state.entries.removeAll(keepingCapacity: true) }
            state.entries[key] = Entry(value: value, storedAt: now)
        }
    }

    /// The cached value for `key`, else what `load` reads, cached unless something was removed
    /// meanwhile (nothing found is not cached).
    package func value(_ key: Key, load: () async throws -> Value?) async rethrows -> Value? {
        if let value = get(key) { return value }
        let generation = self.generation
        guard let value = try await load() else { return nil }
        set(key, value, generation: generation)
        return value
    }

    package func remove(_ key: Key) {
        state.withLock { state in
            state.entries[key] = nil
            state.generation &+= 1
        }
    }

    package func removeAll() {
        state.withLock { state in
            state.entries.removeAll(keepingCapacity: true)
            state.generation &+= 1
        }
    }
}
