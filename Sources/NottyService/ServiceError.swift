import Foundation
import NottyCore

/// Why the service refused a request, in its own terms: what kind of refusal, Graph's code
/// (PROTOCOL.md §2's error table) and a message for a person. It knows nothing of HTTP; the HTTP
/// layer maps each `Kind` to a status and headers (`ErrorAnswer` in NottyHTTP's `HTTPSupport.swift`).
public struct ServiceError: Error, Sendable, Equatable {
    /// What kind of refusal, each one status of PROTOCOL.md §2's table.
    public enum Kind: Sendable, Equatable {
        case badRequest, unauthenticated, forbidden, notFound, methodNotAllowed, gone, tooLarge, unprocessable
        case unsupportedMediaType, upgradeRequired, tooManyRequests, unavailable, internalError
    }

    public var kind: Kind
    public var code: String
    public var message: String
    /// Seconds after which trying again may work (rate limits, lockouts, storage away).
    public var retryAfter: Int?
    /// The OAuth error body of RFC 6749 §5.2 (the token endpoint's), not Graph's envelope.
    public var isOAuth = false

    public init(_ kind: Kind, _ code: String, _ message: String, retryAfter: Int? = nil) {
        self.kind = kind
        self.code = code
        self.message = message
        self.retryAfter = retryAfter
    }

    public static func badRequest(_ message: String) -> ServiceError { .init(.badRequest, "badRequest", message) }
    public static func unauthenticated(_ message: String) -> ServiceError { .init(.unauthenticated, "unauthenticated", message) }
    public static func forbidden(_ message: String) -> ServiceError { .init(.forbidden, "forbidden", message) }
    /// `422`: understood, but not what the door takes (Opsgenie answers its refusals so).
    public static func unprocessable(_ message: String) -> ServiceError { .init(.unprocessable, "unprocessable", message) }
    public static func notFound(_ message: String = "no such notification") -> ServiceError { .init(.notFound, "itemNotFound", message) }
    public static let cursorExpired = ServiceError(
        .gone, "cursorExpired", "this cursor is older than the kept change history: resync from scratch (omit since)")
    public static func payloadTooLarge(_ limit: Int) -> ServiceError {
        .init(.tooLarge, "payloadTooLarge", "the request body is larger than \(limit) bytes")
    }
    public static let unsupportedMediaType = ServiceError(.unsupportedMediaType, "unsupportedMediaType", "send the body as application/json")
    public static let upgradeRequired = ServiceError(
        .upgradeRequired, "upgradeRequired", "connect with a WebSocket upgrade (Connection: Upgrade, Upgrade: websocket)")
    public static func tooManyRequests(retryAfter: Int) -> ServiceError {
        .init(.tooManyRequests, "tooManyRequests", "publish rate limit reached for this app: retry after \(retryAfter) s", retryAfter: retryAfter)
    }
    public static func serviceUnavailable(_ message: String = "storage is unavailable: nothing was half-written; try again") -> ServiceError {
        .init(.unavailable, "serviceUnavailable", message, retryAfter: 1)
    }
    public static let methodNotAllowed = ServiceError(.methodNotAllowed, "methodNotAllowed", "this method is not allowed on this route")
    public static let internalError = ServiceError(
        .internalError, "generalException", "internal error; the request id identifies it in the service log")

    /// An error of the token endpoint, answered in RFC 6749 §5.2's body.
    public static func oauth(_ kind: Kind, _ error: String, _ description: String, retryAfter: Int? = nil) -> ServiceError {
        var e = ServiceError(kind, error, description, retryAfter: retryAfter)
        e.isOAuth = true
        return e
    }

    /// The response body: Graph's envelope, or RFC 6749's for the token endpoint.
    public func body(requestId: String, date: Date) -> Data {
        if isOAuth {
            let object: JSONValue = .object(["error": .string(code), "error_description": .string(message)])
            return Data(object.jsonText.utf8)
        }
        let envelope = ErrorEnvelope(
            error: ErrorBody(code: code, message: message, innerError: .init(requestId: requestId, date: ISOTime.format(date))))
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
extension ServiceError {
    /// What `read` makes of a request, its ``ValidationError`` a `400` with the same words: how
    /// the HTTP layer decodes a typed input before it calls the domain.
    public static func decoding<T>(_ read: () throws(ValidationError) -> T) throws(ServiceError) -> T {
        do throws(ValidationError) {
            return try read()
        } catch {
            throw .badRequest(error.message)
        }
    }
}

extension ServiceError: CustomStringConvertible {
    public var description: String { message }
}

/// A store written by a newer build: it has migrations this one does not know. Nothing was
/// written to it (an older build would misread its tables).
public struct NewerStoreError: Error, CustomStringConvertible, Sendable, Equatable {
    public let place: String
    /// The migrations it has that this build does not know.
    public let unknown: [String]
    /// This build's newest migration.
    public let newestKnown: String

    public init(place: String, unknown: [String], newestKnown: String) {
        self.place = place
        self.unknown = unknown.sorted()
        self.newestKnown = newestKnown
    }

    public var description: String {
        "\(place) was written by a newer notty-server (it has \(unknown.map { "“\($0)”" }.joined(separator: ", ")); this one knows up to “\(newestKnown)”): "
            + "run that build or a newer one, or restore a backup made with this one"
    }
}
