import Foundation
import NottyCore
#if canImport(Glibc)
import Glibc
#endif

/// Where the service may send an action's request (SPEC §12): never a link-local address (a
/// cloud's metadata service lives there) nor the service itself (its listening address, its
/// public URL); with `--action-allow`, only the hosts and networks named.
public struct ActionTargets: Sendable {
    /// An address and how many leading bits of it count.
    struct Network: Sendable, Equatable {
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

    let allowedHosts: Set<String>
    let allowedNetworks: [Network]
    let ownHost: String
    let ownPort: Int
    /// `--public-url`'s host and port, when it is set.
    let publicAuthority: (host: String, port: Int)?

    static let linkLocal = [Network(bytes: [169, 254, 0, 0], bits: 16), Network(bytes: [0xFE, 0x80] + Array(repeating: 0, count: 14), bits: 10)]

    /// `allow`: host names and CIDR networks (`10.0.0.0/8`, `192.168.1.20`, `fd00::/8`).
    public init(allow: [String], host: String, port: Int, publicURL: String?) throws(ValidationError) {
        var hosts: Set<String> = []
        var networks: [Network] = []
        for entry in allow {
            let trimmed = entry.trimmingCharacters(in: .whitespaces)
            if let network = Self.network(trimmed) {
                networks.append(network)
            } else if !trimmed.isEmpty, !trimmed.contains("/"), trimmed.unicodeScalars.allSatisfy({ $0.properties.isAlphabetic || ("0"..."9").contains($0) || "-.".unicodeScalars.contains($0) }) {
                hosts.insert(trimmed.lowercased())
            } else {
                throw ValidationError("--action-allow \(entry): give a host name (hooks.example.com) or an address or network (10.0.0.0/8, fd00::/8)")
            }
        }
        allowedHosts = hosts
        allowedNetworks = networks
        ownHost = host
        ownPort = port
        publicAuthority = publicURL.flatMap { URLComponents(string: $0) }.flatMap { c in
            c.host.map { ($0.lowercased(), c.port ?? (c.scheme?.lowercased() == "https" ? 443 : 80)) }
        }
    }

    /// Why the service will not call `url`, or nil when it may. Names are resolved here; each
    /// address they resolve to must be allowed.
    public func refusal(_ url: String) async -> String? {
        guard let components = URLComponents(string: url), let rawHost = components.host, !rawHost.isEmpty else { return "not an http(s) URL" }
        let host = rawHost.hasPrefix("[") ? String(rawHost.dropFirst().dropLast()).lowercased() : rawHost.lowercased()
        let port = components.port ?? (components.scheme?.lowercased() == "https" ? 443 : 80)
        if let own = publicAuthority, own.host == host, own.port == port { return "the action's URL is this service's own (--public-url)" }
        let addresses = await Self.resolve(host)
        guard !addresses.isEmpty else { return "cannot resolve \(host)" }
        for address in addresses {
            if Self.linkLocal.contains(where: { $0.contains(address) }) || Self.linkLocal.contains(where: { $0.contains(Self.unmapped(address)) }) {
                return "\(host) is a link-local address: actions never call those"
            }
            if port == ownPort, Self.isOwn(Self.unmapped(address), listening: ownHost) {
                return "\(host):\(port) is this service's own listening address"
            }
        }
        guard !allowedHosts.isEmpty || !allowedNetworks.isEmpty else { return nil }
        if allowedHosts.contains(host) { return nil }
        let allInAllowed = addresses.allSatisfy { address in allowedNetworks.contains { $0.contains(address) || $0.contains(Self.unmapped(address)) } }
        return allInAllowed ? nil : "\(host) is not among the targets this service allows (notty serve --action-allow)"
    }

    /// `a.b.c.d`, an IPv6 address, either with `/bits`.
    static func network(_ text: String) -> Network? {
        let parts = text.split(separator: "/", maxSplits: 1).map(String.init)
        guard let first = parts.first, let address = address(first) else { return nil }
        let most = address.count * 8
        guard parts.count == 2 else { return Network(bytes: address, bits: most) }
        guard let bits = Int(parts[1]), (0...most).contains(bits) else { return nil }
        return Network(bytes: address, bits: bits)
    }

    /// The bytes of a numeric IPv4 or IPv6 address.
    static func address(_ text: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 { return withUnsafeBytes(of: &v4) { Array($0) } }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 { return withUnsafeBytes(of: &v6) { Array($0) } }
        return nil
    }

    /// An IPv4-mapped IPv6 address (`::ffff:a.b.c.d`) as its IPv4 address.
    static func unmapped(_ address: [UInt8]) -> [UInt8] {
        if address.count == 16, address[0..<10].allSatisfy({ $0 == 0 }), address[10] == 0xFF, address[11] == 0xFF { return Array(address[12...]) }
        return address
    }

    /// Whether `address` is where this service listens: its own host, or a loopback or
    /// local address when it listens on every one.
    static func isOwn(_ address: [UInt8], listening: String) -> Bool {
        let ipv6Loopback: [UInt8] = Array(repeating: 0, count: 15) + [1]
        func isLoopback(_ a: [UInt8]) -> Bool { (a.count == 4 && a[0] == 127) || a == ipv6Loopback }
        let unspecified = address.allSatisfy { $0 == 0 }
        // A name ("localhost"): what it resolves to locally is loopback.
        guard let own = Self.address(listening) else { return isLoopback(address) || unspecified }
        if own.allSatisfy({ $0 == 0 }) { return isLoopback(address) || unspecified || localAddresses().contains(address) }
        return own == address || (isLoopback(own) && isLoopback(address))
    }

    /// This machine's interface addresses.
    static func localAddresses() -> [[UInt8]] {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0, let first = list else { return [] }
        defer { freeifaddrs(list) }
        var found: [[UInt8]] = []
        var cursor: UnsafeMutablePointer<ifaddrs>? = first
        while let entry = cursor {
            if let sa = entry.pointee.ifa_addr { if let bytes = bytes(of: sa) { found.append(bytes) } }
            cursor = entry.pointee.ifa_next
        }
        return found
    }

    static func bytes(of sa: UnsafePointer<sockaddr>) -> [UInt8]? {
        switch Int32(sa.pointee.sa_family) {
        case AF_INET:
            return sa.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { p in withUnsafeBytes(of: p.pointee.sin_addr) { Array($0) } }
        case AF_INET6:
            return sa.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { p in withUnsafeBytes(of: p.pointee.sin6_addr) { Array($0) } }
        default:
            return nil
        }
    }

    /// The addresses `host` stands for (a numeric one itself), resolved off Swift's pool.
    static func resolve(_ host: String) async -> [[UInt8]] {
        if let numeric = address(host) { return [numeric] }
        return await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                var hints = addrinfo()
                hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
                var result: UnsafeMutablePointer<addrinfo>?
                guard getaddrinfo(host, nil, &hints, &result) == 0, let first = result else {
                    continuation.resume(returning: [])
                    return
                }
                defer { freeaddrinfo(result) }
                var found: [[UInt8]] = []
                var cursor: UnsafeMutablePointer<addrinfo>? = first
                while let entry = cursor {
                    if let sa = entry.pointee.ai_addr, let bytes = bytes(of: UnsafePointer(sa)) { found.append(bytes) }
                    cursor = entry.pointee.ai_next
                }
                continuation.resume(returning: found)
            }
        }
    }
}
