import Foundation
import NottyCore
import Synchronization

/// Where the service reads the time. Tests use ``ManualClock`` to move time on purpose
/// (expiry, snooze ends, token expiry) without sleeping.
public protocol ServiceClock: Sendable {
    func now() -> Date
}

extension ServiceClock {
    /// The time cut to milliseconds, so what is stored and what is answered agree.
    package func nowMillis() -> Date { ISOTime.truncated(now()) }
}

public struct SystemClock: ServiceClock {
    public init() {}
    public func now() -> Date { Date() }
}

/// A clock that only moves when told to.
public final class ManualClock: ServiceClock {
    private let current: Mutex<Date>
    public init(_ start: Date = Date(timeIntervalSince1970: 1_800_000_000)) { current = Mutex(start) }
    public func now() -> Date { current.withLock { $0 } }
    public func advance(by seconds: TimeInterval) { current.withLock { $0 += seconds } }
    public func set(_ date: Date) { current.withLock { $0 = date } }
}
