import Foundation
import NottyCore

/// The ids the service makes: lowercase UUIDs of version 7, which begin with the time in
/// milliseconds. A new notification's id therefore lands at the end of the id index, on a
/// page the last write already touched, instead of on a random page that every group
/// commit would have to write again (version 4). 74 random bits keep ids unguessable.
public enum Identifiers {
    private static let hexDigits = Array("0123456789abcdef".utf8)

    public static func timeOrdered(now: Date = Date()) -> String {
        var random = SystemRandomNumberGenerator()
        let high: UInt64 = random.next()
        let low: UInt64 = random.next()
        let millis = UInt64(max(0, ISOTime.millis(now)))  // the milliseconds createdDateTime shows
        var bytes: (UInt64, UInt64) = (
            millis << 16 | 0x7000 | (high & 0x0fff),                               // time, version 7, 12 random bits
            0x8000_0000_0000_0000 | (low & 0x3fff_ffff_ffff_ffff))                 // variant 10, 62 random bits
        bytes = (bytes.0.bigEndian, bytes.1.bigEndian)
        return withUnsafeBytes(of: &bytes) { raw in
            String(unsafeUninitializedCapacity: 36) { out in
                var o = 0
                for (i, byte) in raw.enumerated() {
                    if i == 4 || i == 6 || i == 8 || i == 10 { out[o] = UInt8(ascii: "-"); o += 1 }
                    out[o] = hexDigits[Int(byte >> 4)]
                    out[o + 1] = hexDigits[Int(byte & 0x0f)]
                    o += 2
                }
                return o
            }
        }
    }
}

extension StringProtocol {
    /// Equal when ASCII letters are folded to one case, as SQLite's `NOCASE` compares: the
    /// rule for app host names, which are ASCII (international names travel as punycode).
    func equalsIgnoringASCIICase(_ other: some StringProtocol) -> Bool {
        utf8.elementsEqual(other.utf8) { a, b in
            a == b || (a ^ b == 0x20 && (a | 0x20) >= UInt8(ascii: "a") && (a | 0x20) <= UInt8(ascii: "z"))
        }
    }
}
