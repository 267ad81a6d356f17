import Foundation
import NottyCore

/// Teams and their members (PROTOCOL.md §13.1). Members are users' ids; what is read back
/// names them. Each method is one transaction, so that a team keeps an owner and its limits
/// whatever two owners do at once.
public protocol TeamStorage: Sendable {
    /// Makes a team whose only member is `ownerId`, an owner; ``StorageError/conflict(_:)``
    /// when a team has that name.
    func createTeam(id: String, name: String, ownerId: String, at: Date) async throws
    /// Removes a team and its memberships; `false` when there is none of that name.
    func deleteTeam(name: String) async throws -> Bool
    /// The team and its members, nil when there is none of that name.
    func team(name: String) async throws -> Team?
    /// The teams `userId` is a member of, by name.
    func teams(userId: String) async throws -> [Team]
    /// Every team, by name.
    func allTeams() async throws -> [Team]
    /// The teams of these ids (those that still exist), by name.
    func teams(ids: [String]) async throws -> [Team]
    /// Makes `userId` a member of the team with `role` (or changes their role), unless that
    /// would leave the team without an owner or over a limit.
    func setTeamMember(team: String, userId: String, role: TeamRole, at: Date, limits: TeamLimits) async throws -> TeamChange
    /// Takes `userId` out of the team, unless they are its last owner.
    func removeTeamMember(team: String, userId: String) async throws -> TeamChange
}

/// On call (PROTOCOL.md §13.2): each team's schedule (a JSON document of ``OnCallSchedule``,
/// rewritten whole in one transaction) and each user's contacts (targets sealed as given).
public protocol OnCallStorage: Sendable {
    /// The team's schedule as stored, nil when it has none.
    func onCallSchedule(teamId: String) async throws -> String?
    /// These teams' schedules, by team id (what the pager resolves `oncall` with); a team
    /// without one is left out.
    func onCallSchedules(teamIds: [String]) async throws -> [String: String]
    /// Reads the team's schedule and writes what `update` makes of it (nil: unchanged), in one
    /// transaction; what `update` throws is thrown and nothing is written.
    func updateOnCallSchedule(teamId: String, at: Date, _ update: @escaping @Sendable (String?) throws -> String?) async throws
    /// The user's contacts, oldest first.
    func contacts(userId: String) async throws -> [Contact]
    /// These users' contacts, by user name, oldest first (what the pager reaches a team's
    /// members with); a user without any is left out.
    func contacts(userNames: [String]) async throws -> [String: [Contact]]
    /// Adds a contact unless the user has `limit` already (false then).
    func insertContact(_ contact: Contact, userId: String, limit: Int) async throws -> Bool
    func deleteContact(id: String, userId: String) async throws -> Bool
}

/// How many teams a user may be in and how many members a team may have.
public struct TeamLimits: Sendable, Equatable {
    public var teamsPerUser: Int
    public var membersPerTeam: Int
    public init(teamsPerUser: Int = Team.maxTeamsPerUser, membersPerTeam: Int = Team.maxMembers) {
        self.teamsPerUser = teamsPerUser
        self.membersPerTeam = membersPerTeam
    }
}

/// What a change of membership came to (nothing is written unless ``done``).
public enum TeamChange: Sendable, Equatable {
    case done
    /// No team of that name.
    case noTeam
    /// The user was not a member (a removal).
    case notMember
    /// It would leave the team without an owner.
    case lastOwner
    /// The team has as many members as it may.
    case teamFull
    /// The user is in as many teams as they may be.
    case tooManyTeams
}

/// Membership rules written once for every backend: given the members as they are, what a
/// change comes to.
public enum TeamRules {
    /// Whether `userId` may become (or stay) a member with `role`, given `members` (user id → role)
    /// and how many teams the user is in now.
    public static func setting(
        _ userId: String, role: TeamRole, members: [String: TeamRole], teamsOfUser: Int, limits: TeamLimits
    ) -> TeamChange {
        if let current = members[userId] {
            if current == .owner, role == .member, !members.contains(where: { $0.key != userId && $0.value == .owner }) { return .lastOwner }
            return .done
        }
        if members.count >= limits.membersPerTeam { return .teamFull }
        if teamsOfUser >= limits.teamsPerUser { return .tooManyTeams }
        return .done
    }

    /// Whether `userId` may leave (or be taken out of) a team with `members`.
    public static func removing(_ userId: String, members: [String: TeamRole]) -> TeamChange {
        guard let current = members[userId] else { return .notMember }
        if current == .owner, !members.contains(where: { $0.key != userId && $0.value == .owner }) { return .lastOwner }
        return .done
    }
}
