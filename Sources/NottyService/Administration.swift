import Foundation
import Logging
import NottyCore
import NottyPOSIX
import NottyRecords
import NottySecrets
import Synchronization

/// Administration (PROTOCOL.md §2.4, `notty admin`): users, apps, sign-in lockouts.
public final class Administration: ServicePart {
    package let core: ServiceCore
    /// The storage this part uses: its concerns alone.
    let storage: any AdministrationStorage

    init(core: ServiceCore, storage: any AdministrationStorage) {
        self.core = core
        self.storage = storage
    }

    public static func validateName(_ name: String, what: String) throws {
        guard !name.isEmpty, name.count <= 253,
            !name.contains(where: { $0.isWhitespace || $0 == "/" || $0.unicodeScalars.contains { CharacterSet.controlCharacters.contains($0) } })
        else { throw ServiceError.badRequest("\(what) must be 1–253 characters with no spaces or slashes") }
    }

    @discardableResult
    public func addUser(name: String, password: String, displayName: String? = nil) async throws -> UserRecord {
        try Self.validateName(name, what: "a user name")
        if let problem = Self.passwordProblem(password) { throw ServiceError.badRequest(problem) }
        let cost = config.bcryptCost
        let hash = await onDispatch { Secrets.hashPassword(password, cost: cost) }
        let user = UserRecord(
            id: UUID().uuidString.lowercased(), userName: name, displayName: displayName ?? name, passwordHash: hash, created: clock.nowMillis())
        do {
            try await storage.createUser(user)
        } catch StorageError.conflict {
            throw ServiceError.badRequest("a user named \(name) already exists")
        }
        return user
    }

    public func removeUser(name: String) async throws -> Bool {
        // A team keeps an owner (PROTOCOL.md §13.1): its last one is not removed with their account.
        if let user = try await db({ try await storage.user(name: name) }) {
            let kept = try await db { try await storage.teams(userId: user.id) }.filter { team in
                team.role(of: user.userName) == .owner && !team.members.contains { $0.user != user.userName && $0.role == .owner }
            }
            if !kept.isEmpty {
                let names = kept.map(\.name).joined(separator: ", ")
                throw ServiceError.badRequest(
                    "\(user.userName) is the last owner of \(names): make another member an owner (notty team NAME --add USER --owner) or remove the team (notty admin team remove NAME) first"
                )
            }
        }
        defer { core.forgetCachedCredentials() }
        return try await db { try await storage.deleteUser(name: name) }
    }

    // MARK: - Accounts (PROTOCOL.md §15)

    /// The shortest password a new user or a change takes.
    public static let minimumPasswordLength = 8

    /// Why `password` is refused as a new one, or nil.
    static func passwordProblem(_ password: String) -> String? {
        if password.count < minimumPasswordLength { return "a password has at least \(minimumPasswordLength) characters" }
        if password.containsNUL { return "a password must not contain the character U+0000 (NUL)" }
        return nil
    }

    /// `notty admin user list`: every user with their teams and how many devices they have.
    public func users() async throws -> [UserSummary] {
        let now = clock.nowMillis()
        var summaries: [UserSummary] = []
        for user in try await db({ try await storage.allUsers() }) {
            let teams = try await db { try await storage.teams(userId: user.id) }.map(\.name).sorted()
            let devices = try await db { try await storage.subscriptions(userId: user.id) }.filter {
                $0.kind.limited == .signedIn && $0.expiresAt > now
            }
            summaries.append(
                UserSummary(
                    name: user.userName, displayName: user.displayName, created: user.created, disabled: user.disabled, teams: teams,
                    devices: Set(devices.map(\.deviceId)).count))
        }
        return summaries
    }

    /// `notty admin user password NAME [--sign-out]`: the old password stops at once; with
    /// `signOut`, every device, browser, token, open stream and calendar of the user ends too.
    public func setPassword(name: String, password: String, signOut: Bool) async throws {
        if let problem = Self.passwordProblem(password) { throw ServiceError.badRequest(problem) }
        let user = try await account(named: name)
        let cost = config.bcryptCost
        let hash = await onDispatch { Secrets.hashPassword(password, cost: cost) }
        defer { core.forgetCachedCredentials() }
        _ = try await db {
            try await storage.updateAccount(userId: user.id, passwordHash: hash, disabled: nil, signOut: signOut ? .everywhere : .nobody)
        }
    }

    /// `notty admin user disable|enable NAME`: disabled, every token of theirs is refused at
    /// once and their open streams close; sign-in is refused in words that say so.
    public func setDisabled(name: String, _ disabled: Bool) async throws {
        let user = try await account(named: name)
        defer { core.forgetCachedCredentials() }
        _ = try await db { try await storage.updateAccount(userId: user.id, passwordHash: nil, disabled: disabled, signOut: .nobody) }
    }

    private func account(named name: String) async throws -> UserRecord {
        guard let user = try await db({ try await storage.user(name: name) }), !user.isTeamFeed else {
            throw ServiceError.notFound("no user named \(name) (notty admin user list shows them)")
        }
        return user
    }

    /// Registers an app; returns its client id and secret (the secret is not kept).
    public func addApp(hostName: String) async throws -> (clientId: String, clientSecret: String) {
        try Self.validateName(hostName, what: "an app host name")
        guard !hostName.equalsIgnoringASCIICase(Heartbeat.hostName) else {
            throw ServiceError.badRequest("\(Heartbeat.hostName) is notty's own (heartbeats publish as it): choose another name")
        }
        let secret = Secrets.newToken()
        let app = AppRecord(clientId: UUID().uuidString.lowercased(), hostName: hostName, secretHash: Secrets.tokenHash(secret))
        do {
            try await storage.createApp(app)
        } catch StorageError.conflict {
            throw ServiceError.badRequest("an app with host name \(hostName) already exists")
        }
        return (app.clientId, secret)
    }

    public func removeApp(hostName: String) async throws -> Bool {
        defer { core.forgetCachedCredentials() }
        return try await db { try await storage.deleteApp(hostName: hostName) }
    }

    /// Every lockout and count of failed sign-ins (`notty admin lockouts`).
    public func lockouts() async throws -> [GuessRecord] {
        try await db { try await storage.allGuesses() }
    }

    /// Forgets the failed sign-ins of `keys` (all when nil): unlocks them at once.
    public func clearLockouts(keys: [String]?) async throws -> Int {
        try await db { try await storage.forgetGuesses(keys: keys) }
    }
}

/// One line of `notty admin user list`.
public struct UserSummary: Codable, Sendable, Equatable {
    public var name: String
    public var displayName: String
    public var created: Date?
    public var disabled: Bool
    public var teams: [String]
    public var devices: Int
}

/// What ``Administration`` asks of the storage.
public typealias AdministrationStorage = AccountStorage & SignInGuessStorage & TeamStorage & SubscriptionStorage
