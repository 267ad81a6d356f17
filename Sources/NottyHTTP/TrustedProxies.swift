import Foundation
import HTTPTypes

#if canImport(Glibc)
import Glibc
#endif

/// The proxies `--trusted-proxy` names (SPEC §15): a request from one of them is taken at its
/// word for the client's address (`X-Forwarded-For`, the rightmost address that is not itself
/// a trusted proxy) and for having come over https (`X-Forwarded-Proto`). Anyone else's
/// forwarding headers are ignored: a client cannot pick the address its failed sign-ins are
/// counted under, nor make a cookie look secure.
public struct TrustedProxies: Sendable {
    struct Network: Sendable {
        var bytes: [UInt8]
        var bits: Int

        func contains(_ address: [UInt8]) -> Bool {
            guard address.count == bytes.count else { return false }
            var left = bits
            for (a, b) in zip(address, bytes) where left > 0 {
                let mask: UInt8 = left >= 8 ? 0xFF : ~(0xFF >> UInt8(left))
                if a & mask != b & mask { return false }
                left -= 8
            }
            return true
        }
    }

    let networks: [Network]

    /// Entries as `--trusted-proxy` takes them; one that is not an address or network is left out
    /// (`notty serve` refuses it first, with ``network(_:)``).
    public init(_ entries: [String]) {
        networks = entries.compactMap(Self.network)
    }

    /// `a.b.c.d` or an IPv6 address, either with `/bits`.
    static func network(_ text: String) -> Network? {
        let parts = text.trimmingCharacters(in: .whitespaces).split(separator: "/", maxSplits: 1).map(String.init)
        guard let first = parts.first, let address = address(first) else { return nil }
        let most = address.count * 8
        guard parts.count == 2 else { return Network(bytes: address, bits: most) }
        guard let bits = Int(parts[1]), (0...most).contains(bits) else { return nil }
        return Network(bytes: address, bits: bits)
    }

    /// Whether `entry` is one `--trusted-proxy` takes.
    public static func isNetwork(_ entry: String) -> Bool { network(entry) != nil }

    static func address(_ text: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 { return withUnsafeBytes(of: &v4) { Array($0) } }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, text, &v6) == 1 else { return nil }
        let bytes = withUnsafeBytes(of: &v6) { Array($0) }
        // An IPv4-mapped address (a dual-stack socket's peer) is its IPv4 address.
        if bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xFF, bytes[11] == 0xFF { return Array(bytes[12...]) }
        return bytes
    }

    /// Whether `peer` (a socket's address, as text) is a trusted proxy.
    func trusts(_ peer: String?) -> Bool {
        guard !networks.isEmpty, let peer, let bytes = Self.address(peer) else { return false }
        return networks.contains { $0.contains(bytes) }
    }

    /// The client's address and whether it came over https, as `peer` and the headers say.
    func client(peer: String?, headers: HTTPFields) -> (address: String?, https: Bool) {
        guard trusts(peer) else { return (peer, false) }
        let proto = headers[HTTPField.Name("X-Forwarded-Proto")!]?.split(separator: ",").first?.trimmingCharacters(in: .whitespaces).lowercased()
        var address = peer
        let forwarded = headers[values: HTTPField.Name("X-Forwarded-For")!].flatMap { $0.split(separator: ",") }
            .map { $0.trimmingCharacters(in: .whitespaces) }
        for hop in forwarded.reversed() {
            guard Self.address(hop) != nil else { break }
            address = hop
            if !trusts(hop) { break }
        }
        return (address, proto == "https")
    }
}
