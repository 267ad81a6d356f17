import Foundation
import NottyCore

// The user's escalation rules (PROTOCOL.md §11) through the service's API.
extension ServiceClient {
    /// Every rule, oldest first.
    public func escalationRules(team: String? = nil) async throws -> [EscalationRule] {
        try await escalationRuleList(team: team).value
    }

    /// Where the rules are: the user's own, or a team's policy (PROTOCOL.md §13.2).
    static func rulesPath(team: String?) -> String {
        team.map { "/v1/teams/\(pathSegment($0))/escalations" } ?? "/v1/me/escalations"
    }

    /// Every rule, oldest first, with each target's last delivery and last error.
    public func escalationRuleList(team: String? = nil) async throws -> EscalationRuleList {
        let answer = try await send(.GET, Self.rulesPath(team: team))
        return try Self.decoded(EscalationRuleList.self, answer, status: 200)
    }

    /// Sends a test message to each target of the rule; answers how each went.
    public func testEscalationRule(id: String) async throws -> [EscalationTestOutcome] {
        let answer = try await send(
            .POST, "/v1/me/escalations/\(id.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? id)/test", json: Data("{}".utf8))
        return try Self.decoded(EscalationTestReport.self, answer, status: 200).value
    }

    /// Adds a rule (`body` as `POST /v1/me/escalations` takes it); answers it as stored.
    public func addEscalationRule(_ body: JSONValue, team: String? = nil) async throws -> EscalationRule {
        let answer = try await send(.POST, Self.rulesPath(team: team), json: Data(body.jsonText.utf8))
        return try Self.decoded(EscalationRule.self, answer, status: 201)
    }

    public func removeEscalationRule(id: String, team: String? = nil) async throws {
        let answer = try await send(.DELETE, Self.rulesPath(team: team) + "/\(id.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? id)")
        guard answer.status == 204 else {
            let error = answer.errorText
            throw SyncError.refused(status: answer.status, code: error.code, message: error.message)
        }
    }

    /// `answer`'s body as `T` when its status is `status`; the service's refusal otherwise.
    static func decoded<T: Decodable>(_ type: T.Type, _ answer: HTTPAnswer, status: Int) throws -> T {
        guard answer.status == status else {
            let error = answer.errorText
            throw SyncError.refused(status: answer.status, code: error.code, message: error.message)
        }
        do {
            return try NottyJSON.decoder.decode(T.self, from: answer.body)
        } catch {
            throw SyncError.unreachable("the service sent an answer notty cannot read: \(error)")
        }
    }
}
