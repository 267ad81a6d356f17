import Foundation
import NottyService
import PostgresNIO

/// `notty serve --postgres URL`: a libpq-style connection URL turned into PostgresNIO's
/// client configuration.
///
///     postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?sslmode=disable|prefer|require]
///     postgres:///DATABASE?host=/var/run/postgresql&user=USER      (a Unix socket directory)
///
/// The port defaults to 5432, the user to `postgres`, the database to the user's name. TLS
/// defaults to `disable` on loopback and `prefer` elsewhere, like libpq; `require` verifies
/// the server's certificate.
public struct PostgresURL: Sendable, Equatable, CustomStringConvertible {
    public enum TLSMode: String, Sendable { case disable, prefer, require }

    public var host: String
    public var port: Int
    /// A Unix socket directory, when `host` is a path.
    public var socketDirectory: String? { host.hasPrefix("/") ? host : nil }
    public var user: String
    public var password: String?
    public var database: String
    public var tls: TLSMode

    public init(_ text: String) throws {
        guard let components = URLComponents(string: text),
            let scheme = components.scheme, scheme == "postgres" || scheme == "postgresql"
        else {
            throw PostgresURLError("\"\(text)\" is not a postgres:// URL. Example: postgres://notty:secret@127.0.0.1:5432/notty")
        }
        var query: [String: String] = [:]
        for item in components.queryItems ?? [] { query[item.name] = item.value ?? "" }
        let hostParameter = query["host"]
        let host = components.host.flatMap { $0.isEmpty ? nil : $0.removingPercentEncoding } ?? hostParameter ?? "127.0.0.1"
        self.host = host
        self.port = components.port ?? query["port"].flatMap { Int($0) } ?? 5432
        guard (1...65535).contains(port) else { throw PostgresURLError("the port in the PostgreSQL URL must be 1…65535") }
        self.user = components.user?.removingPercentEncoding ?? query["user"] ?? "postgres"
        self.password = components.password?.removingPercentEncoding ?? query["password"]
        let path = components.path.hasPrefix("/") ? String(components.path.dropFirst()) : components.path
        self.database = path.isEmpty ? (query["dbname"] ?? user) : (path.removingPercentEncoding ?? path)
        let loopback = host.hasPrefix("/") || ["127.0.0.1", "localhost", "::1", "[::1]"].contains(host)
        if let mode = query["sslmode"] {
            switch mode {
            case "disable", "allow": tls = .disable
            case "prefer": tls = .prefer
            case "require", "verify-ca", "verify-full": tls = .require
            default: throw PostgresURLError("sslmode must be disable, prefer or require (got \"\(mode)\")")
            }
        } else {
            tls = loopback ? .disable : .prefer
        }
    }

    /// The URL without its password, for logs.
    public var description: String {
        let place = socketDirectory.map { "?host=\($0)" } ?? ""
        let address = socketDirectory == nil ? "\(host):\(port)" : ""
        return "postgres://\(user)@\(address)/\(database)\(place)"
    }

    var clientConfiguration: PostgresClient.Configuration {
        let tlsConfiguration: PostgresClient.Configuration.TLS
        switch tls {
        case .disable: tlsConfiguration = .disable
        case .prefer: tlsConfiguration = .prefer(.makeClientConfiguration())
        case .require: tlsConfiguration = .require(.makeClientConfiguration())
        }
        if let socketDirectory {
            var configuration = PostgresClient.Configuration(
                unixSocketPath: "\(socketDirectory)/.s.PGSQL.\(port)", username: user, password: password, database: database)
            configuration.tls = .disable
            return configuration
        }
        return PostgresClient.Configuration(host: host, port: port, username: user, password: password, database: database, tls: tlsConfiguration)
    }
}

public struct PostgresURLError: Error, CustomStringConvertible, Equatable {
    public var description: String
    init(_ description: String) { self.description = description }
}
