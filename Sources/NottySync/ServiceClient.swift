import AsyncHTTPClient
import Foundation
import NIOCore
import NIOFoundationCompat
import NIOHTTP1
import NottyCore

/// The HTTP client notty's commands share: a refused connection fails at once (no retries
/// until the deadline), so offline commands queue without waiting.
public enum NottyHTTP {
    public static let client: HTTPClient = {
        var configuration = HTTPClient.Configuration(timeout: .init(connect: .seconds(5), read: .seconds(60)))
        configuration.connectionPool.retryConnectionEstablishment = false
        return HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }()
}

/// One HTTP answer.
public struct HTTPAnswer: Sendable {
    public var status: Int
    public var headers: HTTPHeaders
    public var body: Data

    /// The service's error envelope (`{"error":{"code","message"}}`) or an OAuth error, as words.
    public var errorText: (code: String, message: String) {
        if case .object(let root)? = JSONParser.parse(body) {
            if case .object(let error)? = root["error"], case .string(let code)? = error["code"] {
                if case .string(let message)? = error["message"] { return (code, message) }
                return (code, "")
            }
            if case .string(let code)? = root["error"] {
                if case .string(let message)? = root["error_description"] { return (code, message) }
                return (code, "")
            }
        }
        return ("http\(status)", String(decoding: body.prefix(200), as: UTF8.self))
    }
}

/// Talks to a notty service for one signed-in device: attaches the access token, refreshes it
/// once when it has expired (concurrent callers wait for the same refresh, and processes of
/// one device take turns through the credentials lock), then retries.
public actor ServiceClient {
    public let file: CredentialsFile
    private var credentials: Credentials
    private var refreshing: Task<Credentials, any Error>?
    private let givenHTTP: HTTPClient?
    let timeout: TimeAmount
    /// The HTTP client, made on the first request (``NottyHTTP/client`` starts NIO's threads):
    /// the center paints its first frame before any of that runs.
    var http: HTTPClient { givenHTTP ?? NottyHTTP.client }

    public init(file: CredentialsFile, credentials: Credentials, http: HTTPClient? = nil, timeout: TimeAmount = .seconds(15)) {
        self.file = file
        self.credentials = credentials
        self.givenHTTP = http
        self.timeout = timeout
    }

    public var current: Credentials { credentials }

    // MARK: - Requests

    /// Sends one request without a user token (tokens, app publishing).
    /// POSTs a form (`application/x-www-form-urlencoded`): the token and revoke routes.
    public static func postForm(
        _ url: String, _ fields: [String: String], http: HTTPClient = NottyHTTP.client, timeout: TimeAmount = .seconds(15)
    ) async throws -> HTTPAnswer {
        try await send(
            .POST, url, headers: [("Content-Type", "application/x-www-form-urlencoded")],
            body: Data(FormEncoding.encode(fields).utf8), http: http, timeout: timeout)
    }

    public static func send(
        _ method: HTTPMethod, _ url: String, headers: [(String, String)] = [], body: Data? = nil,
        http: HTTPClient = NottyHTTP.client, timeout: TimeAmount = .seconds(15)
    ) async throws -> HTTPAnswer {
        var request = HTTPClientRequest(url: url)
        request.method = method
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let body { request.body = .bytes(ByteBuffer(data: body)) }
        do {
            let response = try await http.execute(request, timeout: timeout)
            let buffer = try await response.body.collect(upTo: 64 << 20)
            return HTTPAnswer(status: Int(response.status.code), headers: response.headers, body: Data(buffer: buffer))
        } catch let error as HTTPClientError where error == .invalidURL || error == .emptyHost {
            throw SyncError.notSignedIn("\(url) is not a usable URL: \(error)")
        } catch {
            throw SyncError.unreachable("cannot reach \(Self.origin(url)): \(Self.describe(error))")
        }
    }

    static func origin(_ url: String) -> String {
        guard let components = URLComponents(string: url), let host = components.host else { return url }
        return "\(components.scheme ?? "http")://\(host)\(components.port.map { ":\($0)" } ?? "")"
    }

    static func describe(_ error: any Error) -> String {
        let text = String(describing: error)
        if text.contains("connectTimeout") || text.contains("deadlineExceeded") { return "timed out" }
        if text.contains("refused") || text.contains("ECONNREFUSED") { return "connection refused (is notty serve running?)" }
        return text
    }

    /// Sends a request as the signed-in user; a 401 leads to one refresh and one retry.
    /// `timeout`: this request's, when it must wait longer than the client's (an action's run).
    public func send(_ method: HTTPMethod, _ path: String, headers: [(String, String)] = [], json: Data? = nil, timeout: TimeAmount? = nil)
        async throws -> HTTPAnswer
    {
        if credentials.accessTokenExpires.timeIntervalSinceNow < 60 {
            _ = try await refresh(after: credentials.accessToken)
        }
        var answer = try await attempt(method, path, headers: headers, json: json, token: credentials.accessToken, timeout: timeout)
        if answer.status == 401 {
            _ = try await refresh(after: credentials.accessToken)
            answer = try await attempt(method, path, headers: headers, json: json, token: credentials.accessToken, timeout: timeout)
            if answer.status == 401 {
                // The service's words say why (revoked, disabled, expired).
                let why = answer.errorText.message
                throw SyncError.signInAgain(
                    "the service no longer accepts this device's sign-in\(why.isEmpty ? "" : " (\(why))"): run notty login again (queued changes are kept)"
                )
            }
        }
        if HTTPStatusRule.isWorthRetrying(answer.status) {
            let error = answer.errorText
            throw SyncError.unreachable("the service answered \(answer.status) \(error.code): \(error.message)")
        }
        return answer
    }

    private func attempt(_ method: HTTPMethod, _ path: String, headers: [(String, String)], json: Data?, token: String, timeout: TimeAmount?)
        async throws -> HTTPAnswer
    {
        var all = headers + [("Authorization", "Bearer \(token)")]
        if json != nil { all.append(("Content-Type", "application/json")) }
        return try await Self.send(method, credentials.server + path, headers: all, body: json, http: http, timeout: timeout ?? self.timeout)
    }

    // MARK: - Tokens

    /// Makes sure the access token is newer than `stale`: adopts one another process saved,
    /// or refreshes. Concurrent callers share one refresh.
    func refresh(after stale: String) async throws -> Credentials {
        if credentials.accessToken != stale { return credentials }
        if let refreshing { return try await refreshing.value }
        let task = Task { [file, credentials, http, timeout] in
            try await file.locked {
                // Another process of this device may have refreshed already.
                if let saved = try file.load(), saved.accessToken != stale, saved.server == credentials.server, saved.userName == credentials.userName
                {
                    return saved
                }
                guard let refreshToken = credentials.refreshToken else {
                    throw SyncError.signInAgain("this device's sign-in has expired: run notty login again (queued changes are kept)")
                }
                let answer = try await Self.postForm(
                    credentials.server + "/oauth2/v2.0/token", ["grant_type": "refresh_token", "refresh_token": refreshToken],
                    http: http, timeout: timeout)
                guard answer.status == 200 else {
                    if HTTPStatusRule.isWorthRetrying(answer.status) {
                        throw SyncError.unreachable("the service answered \(answer.status) while refreshing the sign-in")
                    }
                    let error = answer.errorText
                    throw SyncError.signInAgain(
                        "this device's sign-in is no longer valid (\(error.message.isEmpty ? error.code : error.message)): run notty login again (queued changes are kept)"
                    )
                }
                let token = try NottyJSON.decoder.decode(TokenResponse.self, from: answer.body)
                var updated = credentials
                updated.accessToken = token.access_token
                updated.refreshToken = token.refresh_token ?? credentials.refreshToken
                updated.accessTokenExpires = Date().addingTimeInterval(TimeInterval(token.expires_in))
                try file.save(updated)
                return updated
            }
        }
        refreshing = task
        defer { refreshing = nil }
        credentials = try await task.value
        return credentials
    }

    /// Signs in with the password grant and returns fresh credentials (not yet saved).
    public static func signIn(server: String, userName: String, password: String, http: HTTPClient = NottyHTTP.client) async throws -> Credentials {
        let answer = try await postForm(
            server + "/oauth2/v2.0/token", ["grant_type": "password", "username": userName, "password": password], http: http)
        guard answer.status == 200 else {
            let error = answer.errorText
            if error.code == "invalid_grant" {
                throw SyncError.refused(status: answer.status, code: error.code, message: "wrong user name or password")
            }
            throw SyncError.refused(status: answer.status, code: error.code, message: error.message)
        }
        let token = try NottyJSON.decoder.decode(TokenResponse.self, from: answer.body)
        return Credentials(
            server: server, userName: userName, accessToken: token.access_token, refreshToken: token.refresh_token,
            accessTokenExpires: Date().addingTimeInterval(TimeInterval(token.expires_in)))
    }

    /// Registers this device, subscribes it to an app, or (`webhook`) makes a webhook URL for
    /// the app, optionally checked with `secret` (PROTOCOL.md §7.2).
    /// Registers this device (`platform` websocket), subscribes it to an app (with
    /// `targetHostName`), makes a webhook (`webhook`) or an ntfy topic (`ntfy`).
    public func subscribe(
        deviceName: String, targetHostName: String? = nil, platform: String = "websocket", secret: String? = nil,
        alertmanager: String? = nil, team: String? = nil
    ) async throws -> SubscriptionInfo {
        var body: [String: JSONValue] = ["deviceName": .string(deviceName), "platform": .string(platform)]
        if let team { body["team"] = .string(team) }
        if let targetHostName { body["targetHostName"] = .string(targetHostName) }
        if let secret { body["secret"] = .string(secret) }
        if let alertmanager { body["alertmanager"] = .string(alertmanager) }
        let answer = try await send(.POST, "/v1/me/subscriptions", json: Data(JSONValue.object(body).jsonText.utf8))
        guard answer.status == 201, let subscription = try? NottyJSON.decoder.decode(SubscriptionInfo.self, from: answer.body) else {
            let error = answer.errorText
            throw SyncError.refused(status: answer.status, code: error.code, message: error.message)
        }
        return subscription
    }

    /// The user's subscriptions: devices and app subscriptions (`GET /v1/me/subscriptions`).
    public func subscriptions() async throws -> [SubscriptionInfo] {
        let answer = try await send(.GET, "/v1/me/subscriptions")
        guard answer.status == 200, let list = try? NottyJSON.decoder.decode(SubscriptionList.self, from: answer.body) else {
            let error = answer.errorText
            throw SyncError.refused(status: answer.status, code: error.code, message: error.message)
        }
        return list.value
    }

    /// Revokes one subscription; a device's registration takes the device's tokens with it.
    public func revokeSubscription(id: String) async throws {
        let answer = try await send(.DELETE, "/v1/me/subscriptions/\(id)")
        guard answer.status == 204 else {
            let error = answer.errorText
            throw SyncError.refused(status: answer.status, code: error.code, message: error.message)
        }
    }

    /// Adopts credentials (after login or registering the device) and saves them.
    public func update(_ body: (inout Credentials) -> Void) throws {
        body(&credentials)
        try file.save(credentials)
    }
}

/// `application/x-www-form-urlencoded`.
public enum FormEncoding {
    public static func encode(_ fields: [String: String]) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return fields.sorted { $0.key < $1.key }.map { key, value in
            "\(key.addingPercentEncoding(withAllowedCharacters: allowed) ?? key)=\(value.addingPercentEncoding(withAllowedCharacters: allowed) ?? value)"
        }.joined(separator: "&")
    }
}

// The web inbox (PROTOCOL.md §14): a one-time link that signs a browser in as this user.
extension ServiceClient {
    /// `server` + `/#signin=TOKEN`: opened in a browser within 60 s, it signs in once.
    public func signInLink() async throws -> String {
        struct Link: Decodable { var path: String }
        let link = try Self.decoded(Link.self, try await send(.POST, "/v1/web/signin-links", json: Data("{}".utf8)), status: 201)
        return current.server.trimmingCharacters(in: CharacterSet(charactersIn: "/")) + link.path
    }
}
