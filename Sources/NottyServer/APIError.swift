import Foundation
import HTTPTypes
import Hummingbird
import NottyCore

/// An error a client sees, with Graph's code (SPEC §2's error table).
public struct APIError: Error, Sendable, Equatable {
    public var status: HTTPResponse.Status
    public var code: String
    public var message: String
    /// Extra headers (`WWW-Authenticate`, `Retry-After`).
    public var headers: [String: String] = [:]

    public init(_ status: HTTPResponse.Status, _ code: String, _ message: String, headers: [String: String] = [:]) {
        self.status = status
        self.code = code
        self.message = message
        self.headers = headers
    }

    public static func badRequest(_ message: String) -> APIError { .init(.badRequest, "badRequest", message) }
    public static func unauthenticated(_ message: String) -> APIError {
        .init(.unauthorized, "unauthenticated", message, headers: ["WWW-Authenticate": "Bearer"])
    }
    public static func forbidden(_ message: String) -> APIError { .init(.forbidden, "forbidden", message) }
    public static func notFound(_ message: String = "no such notification") -> APIError { .init(.notFound, "itemNotFound", message) }
    public static let cursorExpired = APIError(.gone, "cursorExpired", "this cursor is older than the kept change history: resync from scratch (omit since)")
    public static func payloadTooLarge(_ limit: Int) -> APIError {
        .init(.contentTooLarge, "payloadTooLarge", "the request body is larger than \(limit) bytes")
    }
    public static let unsupportedMediaType = APIError(.unsupportedMediaType, "unsupportedMediaType", "send the body as application/json")
    public static func tooManyRequests(retryAfter: Int) -> APIError {
        .init(.tooManyRequests, "tooManyRequests", "publish rate limit reached for this app: retry after \(retryAfter) s", headers: ["Retry-After": String(retryAfter)])
    }
    public static func serviceUnavailable(_ message: String = "storage is unavailable; nothing was written, try again") -> APIError {
        .init(.serviceUnavailable, "serviceUnavailable", message, headers: ["Retry-After": "1"])
    }
    public static let methodNotAllowed = APIError(.methodNotAllowed, "methodNotAllowed", "this method is not allowed on this route")

    /// The OAuth error body of RFC 6749 §5.2, for the token endpoint.
    public static func oauth(_ status: HTTPResponse.Status, _ error: String, _ description: String) -> APIError {
        var e = APIError(status, error, description)
        e.isOAuth = true
        if status == .unauthorized { e.headers["WWW-Authenticate"] = "Basic" }
        return e
    }
    public var isOAuth = false

    /// The response body: Graph's envelope, or RFC 6749's for the token endpoint.
    public func body(requestId: String, date: Date) -> Data {
        if isOAuth {
            let object: JSONValue = .object(["error": .string(code), "error_description": .string(message)])
            return Data(object.jsonText.utf8)
        }
        let envelope = ErrorEnvelope(error: ErrorBody(code: code, message: message, innerError: .init(requestId: requestId, date: ISOTime.format(date))))
        return (try? NottyJSON.encoder.encode(envelope)) ?? Data()
    }
}

/// What went wrong in storage, in terms the service layer maps to HTTP.
public enum StorageError: Error, Sendable, Equatable {
    /// A unique name is taken (user name, app host name).
    case conflict(String)
    /// The database could not be reached or written; nothing was half-written.
    case unavailable(String)
}

/// A person reads the message (`notty admin …` prints it as its one line of error).
extension APIError: CustomStringConvertible {
    public var description: String { message }
}
