import Foundation
import NottyCore
import NottyService
import NottyStorageSupport
import PostgresNIO

/// Teams and their members (PROTOCOL.md §13.1) on PostgreSQL. A change of membership locks the
/// team's row first, so that changes to one team from any instance happen one after another
/// (two owners leaving at once leave an owner).
extension PostgresStorage {
    public func createTeam(id: String, name: String, ownerId: String, at: Date) async throws {
        let millis = ISOTime.millis(at)
        try await feedWrite(users: [ownerId], positions: 1) { connection, context in
            try await connection.exec("INSERT INTO teams (id, name, created) VALUES (\(id), \(name), \(millis))", logger: self.logger)
            // The team's feed has an owner row of its own, which nobody signs in as (no password).
            try await connection.exec(
                "INSERT INTO users (id, user_name, display_name, password_hash) VALUES (\(id), \(Team.feedOwnerName(name)), \(name), '')",
                logger: self.logger)
            try await connection.exec(
                "INSERT INTO team_members (team_id, user_id, role, since) VALUES (\(id), \(ownerId), 'owner', \(millis))", logger: self.logger)
            try await self.resync(connection, userId: ownerId, context)
        }
    }

    public func deleteTeam(name: String) async throws -> Bool {
        guard let team = try await team(name: name) else { return false }
        let members = try await run { connection in
            try await connection.query("SELECT user_id FROM team_members WHERE team_id = \(team.id)", logger: self.logger).collect(String.self)
        }
        return try await feedWrite(users: members, positions: members.count) { connection, context in
            guard try await self.lockedMembers(connection, team: name) != nil else { return false }
            for member in members { try await self.resync(connection, userId: member, context) }
            try await connection.exec("DELETE FROM teams WHERE id = \(team.id)", logger: self.logger)
            try await connection.exec("DELETE FROM users WHERE id = \(team.id)", logger: self.logger)  // its feed with it
            return true
        }
    }

    public func team(name: String) async throws -> Team? {
        try await run { connection in try await self.teams(connection, "WHERE t.name = \(name)").first }
    }

    public func teams(userId: String) async throws -> [Team] {
        try await run { connection in
            try await self.teams(connection, "WHERE t.id IN (SELECT team_id FROM team_members WHERE user_id = \(userId))")
        }
    }

    public func allTeams() async throws -> [Team] {
        try await run { connection in try await self.teams(connection, "") }
    }

    public func teams(ids: [String]) async throws -> [Team] {
        guard !ids.isEmpty else { return [] }
        return try await run { connection in try await self.teams(connection, "WHERE t.id = ANY(\(ids))") }
    }

    public func setTeamMember(team: String, userId: String, role: TeamRole, at: Date, limits: TeamLimits) async throws -> TeamChange {
        try await feedWrite(users: [userId], positions: 1) { connection, context in
            guard let (teamId, members) = try await self.lockedMembers(connection, team: team) else { return .noTeam }
            let counted: [Int64] = try await connection.query(
                "SELECT count(*) FROM team_members WHERE user_id = \(userId)", logger: self.logger
            ).collect(Int64.self)
            let teamsOfUser = counted.first ?? 0
            let change = TeamRules.setting(userId, role: role, members: members, teamsOfUser: Int(teamsOfUser), limits: limits)
            guard change == .done, members[userId] != role else { return change }
            try await connection.exec(
                """
                INSERT INTO team_members (team_id, user_id, role, since) VALUES (\(teamId), \(userId), \(role.rawValue), \(ISOTime.millis(at)))
                ON CONFLICT (team_id, user_id) DO UPDATE SET role = excluded.role, since = excluded.since
                """, logger: self.logger)
            if members[userId] == nil { try await self.resync(connection, userId: userId, context) }
            return .done
        }
    }

    public func removeTeamMember(team: String, userId: String) async throws -> TeamChange {
        try await feedWrite(users: [userId], positions: 1) { connection, context in
            guard let (teamId, members) = try await self.lockedMembers(connection, team: team) else { return .noTeam }
            let change = TeamRules.removing(userId, members: members)
            guard change == .done else { return change }
            try await connection.exec("DELETE FROM team_members WHERE team_id = \(teamId) AND user_id = \(userId)", logger: self.logger)
            try await self.resync(connection, userId: userId, context)
            return .done
        }
    }

    public func teamOwners(ids: [String], userId: String) async throws -> [String: String] {
        guard !ids.isEmpty else { return [:] }
        return try await run { connection in
            var owners: [String: String] = [:]
            for (id, owner) in try await connection.query(
                """
                SELECT id, user_id FROM notifications WHERE id = ANY(\(ids))
                AND user_id IN (SELECT team_id FROM team_members WHERE user_id = \(userId))
                """, logger: self.logger
            ).collect((String, String).self) {
                owners[id] = owner
            }
            return owners
        }
    }

    /// A user who joined or left a team: the start of their feed's history moves past their
    /// devices' cursors (`410`), so each resyncs and takes in or drops the team's notifications.
    func resync(_ connection: PostgresConnection, userId: String, _ context: WriteContext) async throws {
        try await connection.exec("UPDATE users SET purged_through = \(context.nextSeq(for: userId)) WHERE id = \(userId)", logger: logger)
    }

    /// The feeds a user reads: their own, then their teams'.
    func ownerIds(_ connection: PostgresConnection, userId: String) async throws -> [String] {
        [userId] + (try await connection.query("SELECT team_id FROM team_members WHERE user_id = \(userId)", logger: logger).collect(String.self))
    }

    /// Each member of a team whose feed the write changed hears of it as of their own.
    func shareWithMembers(_ context: WriteContext, _ connection: PostgresConnection) async throws {
        let teams = context.changedTeams
        guard !teams.isEmpty else { return }
        let pairs = try await connection.query("SELECT team_id, user_id FROM team_members WHERE team_id = ANY(\(teams))", logger: logger)
            .collect((String, String).self)
        context.shareWithMembers(pairs.map { (team: $0.0, user: $0.1) })
    }

    /// The team's id and its members' roles by user id, its row locked; nil when there is no such team.
    func lockedMembers(_ connection: PostgresConnection, team: String) async throws -> (String, [String: TeamRole])? {
        guard
            let teamId = try await connection.query("SELECT id FROM teams WHERE name = \(team) FOR UPDATE", logger: logger).collect(String.self).first
        else { return nil }
        var members: [String: TeamRole] = [:]
        for (user, role) in try await connection.query("SELECT user_id, role FROM team_members WHERE team_id = \(teamId)", logger: logger)
            .collect((String, String).self)
        {
            members[user] = TeamRole(rawValue: role) ?? .member
        }
        return (teamId, members)
    }

    /// The teams `condition` (a WHERE clause on `teams t`, or nothing) picks, by name, with their members.
    func teams(_ connection: PostgresConnection, _ condition: PostgresQuery) async throws -> [Team] {
        var query: PostgresQuery = """
            SELECT t.name, t.created, t.id, u.user_name, u.display_name, m.role, m.since
            FROM teams t LEFT JOIN team_members m ON m.team_id = t.id LEFT JOIN users u ON u.id = m.user_id
            """
        query.sql += " " + condition.sql + " ORDER BY t.name"
        query.binds = condition.binds
        let rows = try await connection.query(query, logger: logger).collect((String, Int64, String, String?, String?, String?, Int64?).self)
        var teams: [Team] = []
        var current: Team?
        for (name, created, id, user, displayName, role, since) in rows {
            if current?.name != name {
                if let done = current { teams.append(Team(id: done.id, name: done.name, created: done.created, members: done.members)) }
                current = Team(id: id, name: name, created: ISOTime.date(millis: created), members: [])
            }
            if let user, let role, let since {
                current?.members.append(
                    TeamMember(
                        user: user, displayName: displayName ?? user, role: TeamRole(rawValue: role) ?? .member, since: ISOTime.date(millis: since)))
            }
        }
        if let done = current { teams.append(Team(id: done.id, name: done.name, created: done.created, members: done.members)) }
        return teams
    }
}
