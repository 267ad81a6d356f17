import Foundation
import NottyCore
import NottyPOSIX
import NottyService

#if canImport(Glibc)
import Glibc
#endif

/// Where a request that a user aimed may go (docs/PROTOCOL.md, "Outbound requests"): an
/// escalation's or a contact's target, an action's URL, a Web Push endpoint. One policy for all
/// of them, applied where every such request is sent (``HTTPClientOutbound``):
///
/// - never a link-local address (169.254.0.0/16, fe80::/10: a cloud's metadata service lives
///   there), an unspecified one (0.0.0.0/8, ::), a multicast or broadcast one, nor one of those
///   inside an IPv6 form (IPv4-mapped `::ffff:a.b.c.d`, IPv4-compatible `::a.b.c.d`, NAT64
///   `64:ff9b::a.b.c.d`);
/// - never the service itself: its listening address and port, or its `--public-url`;
/// - with `--outbound-allow` (formerly `--action-allow`), only the hosts and networks named.
///
/// A name is resolved once, every address it stands for must pass, and the request connects to
/// the address that was checked (no second lookup that a rebinding name could answer otherwise).
/// Loopback is allowed (a receiver on the same machine), but for the service's own port.
public struct OutboundPolicy: Sendable {
    /// An address and how many leading bits of it count.
    public typealias Network = IPNetwork

    /// Where the service listens: its own address, which a request never goes to.
    public struct Listener: Sendable, Equatable {
        public var host: String
        public var port: Int
        public init(host: String, port: Int) {
            self.host = host
            self.port = port
        }
    }

    /// A request's destination once checked: the address to connect to (numeric) for the URL's
    /// host, which stays the name that TLS and the `Host` header use.
    public struct Destination: Sendable, Equatable {
        public var host: String
        public var address: String
        public var port: Int
        public init(host: String, address: String, port: Int) {
            self.host = host
            self.address = address
            self.port = port
        }
    }

    /// Looks a name up: the addresses it stands for, as bytes (4 or 16 each).
    public typealias Resolver = @Sendable (String) async -> [[UInt8]]

    let allowedHosts: Set<String>
    let allowedNetworks: [Network]
    /// Updated once the listener is bound (a port of 0 picks one): see ``listening(on:)``.
    private(set) var listeners: [Listener]
    /// `--public-url`'s host and port, when it is set.
    let publicAuthority: (host: String, port: Int)?
    let resolve: Resolver

    /// The flag's name in messages: where an administrator changes the list.
    public static let allowFlag = "--outbound-allow"

    /// `allow`: host names and CIDR networks (`10.0.0.0/8`, `192.168.1.20`, `fd00::/8`); empty
    /// allows any address that is not refused always. `resolver` is the system's
    /// (`getaddrinfo`) unless a test gives its own.
    public init(
        allow: [String] = [], listeners: [Listener] = [], publicURL: String? = nil,
        resolver: Resolver? = nil
    ) throws(ValidationError) {
        var hosts: Set<String> = []
        var networks: [Network] = []
        for entry in allow {
            let trimmed = entry.trimmingCharacters(in: .whitespaces)
            if let network = Self.network(trimmed) {
                networks.append(network)
            } else if !trimmed.isEmpty, !trimmed.contains("/"),
                trimmed.unicodeScalars.allSatisfy({ $0.properties.isAlphabetic || ("0"..."9").contains($0) || "-.".unicodeScalars.contains($0) })
            {
                hosts.insert(trimmed.lowercased())
            } else {
                throw ValidationError(
                    "\(Self.allowFlag) \(entry): give a host name (hooks.example.com) or an address or network (10.0.0.0/8, fd00::/8)")
            }
        }
        allowedHosts = hosts
        allowedNetworks = networks
        self.listeners = listeners
        publicAuthority = publicURL.flatMap(HTTPURL.init).map { (Self.canonical($0.host), $0.port) }
        resolve = resolver ?? { await Self.systemResolve($0) }
    }

    /// The same policy for a service that is now bound to `port` (the flag said 0).
    public func listening(on port: Int) -> OutboundPolicy {
        var policy = self
        policy.listeners = listeners.map { Listener(host: $0.host, port: $0.port == 0 ? port : $0.port) }
        return policy
    }

    // MARK: - Checking

    /// Why `url` is refused before any name is looked up (its form, a refused literal address,
    /// the service's own public URL), or nil: what a rule is checked against when it is made.
    /// A name that passes here is checked again, resolved, at each request.
    public func refusalBeforeLookup(_ url: String) -> String? {
        switch parse(url) {
        case .failure(let refusal): return refusal.reason
        case .success(let parsed):
            guard let address = Self.address(parsed.host) else { return nil }
            return refusal(host: parsed.host, port: parsed.port, addresses: [address])
        }
    }

    /// Resolves `url`'s host once and checks every address it stands for: the destination to
    /// connect to, or why not.
    public func check(_ url: String) async -> Result<Destination, Refusal> {
        let parsed: (host: String, port: Int)
        switch parse(url) {
        case .failure(let refusal): return .failure(refusal)
        case .success(let value): parsed = value
        }
        var addresses: [[UInt8]]
        if let literal = Self.address(parsed.host) { addresses = [literal] } else { addresses = await resolve(parsed.host) }
        guard let first = addresses.first else { return .failure(Refusal(reason: "cannot resolve \(parsed.host)", isLookup: true)) }
        if let reason = refusal(host: parsed.host, port: parsed.port, addresses: addresses) { return .failure(Refusal(reason: reason)) }
        return .success(Destination(host: parsed.host, address: Self.text(first), port: parsed.port))
    }

    /// Why a request was not made: refused by the policy, or its name could not be resolved
    /// (``isLookup``: a later try may succeed).
    public struct Refusal: Error, Sendable, Equatable {
        public var reason: String
        public var isLookup = false

        /// The error a send throws for it: a name that did not resolve is unreachable (a later
        /// try may do), anything else not allowed.
        public var error: OutboundError { isLookup ? .unreachable(reason) : .notAllowed(reason) }
    }

    /// A URL's host (lower case, without brackets) and port, or why it is not one to call.
    private func parse(_ url: String) -> Result<(host: String, port: Int), Refusal> {
        guard let parsed = HTTPURL(url) else { return .failure(Refusal(reason: "not an http(s) URL")) }
        let (host, port) = (Self.canonical(parsed.host), parsed.port)
        if let own = publicAuthority, own.host == host, own.port == port {
            return .failure(Refusal(reason: "\(host) is this service's own address (--public-url)"))
        }
        return .success((host, port))
    }

    /// Why a host whose name stands for `addresses` is refused, or nil.
    func refusal(host: String, port: Int, addresses: [[UInt8]]) -> String? {
        for address in addresses {
            for form in Self.forms(address) {
                if let kind = Self.refusedKind(form) { return "\(host) is \(kind) address (\(Self.text(address))): the service never sends there" }
                if form != address, listeners.contains(where: { $0.port == port && Self.isOwn(form, listening: $0.host) }) {
                    return "\(host):\(port) is this service's own listening address"
                }
            }
            if listeners.contains(where: { $0.port == port && Self.isOwn(Self.unmapped(address), listening: $0.host) }) {
                return "\(host):\(port) is this service's own listening address"
            }
        }
        guard !allowedHosts.isEmpty || !allowedNetworks.isEmpty else { return nil }
        if allowedHosts.contains(host) { return nil }
        let allInAllowed = addresses.allSatisfy { address in Self.forms(address).contains { form in allowedNetworks.contains { $0.contains(form) } } }
        return allInAllowed ? nil : "\(host) is not among the hosts this service allows (notty serve \(Self.allowFlag))"
    }

    /// A host name as a resolver reads it, however it is spelled: percent-escapes decoded,
    /// lower case, without the root's trailing dot (`NOTTY.example.com.` is `notty.example.com`).
    static func canonical(_ host: String) -> String {
        var name = (host.removingPercentEncoding ?? host).lowercased()
        while name.hasSuffix("."), name.count > 1 { name.removeLast() }
        return name
    }

    // MARK: - Addresses

    static let linkLocal = [Network(bytes: [169, 254, 0, 0], bits: 16), Network(bytes: [0xFE, 0x80] + Array(repeating: 0, count: 14), bits: 10)]
    static let unspecified = [Network(bytes: [0, 0, 0, 0], bits: 8), Network(bytes: Array(repeating: 0, count: 16), bits: 128)]
    static let multicast = [
        Network(bytes: [224, 0, 0, 0], bits: 4), Network(bytes: [255, 255, 255, 255], bits: 32),
        Network(bytes: [0xFF] + Array(repeating: 0, count: 15), bits: 8),
    ]
    /// The clouds' metadata services that are not link-local (PROTOCOL.md §15): AWS's IPv6 one
    /// (`fd00:ec2::254`), Alibaba's (`100.100.100.200`), Azure's wire server (`168.63.129.16`)
    /// and Oracle's (`192.0.0.192`).
    static let metadata = [
        Network(bytes: [0xFD, 0, 0x0E, 0xC2] + Array(repeating: 0, count: 10) + [0x02, 0x54], bits: 128),
        Network(bytes: [100, 100, 100, 200], bits: 32), Network(bytes: [168, 63, 129, 16], bits: 32),
        Network(bytes: [192, 0, 0, 192], bits: 32),
    ]

    /// "a link-local", "an unspecified", "a multicast", "a cloud metadata": what kind of
    /// refused address this is.
    static func refusedKind(_ address: [UInt8]) -> String? {
        if linkLocal.contains(where: { $0.contains(address) }) { return "a link-local" }
        if unspecified.contains(where: { $0.contains(address) }) { return "an unspecified" }
        if multicast.contains(where: { $0.contains(address) }) { return "a multicast or broadcast" }
        if metadata.contains(where: { $0.contains(address) }) { return "a cloud metadata service's" }
        return nil
    }

    /// The address and every IPv4 address hidden inside it, if it is an IPv6 form of one.
    static func forms(_ address: [UInt8]) -> [[UInt8]] {
        [address] + embedded(address).filter { $0 != address }
    }

    /// The IPv4 address inside an IPv4-mapped (`::ffff:a.b.c.d`), IPv4-compatible (`::a.b.c.d`,
    /// but `::` and `::1`), IPv4-translated (`::ffff:0:a.b.c.d`) or NAT64 (`64:ff9b::a.b.c.d`)
    /// IPv6 address; any other as it is. The address connected to when an IPv6 address stands
    /// for an IPv4 one.
    static func unmapped(_ address: [UInt8]) -> [UInt8] {
        guard address.count == 16 else { return address }
        let tail = Array(address[12...])
        if address[0..<10].allSatisfy({ $0 == 0 }), address[10] == 0xFF, address[11] == 0xFF { return tail }
        if address[0..<8].allSatisfy({ $0 == 0 }), address[8] == 0xFF, address[9] == 0xFF, address[10] == 0, address[11] == 0 { return tail }
        if address[0..<12].allSatisfy({ $0 == 0 }), !(tail[0] == 0 && tail[1] == 0 && tail[2] == 0 && tail[3] <= 1) { return tail }
        if address[0..<12] == [0, 0x64, 0xFF, 0x9B, 0, 0, 0, 0, 0, 0, 0, 0][...] { return tail }
        return address
    }

    /// Every IPv4 address an IPv6 address may carry to one (PROTOCOL.md §15): the forms of
    /// ``unmapped(_:)``, 6to4 (`2002:a.b.c.d::/48`, RFC 3056) and NAT64's local-use prefix
    /// (`64:ff9b:1::/48`, RFC 8215: at RFC 6052's place for a /48 and in the last 32 bits, as
    /// translators are set up either way).
    static func embedded(_ address: [UInt8]) -> [[UInt8]] {
        guard address.count == 16 else { return [] }
        var found: [[UInt8]] = []
        let inner = unmapped(address)
        if inner != address { found.append(inner) }
        if address[0] == 0x20, address[1] == 0x02 { found.append(Array(address[2..<6])) }
        if address[0..<6] == [0, 0x64, 0xFF, 0x9B, 0, 0x01][...] {
            // Either place, whichever holds an address (the other is zeros then).
            let tail = Array(address[12...]), rfc6052 = [address[6], address[7], address[9], address[10]]
            found += [tail, rfc6052].filter { $0 != [0, 0, 0, 0] }
            if found.isEmpty { found.append(tail) }
        }
        return found
    }

    /// `a.b.c.d`, an IPv6 address, either with `/bits` (the address in every form ``address(_:)`` reads).
    static func network(_ text: String) -> Network? {
        IPNetwork(text, address: address)
    }

    /// The bytes of a numeric IPv4 or IPv6 address: IPv4 in every form the resolver reads as
    /// one (`169.254.169.254`, `2852039166`, `0xa9.0xfe.43518`).
    static func address(_ text: String) -> [UInt8]? {
        var v4 = in_addr()
        if !text.isEmpty, text.allSatisfy({ $0.isHexDigit || $0 == "." || $0 == "x" || $0 == "X" }), inet_aton(text, &v4) != 0 {
            return withUnsafeBytes(of: &v4) { Array($0) }
        }
        var v6 = in6_addr()
        let bare = text.contains(":") ? String(text.prefix { $0 != "%" }) : text  // fe80::1%eth0: the zone does not matter here
        if inet_pton(AF_INET6, bare, &v6) == 1 { return withUnsafeBytes(of: &v6) { Array($0) } }
        return nil
    }

    /// An address's bytes as text (`169.254.169.254`, `fe80::1`).
    static func text(_ address: [UInt8]) -> String {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        let family = address.count == 4 ? AF_INET : AF_INET6
        let ok = address.withUnsafeBytes { inet_ntop(family, $0.baseAddress, &buffer, socklen_t(buffer.count)) } != nil
        guard ok else { return address.map(String.init).joined(separator: ".") }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Whether `address` is where this service listens: its own host, or a loopback or local
    /// address when it listens on every one.
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
            if let sa = entry.pointee.ifa_addr, let bytes = bytes(of: sa) { found.append(bytes) }
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

    /// The addresses `host` stands for, from `getaddrinfo` (which also reads the numeric forms
    /// `inet_pton` does not: `2852039166`, `0xa9.0xfe.0xa9.0xfe`), looked up off Swift's pool.
    static func systemResolve(_ host: String) async -> [[UInt8]] {
        await onDispatch {
            var hints = addrinfo()
            hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
            var result: UnsafeMutablePointer<addrinfo>?
            guard getaddrinfo(host, nil, &hints, &result) == 0, let first = result else { return [] }
            defer { freeaddrinfo(result) }
            var found: [[UInt8]] = []
            var cursor: UnsafeMutablePointer<addrinfo>? = first
            while let entry = cursor {
                if let sa = entry.pointee.ai_addr, let bytes = bytes(of: UnsafePointer(sa)), !found.contains(bytes) { found.append(bytes) }
                cursor = entry.pointee.ai_next
            }
            return found
        }
    }
}
