import Foundation
import NottyCore
import Synchronization

/// The ids the service makes, as lowercase UUIDs.
public enum Identifiers {
    /// Request ids only: every response shows one, and a few of them would give away this
    /// generator's state, so notification ids never come from it.
    private static let requestIdGenerator = Mutex(Xoshiro256())

    /// A notification's id: a UUID of version 8 (RFC 9562's layout for custom ids) whose
    /// first 32 bits are random, then come 42 bits of the time in milliseconds (16 before the
    /// version digit, 12 after it, 14 after the variant bits) and 48 random bits.
    ///
    /// - `notty list` shows an id's first eight characters and takes any unique prefix, so
    ///   those are random: they differ between notifications published together.
    /// - SQLite's index of ids is keyed by the id from its tenth character on, then its first
    ///   eight (``SQLiteStorage/idMatches``): the time comes first there, so a new id lands
    ///   beside the last one instead of on a random page of the index, one written page per
    ///   commit rather than one per publish. 42 bits of milliseconds last until 2109.
    /// - 80 random bits, from the system's generator: ids are not guessable from each other.
    public static func notification(now: Date = Date()) -> String {
        var system = SystemRandomNumberGenerator()
        let (high, low): (UInt64, UInt64) = (system.next(), system.next())
        let millis = UInt64(max(0, ISOTime.millis(now)))
        return format(
            high & 0xffff_ffff_0000_0000 | (millis >> 26 & 0xffff) << 16 | 0x8000 | millis >> 14 & 0x0fff,
            (millis & 0x3fff) << 48 | low & 0xffff_ffff_ffff)
    }

    /// A UUID of version 7, which begins with the time in milliseconds: request ids, which
    /// then sort by the millisecond they were made in. Their other bits come from xoshiro256**
    /// (seeded by the system's generator), without the two system calls the system's
    /// generator makes per id: unique, but not unguessable.
    public static func timeOrdered(now: Date = Date()) -> String {
        let (high, low) = requestIdGenerator.withLock { ($0.next(), $0.next()) }
        let millis = UInt64(max(0, ISOTime.millis(now)))  // the milliseconds createdDateTime shows
        return format(millis << 16 | 0x7000 | (high & 0x0fff), low)
    }

    /// The 16 bytes `high` then `low` in the 8-4-4-4-12 form, with the variant bits (10).
    private static func format(_ high: UInt64, _ low: UInt64) -> String {
        var bytes = (high.bigEndian, (0x8000_0000_0000_0000 | (low & 0x3fff_ffff_ffff_ffff)).bigEndian)
        return withUnsafeBytes(of: &bytes) { raw in
            String(unsafeUninitializedCapacity: 36) { out in
                var o = 0
                for (i, byte) in raw.enumerated() {
                    if i == 4 || i == 6 || i == 8 || i == 10 { out[o] = UInt8(ascii: "-"); o += 1 }
                    out[o] = Hex.digit(byte >> 4)
                    out[o + 1] = Hex.digit(byte & 0x0f)
                    o += 2
                }
                return o
            }
        }
    }
}

/// xoshiro256** (Blackman and Vigna, 2018), seeded with 256 bits from the system's generator.
struct Xoshiro256: RandomNumberGenerator {
    private var s: (UInt64, UInt64, UInt64, UInt64)

    init() {
        var system = SystemRandomNumberGenerator()
        repeat {
            s = (system.next(), system.next(), system.next(), system.next())
        } while s == (0, 0, 0, 0)
    }

    /// A fixed state (tests compare with the reference implementation).
    init(state: (UInt64, UInt64, UInt64, UInt64)) {
        s = state
    }

    mutating func next() -> UInt64 {
        let result = rotate(s.1 &* 5, 7) &* 9
        let t = s.1 << 17
        s.2 ^= s.0
        s.3 ^= s.1
        s.1 ^= s.2
        s.0 ^= s.3
        s.2 ^= t
        s.3 = rotate(s.3, 45)
        return result
    }

    private func rotate(_ x: UInt64, _ k: UInt64) -> UInt64 { (x << k) | (x >> (64 - k)) }
}

/// Delivery ids that sort in the order they were made (the outbox sends a target's deliveries
/// about one notification in that order): milliseconds, a counter, and a random tail so that
/// instances never make the same one.
public enum DeliveryIds {
    private static let counter = Atomic<UInt32>(0)

    public static func next(now: Date) -> String {
        let count = counter.add(1, ordering: .relaxed).newValue
        let millis = max(0, ISOTime.millis(now))
        return String(format: "%013lld-%08x-%08x", millis, count, UInt32.random(in: 0...UInt32.max))
    }
}
