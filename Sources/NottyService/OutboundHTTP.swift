import Foundation
import NottyCore

/// A request the service makes to another service: an escalation's target, an action, the ntfy
/// upstream. The domain says what to send; how it is sent (AsyncHTTPClient in `NottyOutbound`,
/// a recording in the tests) is the implementation's.
public struct OutboundRequest: Sendable, Equatable {
    public var method: String
    public var url: String
    public var headers: [OutboundHeader]
    public var body: Data?
    /// The whole request, from connecting to the last byte of the answer.
    public var timeout: Duration

    public init(method: String, url: String, headers: [OutboundHeader] = [], body: Data? = nil, timeout: Duration = .seconds(15)) {
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

    public var description: String {
        switch self {
        case .invalidURL(let url): "not an http(s) URL: \(url)"
        case .timedOut(let timeout): "no answer within \(timeout)"
        case .unreachable(let reason): "unreachable: \(reason)"
        }
    }

    /// Whether trying again later may help (everything but a bad URL).
    public var isWorthRetrying: Bool {
        if case .invalidURL = self { return false }
        return true
    }
}

/// How the service makes outbound HTTP requests. Owned by the domain, so that the domain
/// knows nothing of HTTP clients; `NottyOutbound` has the live one and a recording one.
public protocol OutboundHTTP: Sendable {
    /// Sends `request`, following no redirect; throws ``OutboundError`` when no answer came.
    func send(_ request: OutboundRequest) async throws(OutboundError) -> OutboundResponse
}

extension OutboundHTTP {
    /// The most of an answer's body that is read.
    public static var maxBodyBytes: Int { 64 << 10 }
}
