import Foundation
import GRDB
import NottyCore
import NottyService

/// Teams and their members (PROTOCOL.md §13.1). A change of membership reads the members and
/// writes in the writer's one transaction, so two owners leaving at once leave an owner.
extension SQLiteStorage {
    public func createTeam(id: String, name: String, ownerId: String, at: Date) async throws {
        try await write { db, _ in
            do {
                try db.execute(sql: "INSERT INTO teams (id, name, created) VALUES (?, ?, ?)", arguments: [id, name, ISOTime.millis(at)])
            } catch let error as DatabaseError where error.extendedResultCode == .SQLITE_CONSTRAINT_UNIQUE {
                throw StorageError.conflict("a team named \(name) exists")
            }
            try db.execute(
                sql: "INSERT INTO team_members (team_id, user_id, role, since) VALUES (?, ?, 'owner', ?)",
                arguments: [id, ownerId, ISOTime.millis(at)])
        }
    }

    public func deleteTeam(name: String) async throws -> Bool {
        try await write { db, _ in
            try db.execute(sql: "DELETE FROM teams WHERE name = ?", arguments: [name])
            return db.changesCount > 0
        }
    }

    public func team(name: String) async throws -> Team? {
        try await read { db in try Self.teams(db, where: "t.name = ?", [name]).first }
    }

    public func teams(userId: String) async throws -> [Team] {
        try await read { db in
            try Self.teams(db, where: "t.id IN (SELECT team_id FROM team_members WHERE user_id = ?)", [userId])
        }
    }

    public func allTeams() async throws -> [Team] {
        try await read { db in try Self.teams(db, where: "1", []) }
    }

    public func setTeamMember(team: String, userId: String, role: TeamRole, at: Date, limits: TeamLimits) async throws -> TeamChange {
        try await write { db, _ in
            guard let (teamId, members) = try Self.members(db, team: team) else { return .noTeam }
            let teamsOfUser = try Int.fetchOne(db, sql: "SELECT count(*) FROM team_members WHERE user_id = ?", arguments: [userId]) ?? 0
            let change = TeamRules.setting(userId, role: role, members: members, teamsOfUser: teamsOfUser, limits: limits)
            guard change == .done, members[userId] != role else { return change }
            try db.execute(
                sql: """
                    INSERT INTO team_members (team_id, user_id, role, since) VALUES (?, ?, ?, ?)
                    ON CONFLICT (team_id, user_id) DO UPDATE SET role = excluded.role, since = excluded.since
                    """, arguments: [teamId, userId, role.rawValue, ISOTime.millis(at)])
            return .done
        }
    }

    public func removeTeamMember(team: String, userId: String) async throws -> TeamChange {
        try await write { db, _ in
            guard let (teamId, members) = try Self.members(db, team: team) else { return .noTeam }
            let change = TeamRules.removing(userId, members: members)
            guard change == .done else { return change }
            try db.execute(sql: "DELETE FROM team_members WHERE team_id = ? AND user_id = ?", arguments: [teamId, userId])
            return .done
        }
    }

    /// The team's id and its members' roles by user id; nil when there is no such team.
    static func members(_ db: Database, team: String) throws -> (String, [String: TeamRole])? {
        guard let teamId = try String.fetchOne(db, sql: "SELECT id FROM teams WHERE name = ?", arguments: [team]) else { return nil }
        var members: [String: TeamRole] = [:]
        for row in try Row.fetchAll(db, sql: "SELECT user_id, role FROM team_members WHERE team_id = ?", arguments: [teamId]) {
            members[row[0]] = TeamRole(rawValue: row[1]) ?? .member
        }
        return (teamId, members)
    }

    /// The teams `condition` (on `teams t`) picks, by name, with their members.
    static func teams(_ db: Database, where condition: String, _ arguments: StatementArguments) throws -> [Team] {
        let rows = try Row.fetchAll(
            db,
            sql: """
                SELECT t.name, t.created, u.user_name, u.display_name, m.role, m.since
                FROM teams t LEFT JOIN team_members m ON m.team_id = t.id LEFT JOIN users u ON u.id = m.user_id
                WHERE \(condition) ORDER BY t.name
                """, arguments: arguments)
        var teams: [Team] = []
        var current: (name: String, created: Int64, members: [TeamMember])?
        for row in rows {
            let name: String = row[0]
            if current?.name != name {
                if let done = current { teams.append(Team(name: done.name, created: ISOTime.date(millis: done.created), members: done.members)) }
                current = (name, row[1], [])
            }
            if let user: String = row[2] {
                current?.members.append(
                    TeamMember(user: user, displayName: row[3], role: TeamRole(rawValue: row[4]) ?? .member, since: ISOTime.date(millis: row[5])))
            }
        }
        if let done = current { teams.append(Team(name: done.name, created: ISOTime.date(millis: done.created), members: done.members)) }
        return teams
    }
}
