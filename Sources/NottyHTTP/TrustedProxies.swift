import Foundation
import HTTPTypes
import NottyPOSIX

/// The proxies `--trusted-proxy` names (PROTOCOL.md §15): a request from one of them is taken at its
/// word for the client's address (`X-Forwarded-For`, the rightmost address that is not itself
/// a trusted proxy) and for having come over https (`X-Forwarded-Proto`). Anyone else's
/// forwarding headers are ignored: a client cannot pick the address its failed sign-ins are
/// counted under, nor make a cookie look secure.
public struct TrustedProxies: Sendable {
    let networks: [IPNetwork]

    /// Entries as `--trusted-proxy` takes them; one that is not an address or network is left out
    /// (`notty serve` refuses it first, with ``network(_:)``).
    public init(_ entries: [String]) {
        networks = entries.compactMap(Self.network)
    }

    /// `a.b.c.d` or an IPv6 address, either with `/bits`.
    static func network(_ text: String) -> IPNetwork? { IPNetwork(text, address: address) }

    /// Whether `entry` is one `--trusted-proxy` takes.
    public static func isNetwork(_ entry: String) -> Bool { network(entry) != nil }

    /// A peer's address as bytes; an IPv4-mapped one (a dual-stack socket's peer) as its IPv4 address.
    static func address(_ text: String) -> [UInt8]? {
        guard let bytes = IPNetwork.address(text) else { return nil }
        if bytes.count == 16, bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xFF, bytes[11] == 0xFF { return Array(bytes[12...]) }
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
