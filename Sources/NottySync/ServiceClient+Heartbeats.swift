import Foundation
import NottyCore

// Heartbeats (PROTOCOL.md §16.3): the user's (or a team's) through the service's API.
extension ServiceClient {
    /// Makes a heartbeat; the answer carries its ping URL, this once.
    public func addHeartbeat(_ request: HeartbeatRequest) async throws -> HeartbeatInfo {
        let answer = try await send(.POST, "/v1/me/heartbeats", json: Data(request.json.jsonText.utf8))
        return try Self.decoded(HeartbeatInfo.self, answer, status: 201)
    }

    public func heartbeats(team: String?) async throws -> [HeartbeatInfo] {
        try Self.decoded(HeartbeatList.self, try await send(.GET, "/v1/me/heartbeats" + Self.teamQuery(team)), status: 200).value
    }

    public func removeHeartbeat(name: String, team: String?) async throws {
        try Self.expectNoContent(try await send(.DELETE, "/v1/me/heartbeats/\(Self.pathSegment(name))" + Self.teamQuery(team)))
    }

    /// Pauses (or resumes) a heartbeat; answers it as it is then.
    public func pauseHeartbeat(name: String, team: String?, paused: Bool) async throws -> HeartbeatInfo {
        let path = "/v1/me/heartbeats/\(Self.pathSegment(name))/\(paused ? "pause" : "resume")" + Self.teamQuery(team)
        return try Self.decoded(HeartbeatInfo.self, try await send(.POST, path, json: Data("{}".utf8)), status: 200)
    }

    private static func teamQuery(_ team: String?) -> String {
        guard let team, !team.isEmpty else { return "" }
        return "?team=" + pathSegment(team)
    }
}

// A team's mutes and maintenance windows (PROTOCOL.md §16.4), written by its owners.
extension ServiceClient {
    /// Sets one of the team's mutes (`value` a mute's, or null to lift it); answers the team's mutes then.
    public func setTeamMute(team: String, key: String, value: JSONValue) async throws -> [PreferenceEntry] {
        let entry = JSONValue.object([
            "key": .string(key), "value": value, "changedAt": .number(Double(ISOTime.millis(Date()))),
        ])
        let body = JSONValue.object(["preferences": .array([entry])]).jsonText
        let answer = try await send(.PATCH, "/v1/teams/\(Self.pathSegment(team))/preferences", json: Data(body.utf8))
        return try Self.decoded(PreferenceList.self, answer, status: 200).preferences
    }
}
