import Foundation
import NottyCore

/// What `notty login` keeps: the service, the account, its tokens and this device's subscription.
public struct Credentials: Codable, Sendable, Equatable {
    public var server: String
    public var userName: String
    public var userId: String?
    public var accessToken: String
    public var refreshToken: String?
    /// When the access token stops working (refreshed a minute before).
    public var accessTokenExpires: Date
    public var deviceName: String?
    public var deviceId: String?
    public var subscriptionId: String?

    public init(
        server: String, userName: String, userId: String? = nil, accessToken: String, refreshToken: String?, accessTokenExpires: Date,
        deviceName: String? = nil, deviceId: String? = nil, subscriptionId: String? = nil
    ) {
        self.server = server
        self.userName = userName
        self.userId = userId
        self.accessToken = accessToken
        self.refreshToken = refreshToken
        self.accessTokenExpires = accessTokenExpires
        self.deviceName = deviceName
        self.deviceId = deviceId
        self.subscriptionId = subscriptionId
    }

    /// `user@server`, the account a store belongs to.
    public var account: String { "\(userName)@\(server)" }
}

/// `credentials.json`: mode 0600 in a 0700 folder, replaced atomically, and a lock file so
/// that processes of one device refresh tokens one at a time.
public struct CredentialsFile: Sendable {
    public let path: String

    public init(path: String) { self.path = path }

    public func load() throws -> Credentials? {
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        do {
            return try NottyJSON.decoder.decode(Credentials.self, from: data)
        } catch {
            throw SyncError.notSignedIn("\(path) is not readable (\(error)); sign in again with notty login")
        }
    }

    public func save(_ credentials: Credentials) throws {
        let directory = URL(fileURLWithPath: path).deletingLastPathComponent().path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: directory)
        let temporary = path + ".\(getpid()).tmp"
        let data = try NottyJSON.encoder.encode(credentials)
        guard FileManager.default.createFile(atPath: temporary, contents: data, attributes: [.posixPermissions: 0o600]) else {
            throw SyncError.notSignedIn("cannot write \(temporary): check the permissions of \(directory)")
        }
        guard rename(temporary, path) == 0 else {
            unlink(temporary)
            throw SyncError.notSignedIn("cannot replace \(path): \(String(cString: strerror(errno)))")
        }
    }

    public func remove() throws {
        if FileManager.default.fileExists(atPath: path) { try FileManager.default.removeItem(atPath: path) }
    }

    /// Runs `body` holding an exclusive lock shared by every process of this device.
    public func locked<T>(_ body: () async throws -> T) async throws -> T {
        let directory = URL(fileURLWithPath: path).deletingLastPathComponent().path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let fd = open(path + ".lock", O_CREAT | O_RDWR, 0o600)
        guard fd >= 0 else { return try await body() }
        defer { close(fd) }
        flock(fd, LOCK_EX)
        defer { flock(fd, LOCK_UN) }
        return try await body()
    }
}
