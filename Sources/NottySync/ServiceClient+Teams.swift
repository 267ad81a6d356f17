import Foundation
import NottyCore

// Teams (PROTOCOL.md §13.1): the signed-in user's teams and their members.
extension ServiceClient {
    /// The user's teams, by name.
    public func teams() async throws -> [Team] {
        try Self.decoded(TeamList.self, try await send(.GET, "/v1/me/teams"), status: 200).value
    }

    /// One team the user is in.
    public func team(_ name: String) async throws -> Team {
        try Self.decoded(Team.self, try await send(.GET, "/v1/teams/\(Self.pathSegment(name))"), status: 200)
    }

    /// Adds a member, or changes a member's role (owners only); answers the team then.
    public func setTeamMember(_ team: String, user: String, role: TeamRole) async throws -> Team {
        let body = JSONValue.object(["user": .string(user), "role": .string(role.rawValue)])
        let answer = try await send(.POST, "/v1/teams/\(Self.pathSegment(team))/members", json: Data(body.jsonText.utf8))
        return try Self.decoded(Team.self, answer, status: 200)
    }

    /// Takes a member out (owners), or leaves (anyone, for themselves).
    public func removeTeamMember(_ team: String, user: String) async throws {
        let answer = try await send(.DELETE, "/v1/teams/\(Self.pathSegment(team))/members/\(Self.pathSegment(user))")
        guard answer.status == 204 else {
            let error = answer.errorText
            throw SyncError.refused(status: answer.status, code: error.code, message: error.message)
        }
    }

    /// The team's app subscriptions and hooks (owners; PROTOCOL.md §15).
    public func teamSubscriptions(_ team: String) async throws -> [SubscriptionInfo] {
        let answer = try await send(.GET, "/v1/teams/\(Self.pathSegment(team))/subscriptions")
        return try Self.decoded(SubscriptionList.self, answer, status: 200).value
    }

    /// Revokes one of the team's app subscriptions or hooks (owners).
    public func revokeTeamSubscription(_ team: String, id: String) async throws {
        let answer = try await send(.DELETE, "/v1/teams/\(Self.pathSegment(team))/subscriptions/\(Self.pathSegment(id))")
        guard answer.status == 204 else {
            let error = answer.errorText
            throw SyncError.refused(status: answer.status, code: error.code, message: error.message)
        }
    }

    /// `text` as one path segment.
    static func pathSegment(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "-._~"))) ?? text
    }
}
