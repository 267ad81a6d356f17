import Foundation
import NottyCore
import NottyRecords

/// Teams (PROTOCOL.md §13.1): the administrator makes and removes them (`notty admin team`);
/// their owners add and remove members (`notty team`, `/v1/teams/{name}/members`).
///
/// A team that a user is not in answers as no team at all (`404`), so that its name tells
/// outsiders nothing; a member who is not an owner may read the team and leave it, and is
/// told `403` for anything else.
public final class Teams: ServicePart {
    package let core: ServiceCore
    /// The storage this part uses: its concerns alone.
    let storage: any TeamsStorage
    let limits: TeamLimits

    init(core: ServiceCore, storage: any TeamsStorage, limits: TeamLimits = TeamLimits()) {
        self.core = core
        self.storage = storage
        self.limits = limits
    }

    // MARK: - The administrator's

    /// `notty admin team add NAME --owner USER`.
    @discardableResult
    public func create(name: String, owner ownerName: String) async throws -> Team {
        if let problem = Team.nameProblem(name) { throw ServiceError.badRequest(problem) }
        let owner = try await user(named: ownerName)
        let teams = try await db { try await storage.teams(userId: owner.id) }
        if teams.count >= limits.teamsPerUser {
            throw ServiceError.badRequest("\(owner.userName) is in \(teams.count) teams, as many as a user may be in: they must leave one first")
        }
        try await db {
            do {
                try await storage.createTeam(id: Team.idPrefix + Identifiers.timeOrdered(), name: name, ownerId: owner.id, at: clock.now())
            } catch StorageError.conflict {
                throw ServiceError.badRequest("a team named \(name) already exists")
            }
        }
        guard let team = try await db({ try await storage.team(name: name) }) else { throw ServiceError.notFound("no team named \(name)") }
        return team
    }

    /// `notty admin team remove NAME`: `false` when there is no such team.
    public func remove(name: String) async throws -> Bool {
        try await db { try await storage.deleteTeam(name: name) }
    }

    /// Every team (`notty admin team list`), by name, with its members.
    public func all() async throws -> [Team] {
        try await db { try await storage.allTeams() }
    }

    // MARK: - A member's

    /// `GET /v1/me/teams`: the user's teams, by name.
    public func teams(userId: String) async throws -> TeamList {
        TeamList(value: try await db { try await storage.teams(userId: userId) })
    }

    /// `GET /v1/teams/{name}`: a team the user is in.
    public func team(name: String, userId: String) async throws -> Team {
        let (team, _) = try await membership(name: name, userId: userId)
        return team
    }

    /// `POST /v1/teams/{name}/members` `{"user", "role"}`: an owner adds a member or changes
    /// one's role. Answers the team as it is then.
    public func setMember(team name: String, by userId: String, body: Data) async throws -> Team {
        let request: TeamMemberRequest
        do throws(ValidationError) {
            request = try TeamMemberRequest(body: body)
        } catch {
            throw ServiceError.badRequest(error.message)
        }
        let (team, role) = try await membership(name: name, userId: userId)
        guard role == .owner else { throw Self.notOwner(team) }
        let member = try await user(named: request.user)
        let change = try await db {
            try await storage.setTeamMember(team: team.name, userId: member.id, role: request.role, at: clock.now(), limits: limits)
        }
        try check(change, team: team.name, user: member.userName)
        return try await self.team(name: team.name, userId: userId)
    }

    /// `DELETE /v1/teams/{name}/members/{user}`: an owner takes a member out, or a member leaves.
    public func removeMember(team name: String, by userId: String, user userName: String) async throws {
        let (team, role) = try await membership(name: name, userId: userId)
        let member = try await user(named: userName)
        guard role == .owner || member.id == userId else { throw Self.notOwner(team) }
        let change = try await db { try await storage.removeTeamMember(team: team.name, userId: member.id) }
        try check(change, team: team.name, user: member.userName)
    }

    // MARK: - Reading and refusing

    /// The team and the user's role in it; `404` when there is no such team or the user is not in it.
    package func membership(name: String, userId: String) async throws -> (Team, TeamRole) {
        let account = try await db { try await storage.user(id: userId) }
        guard let team = try await db({ try await storage.team(name: name) }), let account, let role = team.role(of: account.userName) else {
            throw ServiceError.notFound("no team named \(name) that you are in (notty team --list shows yours)")
        }
        return (team, role)
    }

    func user(named name: String) async throws -> UserRecord {
        // A team's feed is no user (PROTOCOL.md §15): adding it would reset the other team's history.
        guard let user = try await db({ try await storage.user(name: name) }), !user.isTeamFeed else {
            throw ServiceError.notFound("no user named \(name)")
        }
        return user
    }

    static func notOwner(_ team: Team) -> ServiceError {
        let owners = team.members.filter { $0.role == .owner }.map(\.user).joined(separator: ", ")
        return ServiceError.forbidden("only the owners of \(team.name) (\(owners)) add and remove its members")
    }

    /// Throws what a change that was not made means, in words.
    func check(_ change: TeamChange, team: String, user: String) throws {
        switch change {
        case .done: return
        case .noTeam: throw ServiceError.notFound("no team named \(team)")
        case .notMember: throw ServiceError.notFound("\(user) is not a member of \(team)")
        case .lastOwner:
            throw ServiceError.badRequest("\(user) is the last owner of \(team), and a team keeps an owner: make another member an owner first")
        case .teamFull: throw ServiceError.badRequest("\(team) has \(limits.membersPerTeam) members, as many as a team may have")
        case .tooManyTeams: throw ServiceError.badRequest("\(user) is in \(limits.teamsPerUser) teams, as many as a user may be in")
        }
    }
}

/// What ``Teams`` asks of the storage.
public typealias TeamsStorage = TeamStorage & AccountStorage
