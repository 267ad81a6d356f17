import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NottyCore
import NottyRecords
import NottyService
import NottyWebhooks

/// The request context of every route: Hummingbird's core storage and the request id every
/// response carries.
public struct NottyRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    public var requestId: String = ""
    /// The caller, set by the authentication middleware of the route's audience.
    public var user: String?
    public var deviceId: String?
    public var app: AppRecord?
    /// The client's IP address: the socket's peer, or, from a `--trusted-proxy`, the address
    /// its `X-Forwarded-For` names. Failed sign-ins are counted per address too.
    public var remoteAddress: String?
    /// The request came over https to a `--trusted-proxy` (`X-Forwarded-Proto: https`).
    public var forwardedHTTPS = false

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress?.ipAddress
    }

    /// Routes read bodies with the service's `maxBodyBytes` (`Request.jsonBody`); this only
    /// keeps Hummingbird's own decoding, were it used, from accepting its default 2 MiB.
    public var maxUploadSize: Int { 64 * 1024 }
}

/// Gives every request an id, turns every error into Graph's envelope, logs and counts.
struct EnvelopeMiddleware: RouterMiddleware {
    typealias Context = NottyRequestContext
    let metrics: ServiceMetrics
    let clock: any ServiceClock
    let maxBodyBytes: Int
    /// Served over https (TLS here, or an https public URL): `Strict-Transport-Security` on
    /// every answer (and on those a trusted proxy says came over https).
    var strictTransport = false
    /// Whose forwarding headers are believed.
    var trustedProxies = TrustedProxies([])

    /// What every answer carries: it is an API, never a page to frame, sniff or refer from.
    static let securityHeaders: [(HTTPField.Name, String)] = [
        (HTTPField.Name("x-content-type-options")!, "nosniff"), (HTTPField.Name("x-frame-options")!, "DENY"),
        (HTTPField.Name("referrer-policy")!, "no-referrer"),
        (HTTPField.Name("content-security-policy")!, "default-src 'none'; frame-ancestors 'none'"),
    ]

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var context = context
        (context.remoteAddress, context.forwardedHTTPS) = trustedProxies.client(peer: context.remoteAddress, headers: request.headers)
        let requestId = Identifiers.timeOrdered()
        context.requestId = requestId
        let start = ContinuousClock.now
        var response: Response
        do {
            response = try await next(request, context)
        } catch {
            let answer = ErrorAnswer(for: error, maxBodyBytes: maxBodyBytes)
            if answer.isUnexpected {
                context.logger.error("unexpected error", metadata: ["error": "\(error)", "request_id": "\(requestId)"])
            }
            response = answer.response(requestId: requestId, date: clock.now())
        }
        for (name, value) in Self.securityHeaders where response.headers[name] == nil { response.headers[name] = value }
        if strictTransport || context.forwardedHTTPS { response.headers[HTTPField.Name("strict-transport-security")!] = "max-age=31536000" }
        response.headers[HTTPField.Name("request-id")!] = requestId
        response.headers[HTTPField.Name("client-request-id")!] = request.headers[HTTPField.Name("client-request-id")!] ?? requestId
        let elapsed = ContinuousClock.now - start
        metrics.requestDuration.recordNanoseconds(elapsed.nanoseconds)
        metrics.countResponse(status: response.status.code)
        let level: Logger.Level = response.status.code >= 500 ? .error : .debug
        context.logger.log(
            level: level, "request",
            metadata: [
                "method": "\(request.method)", "path": "\(Self.redacted(request.uri.path))", "status": "\(response.status.code)",
                "ms": "\(elapsed.seconds * 1000)",
                "request_id": "\(requestId)",
            ])
        return response
    }

    /// A path as logged: a segment that is a secret (a webhook token, an ntfy topic, a
    /// calendar's `TOKEN.ics`: 40 or more base64url characters before any extension; ids,
    /// 36-character UUIDs, stay) shows only its first four (PROTOCOL.md §15).
    static func redacted(_ path: String) -> String {
        guard path.utf8.count >= 41 else { return path }
        return path.split(separator: "/", omittingEmptySubsequences: false).map { segment in
            let name = segment.prefix { $0 != "." }
            let secret =
                name.utf8.count >= 40
                && name.utf8.allSatisfy { byte in
                    (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5a) || (byte >= 0x61 && byte <= 0x7a) || byte == 0x2d || byte == 0x5f
                }
            return secret ? segment.prefix(4) + "…" + segment[name.endIndex...] : segment
        }.joined(separator: "/")
    }
}

/// A refusal as HTTP answers it: the service's error (or one of Hummingbird's or NIO's, in
/// the service's terms), its status and its headers.
struct ErrorAnswer {
    var error: ServiceError
    var status: HTTPResponse.Status
    var headers = HTTPFields()

    init(_ error: ServiceError, status: HTTPResponse.Status? = nil) {
        self.error = error
        self.status = status ?? Self.status(of: error.kind)
        if let seconds = error.retryAfter { headers[.retryAfter] = String(seconds) }
        if error.kind == .unauthenticated { headers[.wwwAuthenticate] = error.isOAuth ? "Basic" : "Bearer" }
    }

    init(for error: any Error, maxBodyBytes: Int) {
        switch error {
        case let error as ServiceError: self.init(error)
        case let error as MethodNotAllowed:
            self.init(.methodNotAllowed)
            headers[.allow] = error.allow
        case is NIOTooManyBytesError: self.init(.payloadTooLarge(maxBodyBytes))
        case let error as HTTPError:
            switch error.status {
            case .notFound: self.init(.notFound("no such route: see the API description in Resources/openapi.yaml"))
            case .methodNotAllowed: self.init(.methodNotAllowed)
            case .contentTooLarge: self.init(.payloadTooLarge(maxBodyBytes))
            case .badRequest: self.init(.badRequest(error.body ?? "bad request"))
            default: self.init(ServiceError(.badRequest, "badRequest", error.body ?? error.status.reasonPhrase), status: error.status)
            }
        case is StorageError: self.init(.serviceUnavailable())
        default: self.init(.internalError)
        }
    }

    static func status(of kind: ServiceError.Kind) -> HTTPResponse.Status {
        switch kind {
        case .badRequest: .badRequest
        case .unauthenticated: .unauthorized
        case .forbidden: .forbidden
        case .notFound: .notFound
        case .methodNotAllowed: .methodNotAllowed
        case .gone: .gone
        case .tooLarge: .contentTooLarge
        case .unprocessable: .unprocessableContent
        case .unsupportedMediaType: .unsupportedMediaType
        case .upgradeRequired: .upgradeRequired
        case .tooManyRequests: .tooManyRequests
        case .unavailable: .serviceUnavailable
        case .internalError: .internalServerError
        }
    }

    /// Whether the service itself failed (not the caller, not storage being away): logged.
    var isUnexpected: Bool { status.code >= 500 && status != .serviceUnavailable }

    func response(requestId: String, date: Date) -> Response {
        var headers = headers
        headers[.contentType] = "application/json; charset=utf-8"
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: error.body(requestId: requestId, date: date))))
    }
}

/// A method a route does not take: `405` with `Allow` (an HTTP matter, so not a `ServiceError`).
struct MethodNotAllowed: Error {
    let allow: String
}

extension HummingbirdCore.URI {
    /// The query as a form (the last of repeated names): `+` is a space and names are
    /// percent-decoded too, as ntfy and every browser read `?t=Front+door`. Hummingbird's own
    /// `queryParameters` leaves `+` as it is.
    var form: [String: String] { query.map(FormFields.urlencoded) ?? [:] }
}

extension Request {
    /// The bearer token from `Authorization`, or `access_token` in the query (WebSocket clients).
    var bearerToken: String? {
        if let header = headers[.authorization] {
            // "Bearer <token>", the scheme in any case (RFC 9110 §11.1). Read on every request,
            // so it steps over UTF-8 bytes rather than characters.
            let utf8 = header.utf8
            guard utf8.count > 7, utf8.prefix(6).elementsEqual("bearer".utf8, by: { $0 | 0x20 == $1 }) else { return nil }
            func isBlank(_ byte: UInt8) -> Bool { byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
            var start = utf8.index(utf8.startIndex, offsetBy: 6)
            guard isBlank(utf8[start]) else { return nil }
            var end = utf8.endIndex
            while start < end, isBlank(utf8[start]) { start = utf8.index(after: start) }
            while end > start, isBlank(utf8[utf8.index(before: end)]) { end = utf8.index(before: end) }
            return String(header[start..<end])
        }
        return uri.form["access_token"]
    }

    /// The body as JSON bytes: checks the media type (415) and the size (413).
    mutating func jsonBody(limit: Int) async throws -> Data {
        let type = headers[.contentType]?.lowercased() ?? ""
        guard type.hasPrefix("application/json") || type.hasPrefix("text/json") else { throw ServiceError.unsupportedMediaType }
        return try await rawBody(limit: limit)
    }

    /// The body bytes, at most `limit` (413 beyond).
    mutating func rawBody(limit: Int) async throws -> Data {
        if let length = headers[.contentLength].flatMap({ Int($0) }), length > limit { throw ServiceError.payloadTooLarge(limit) }
        do {
            let buffer = try await collectBody(upTo: limit)
            return Data(buffer.readableBytesView)
        } catch is NIOTooManyBytesError {
            throw ServiceError.payloadTooLarge(limit)
        }
    }
}

/// Builds JSON responses with notty's encoder.
enum JSONResponse {
    static func make<T: Encodable>(_ value: T, status: HTTPResponse.Status = .ok, headers extra: HTTPFields = [:]) throws -> Response {
        var headers = extra
        headers[.contentType] = "application/json; charset=utf-8"
        if let writable = value as? any JSONWritable {
            return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: writable.jsonBytes())))
        }
        let data = try NottyJSON.encoder.encode(value)
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }

    static func empty(_ status: HTTPResponse.Status, headers: HTTPFields = [:]) -> Response {
        Response(status: status, headers: headers)
    }
}
