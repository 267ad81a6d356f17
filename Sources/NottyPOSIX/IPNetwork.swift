import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// An IPv4 or IPv6 network: an address and how many leading bits of it count (`10.0.0.0/8`,
/// `fd00::/8`; a bare address is all its bits). What `--outbound-allow` and `--trusted-proxy`
/// take, and the ranges the outbound policy refuses.
public struct IPNetwork: Sendable, Equatable {
    /// 4 bytes, or 16.
    public var bytes: [UInt8]
    public var bits: Int

    public init(bytes: [UInt8], bits: Int) {
        self.bytes = bytes
        self.bits = bits
    }

    /// `a.b.c.d` or an IPv6 address, either with `/bits`; nil when it is not one. `address`
    /// reads the address part (``IPNetwork/address(_:)`` unless the caller reads more forms).
    public init?(_ text: String, address: (String) -> [UInt8]? = IPNetwork.address) {
        let parts = text.trimmingCharacters(in: .whitespaces).split(separator: "/", maxSplits: 1).map(String.init)
        guard let first = parts.first, let bytes = address(first) else { return nil }
        let most = bytes.count * 8
        var bits = most
        if parts.count == 2 {
            guard let given = Int(parts[1]), (0...most).contains(given) else { return nil }
            bits = given
        }
        self.init(bytes: bytes, bits: bits)
    }

    /// Whether `address` (4 or 16 bytes) is in this network.
    public func contains(_ address: [UInt8]) -> Bool {
        guard address.count == bytes.count else { return false }
        var left = bits
        for (a, b) in zip(address, bytes) where left > 0 {
            let mask: UInt8 = left >= 8 ? 0xFF : ~(0xFF >> UInt8(left))
            if a & mask != b & mask { return false }
            left -= 8
        }
        return true
    }

    /// The bytes of a numeric address in its plain form (`inet_pton`: `10.1.2.3`, `fd00::1`).
    public static func address(_ text: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 { return withUnsafeBytes(of: &v4) { Array($0) } }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, text, &v6) == 1 else { return nil }
        return withUnsafeBytes(of: &v6) { Array($0) }
    }
}
