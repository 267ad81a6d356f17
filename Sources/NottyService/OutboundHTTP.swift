import Foundation
import NottyCore

extension EscalationTarget {
    /// Why the outbound policy refuses this target before any name is looked up (a literal
    /// address it refuses, the service's own URL), or nil: a rule or a contact naming it is
    /// refused when it is made. A command is the administrator's, not a destination.
    public func refusal(by outbound: (any OutboundHTTP)?) -> String? {
        switch self {
        case .ntfy(let url), .webhook(let url): outbound?.refusalBeforeLookup(url)
        case .command: nil
        }
    }
}

/// A request the service makes to another service: an escalation's target or a member's
/// on-call contact, an action, a browser's Web Push endpoint, the ntfy upstream. The domain says what to send; how it is sent (AsyncHTTPClient in `NottyOutbound`,
/// a recording in the tests) is the implementation's, and so is the outbound policy that every
/// request a user aimed goes through (docs/PROTOCOL.md, "Outbound requests").
public struct OutboundRequest: Sendable, Equatable {
    /// Who chose where the request goes.
    public enum Aim: Sendable, Equatable {
        /// A user (escalation and contact targets, actions, Web Push endpoints): the outbound
        /// policy applies.
        case user
        /// The administrator, with a flag of `notty serve` (`--ntfy-upstream`): sent as is.
        case administrator
    }

    public var aim: Aim
    public var method: String
    public var url: String
    public var headers: [OutboundHeader]
    public var body: Data?
    /// The whole request, from connecting to the last byte of the answer.
    public var timeout: Duration

    public init(
        method: String, url: String, headers: [OutboundHeader] = [], body: Data? = nil, timeout: Duration = .seconds(15),
        aim: Aim = .user
    ) {
        self.aim = aim
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.timeout = timeout
    }
}

public struct OutboundHeader: Sendable, Equatable {
    public var name: String
    public var value: String
    public init(_ name: String, _ value: String) {
        self.name = name
        self.value = value
    }
}

/// The answer: its status, headers and at most ``OutboundHTTP/maxBodyBytes`` of its body
/// (callers never store or show a body: it is read for the few that say something, and so
/// that the connection can be reused).
public struct OutboundResponse: Sendable, Equatable {
    public var status: Int
    public var headers: [OutboundHeader]
    public var body: Data

    public init(status: Int, headers: [OutboundHeader] = [], body: Data = Data()) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// Whether the other side took the request (2xx).
    public var succeeded: Bool { (200..<300).contains(status) }
    /// Whether the same request may succeed later (``HTTPStatusRule``).
    public var isWorthRetrying: Bool { HTTPStatusRule.isWorthRetrying(status) }

    public func header(_ name: String) -> String? {
        headers.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }?.value
    }
}

/// Why a request got no answer: each in words an operator can act on (`escalate --list` and
/// the logs show them).
public enum OutboundError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Not an absolute http(s) URL with a host.
    case invalidURL(String)
    /// No answer within the request's timeout.
    case timedOut(Duration)
    /// The connection could not be made or broke (refused, DNS, TLS, reset).
    case unreachable(String)
    /// The outbound policy refuses the destination (a link-local, unspecified or multicast
    /// address, the service itself, a host outside `--outbound-allow`): no connection was made.
    case notAllowed(String)

    public var description: String {
        switch self {
        case .invalidURL(let url): "not an http(s) URL: \(url)"
        case .timedOut(let timeout): "no answer within \(timeout)"
        case .unreachable(let reason): "unreachable: \(reason)"
        case .notAllowed(let reason): "not allowed: \(reason)"
        }
    }

    /// Whether the request was refused before it went out (a bad URL, a refused destination).
    public var isRefusal: Bool {
        switch self {
        case .invalidURL, .notAllowed: true
        case .timedOut, .unreachable: false
        }
    }

    /// Whether trying again later may help (everything but a bad URL or a refused destination).
    public var isWorthRetrying: Bool {
        switch self {
        case .invalidURL, .notAllowed: false
        case .timedOut, .unreachable: true
        }
    }
}

/// How the service makes outbound HTTP requests. Owned by the domain, so that the domain
/// knows nothing of HTTP clients; `NottyOutbound` has the live one and a recording one.
public protocol OutboundHTTP: Sendable {
    /// Sends `request`, following no redirect; throws ``OutboundError`` when no answer came
    /// (``OutboundError/notAllowed(_:)`` when the policy refuses a user-aimed destination).
    func send(_ request: OutboundRequest) async throws(OutboundError) -> OutboundResponse
    /// Why a user-aimed `url` is refused before any name is looked up (a literal address the
    /// policy refuses, the service's own URL), or nil: what a rule is checked against when it
    /// is made. A name is checked when a request is sent.
    func refusalBeforeLookup(_ url: String) -> String?
}

extension OutboundHTTP {
    public func refusalBeforeLookup(_ url: String) -> String? { nil }

    /// The most of an answer's body that is read.
    public static var maxBodyBytes: Int { 64 << 10 }
}
