import Foundation
import GRDB
import NottyCore
import NottyService
import NottyStorageSupport

/// Teams and their members (PROTOCOL.md §13.1). A change of membership reads the members and
/// writes in the writer's one transaction, so two owners leaving at once leave an owner.
///
/// A team's notifications are in a feed of its own, whose owner is an account row with the
/// team's id (no password: nobody signs in as it). Each member's reads take in the feeds of
/// their teams (``owners(_:)``); joining or leaving a team moves the member's history start
/// past their devices' cursors, so that each resyncs (``resync(_:userId:_:)``).
extension SQLiteStorage {
    public func createTeam(id: String, name: String, ownerId: String, at: Date) async throws {
        try await write { db, context in
            do {
                try db.execute(sql: "INSERT INTO teams (id, name, created) VALUES (?, ?, ?)", arguments: [id, name, ISOTime.millis(at)])
            } catch let error as DatabaseError where error.extendedResultCode == .SQLITE_CONSTRAINT_UNIQUE {
                throw StorageError.conflict("a team named \(name) exists")
            }
            try db.execute(
                sql: "INSERT INTO users (id, user_name, display_name, password_hash) VALUES (?, ?, ?, '')",
                arguments: [id, Team.feedOwnerName(name), name])
            try db.execute(
                sql: "INSERT INTO team_members (team_id, user_id, role, since) VALUES (?, ?, 'owner', ?)",
                arguments: [id, ownerId, ISOTime.millis(at)])
            try Self.resync(db, userId: ownerId, context)
        }
    }

    public func deleteTeam(name: String) async throws -> Bool {
        try await write { db, context in
            guard let (teamId, members) = try Self.members(db, team: name) else { return false }
            for member in members.keys { try Self.resync(db, userId: member, context) }
            try db.execute(sql: "DELETE FROM teams WHERE id = ?", arguments: [teamId])
            try db.execute(sql: "DELETE FROM users WHERE id = ?", arguments: [teamId])  // its feed with it
            return true
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

    public func teams(ids: [String]) async throws -> [Team] {
        guard !ids.isEmpty else { return [] }
        return try await read { db in try Self.teams(db, where: "t.id IN (\(databaseQuestionMarks(count: ids.count)))", StatementArguments(ids)) }
    }

    public func setTeamMember(team: String, userId: String, role: TeamRole, at: Date, limits: TeamLimits) async throws -> TeamChange {
        try await write { db, context in
            guard let (teamId, members) = try Self.members(db, team: team) else { return .noTeam }
            let teamsOfUser = try Int.fetchOne(db, sql: "SELECT count(*) FROM team_members WHERE user_id = ?", arguments: [userId]) ?? 0
            let change = TeamRules.setting(userId, role: role, members: members, teamsOfUser: teamsOfUser, limits: limits)
            guard change == .done, members[userId] != role else { return change }
            try db.execute(
                sql: """
                    INSERT INTO team_members (team_id, user_id, role, since) VALUES (?, ?, ?, ?)
                    ON CONFLICT (team_id, user_id) DO UPDATE SET role = excluded.role, since = excluded.since
                    """, arguments: [teamId, userId, role.rawValue, ISOTime.millis(at)])
            if members[userId] == nil { try Self.resync(db, userId: userId, context) }
            return .done
        }
    }

    public func removeTeamMember(team: String, userId: String) async throws -> TeamChange {
        try await write { db, context in
            guard let (teamId, members) = try Self.members(db, team: team) else { return .noTeam }
            let change = TeamRules.removing(userId, members: members)
            guard change == .done else { return change }
            try db.execute(sql: "DELETE FROM team_members WHERE team_id = ? AND user_id = ?", arguments: [teamId, userId])
            try Self.resync(db, userId: userId, context)
            return .done
        }
    }

    public func teamOwners(ids: [String], userId: String) async throws -> [String: String] {
        try await read { db in
            // A user in no team (most): one indexed read, and no lookup by id.
            let teams = try Self.ownerIds(db, userId: userId).dropFirst()
            guard !teams.isEmpty else { return [:] }
            let statement = try db.cachedStatement(
                sql: "SELECT user_id FROM notifications WHERE \(Self.idMatches) AND user_id IN (SELECT team_id FROM team_members WHERE user_id = ?2)")
            var owners: [String: String] = [:]
            for id in ids {
                if let owner = try String.fetchOne(statement, arguments: [id, userId]) { owners[id] = owner }
            }
            return owners
        }
    }

    /// A user who joined or left a team: the start of their feed's history moves past their
    /// devices' cursors (`410`), so each resyncs and takes in or drops the team's notifications.
    static func resync(_ db: Database, userId: String, _ context: WriteContext) throws {
        try db.execute(sql: "UPDATE users SET purged_through = ? WHERE id = ?", arguments: [context.nextSeq(for: userId), userId])
    }

    /// The feeds a user reads, as SQL on the parameter `parameter` (the user's id): their own
    /// and those of the teams they are in.
    static func owners(_ parameter: String) -> String {
        "(SELECT \(parameter) UNION ALL SELECT team_id FROM team_members WHERE user_id = \(parameter))"
    }

    /// The same, as rows of one column `id`.
    static func ownerRows(_ parameter: String) -> String {
        "(SELECT \(parameter) AS id UNION ALL SELECT team_id FROM team_members WHERE user_id = \(parameter))"
    }

    /// The feeds a user reads: their own, then their teams'.
    static func ownerIds(_ db: Database, userId: String) throws -> [String] {
        [userId] + (try String.fetchAll(db.cachedStatement(sql: "SELECT team_id FROM team_members WHERE user_id = ?"), arguments: [userId]))
    }

    /// The start of the user's history: the latest of their own feed's and their teams'.
    static func purgedThrough(_ db: Database, userId: String) throws -> Int64 {
        try Int64.fetchOne(
            db.cachedStatement(sql: "SELECT max(purged_through) FROM users WHERE id IN \(owners("?1"))"), arguments: [userId]) ?? 0
    }

    /// Each member of the teams whose feeds a write changed: (team, user) pairs.
    static func membersOfChangedTeams(_ db: Database, _ context: WriteContext) throws -> [(team: String, user: String)] {
        let teams = context.changedTeams
        guard !teams.isEmpty else { return [] }
        return try Row.fetchAll(
            db, sql: "SELECT team_id, user_id FROM team_members WHERE team_id IN (\(teams.map { _ in "?" }.joined(separator: ", ")))",
            arguments: StatementArguments(teams)
        ).map { ($0[0], $0[1]) }
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
                SELECT t.name, t.created, t.id, u.user_name, u.display_name, m.role, m.since
                FROM teams t LEFT JOIN team_members m ON m.team_id = t.id LEFT JOIN users u ON u.id = m.user_id
                WHERE \(condition) ORDER BY t.name
                """, arguments: arguments)
        var teams: [Team] = []
        var current: Team?
        for row in rows {
            let name: String = row[0]
            if current?.name != name {
                if let done = current { teams.append(Team(id: done.id, name: done.name, created: done.created, members: done.members)) }
                current = Team(id: row[2], name: name, created: ISOTime.date(millis: row[1]), members: [])
            }
            if let user: String = row[3] {
                current?.members.append(
                    TeamMember(user: user, displayName: row[4], role: TeamRole(rawValue: row[5]) ?? .member, since: ISOTime.date(millis: row[6])))
            }
        }
        if let done = current { teams.append(Team(id: done.id, name: done.name, created: done.created, members: done.members)) }
        return teams
    }
}
