import Foundation
import Logging
import NottyCore
import Synchronization

/// What the service does by itself (`BackgroundJobs` runs it): expiry, forgetting old
/// history and old failed sign-ins.
public final class Maintenance: ServicePart {
    package let core: ServiceCore
    /// The storage this part uses: its concerns alone.
    let storage: any MaintenanceStorage

    init(core: ServiceCore, storage: any MaintenanceStorage) {
        self.core = core
        self.storage = storage
    }

    /// Deletes expired notifications and forgets history older than the retention period.
    public func expireDue() async throws -> Int {
        try await db { try await storage.expire(now: clock.nowMillis()) }
    }

    public func purgeHistory() async throws {
        let now = clock.nowMillis()
        let cutoff = now - TimeInterval(config.historyRetention)
        try await db { try await storage.purgeHistory(before: cutoff) }
        // Failed sign-ins long past (names that failed once, lockouts over): forgotten.
        let old = try await db { try await storage.allGuesses() }.filter { GuessKeys.policy(for: $0.key).forgettable($0, now: now) }
        if !old.isEmpty { _ = try await db { try await storage.forgetGuesses(keys: old.map(\.key)) } }
    }
}

/// What ``Maintenance`` asks of the storage.
public typealias MaintenanceStorage = RetentionStorage & SignInGuessStorage
