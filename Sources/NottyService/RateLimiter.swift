import Foundation
import Synchronization

/// A token bucket per key (per app): `rate` per second, up to `burst` at once.
public final class RateLimiter: Sendable {
    private struct Bucket { var tokens: Double; var updated: Date }
    private let buckets = Mutex<[String: Bucket]>([:])
    let rate: Double
    let burst: Double

    public init(rate: Double, burst: Double) {
        self.rate = rate
        self.burst = max(burst, 1)
    }

    /// Takes `count` tokens for `key` (at most a burst's worth: a webhook's group of alerts);
    /// returns `nil` when allowed, else the seconds to wait.
    public func take(_ key: String, count: Int = 1, now: Date) -> Int? {
        let wanted = min(Double(max(count, 1)), burst)
        return buckets.withLock { buckets -> Int? in
            var bucket = buckets[key] ?? Bucket(tokens: burst, updated: now)
            let elapsed = max(0, now.timeIntervalSince(bucket.updated))
            bucket.tokens = min(burst, bucket.tokens + elapsed * rate)
            bucket.updated = now
            if bucket.tokens >= wanted {
                bucket.tokens -= wanted
                buckets[key] = bucket
                return nil
            }
            buckets[key] = bucket
            return max(1, Int(((wanted - bucket.tokens) / rate).rounded(.up)))
        }
    }
}
