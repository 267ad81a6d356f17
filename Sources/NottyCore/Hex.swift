/// Lowercase hexadecimal, written by hand for the paths that run per request (JSON escapes,
/// ids, token hashes).
public enum Hex {
    /// The digit for `value` (0...15).
    @inlinable
    public static func digit(_ value: UInt8) -> UInt8 {
        value < 10 ? UInt8(ascii: "0") + value : UInt8(ascii: "a") + value - 10
    }

    /// Two digits per byte.
    public static func string(_ bytes: some Sequence<UInt8>) -> String {
        var text = [UInt8]()
        text.reserveCapacity(bytes.underestimatedCount * 2)
        for byte in bytes {
            text.append(digit(byte >> 4))
            text.append(digit(byte & 0x0f))
        }
        return String(decoding: text, as: UTF8.self)
    }
}
