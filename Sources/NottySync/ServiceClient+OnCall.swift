import Foundation
import NottyCore

// On call (PROTOCOL.md §13.2): a team's schedule and overrides, where the user is on call, the
// calendar feed, and the user's contacts, through the service's API.
extension ServiceClient {
    public func onCall(team: String) async throws -> OnCallView {
        try Self.decoded(OnCallView.self, try await send(.GET, "/v1/teams/\(Self.pathSegment(team))/oncall"), status: 200)
    }

    /// Sets the team's rotation (owners); answers the schedule then.
    public func setRotation(team: String, rotation: [String], shift: String, start: String, zone: String) async throws -> OnCallView {
        let body = JSONValue.object([
            "rotation": .array(rotation.map(JSONValue.string)), "shift": .string(shift), "start": .string(start), "zone": .string(zone),
        ])
        let answer = try await send(.PUT, "/v1/teams/\(Self.pathSegment(team))/oncall", json: Data(body.jsonText.utf8))
        return try Self.decoded(OnCallView.self, answer, status: 200)
    }

    public func addOverride(team: String, user: String, from: String, until: String) async throws -> OnCallOverride {
        let body = JSONValue.object(["user": .string(user), "from": .string(from), "until": .string(until)])
        let answer = try await send(.POST, "/v1/teams/\(Self.pathSegment(team))/oncall/overrides", json: Data(body.jsonText.utf8))
        return try Self.decoded(OnCallOverride.self, answer, status: 201)
    }

    public func removeOverride(team: String, id: String) async throws {
        try Self.expectNoContent(try await send(.DELETE, "/v1/teams/\(Self.pathSegment(team))/oncall/overrides/\(Self.pathSegment(id))"))
    }

    /// A new secret URL of the user's shifts in the team as an iCalendar feed.
    public func makeCalendar(team: String) async throws -> SubscriptionInfo {
        let answer = try await send(.POST, "/v1/teams/\(Self.pathSegment(team))/oncall/calendar", json: Data("{}".utf8))
        return try Self.decoded(SubscriptionInfo.self, answer, status: 201)
    }

    /// Where the user is on call, and until when.
    public func myOnCall() async throws -> [MyOnCall] {
        try Self.decoded(MyOnCallList.self, try await send(.GET, "/v1/me/oncall"), status: 200).value
    }

    public func contacts() async throws -> [Contact] {
        try Self.decoded(ContactList.self, try await send(.GET, "/v1/me/contacts"), status: 200).value
    }

    public func addContact(_ target: String) async throws -> Contact {
        let body = JSONValue.object(["target": .string(target)])
        return try Self.decoded(Contact.self, try await send(.POST, "/v1/me/contacts", json: Data(body.jsonText.utf8)), status: 201)
    }

    public func removeContact(id: String) async throws {
        try Self.expectNoContent(try await send(.DELETE, "/v1/me/contacts/\(Self.pathSegment(id))"))
    }

    public func testContact(id: String) async throws -> EscalationTestOutcome {
        let answer = try await send(.POST, "/v1/me/contacts/\(Self.pathSegment(id))/test", json: Data("{}".utf8))
        return try Self.decoded(EscalationTestOutcome.self, answer, status: 200)
    }

    /// A `204`, or the service's refusal.
    static func expectNoContent(_ answer: HTTPAnswer) throws {
        guard answer.status == 204 else {
            let error = answer.errorText
            throw SyncError.refused(status: answer.status, code: error.code, message: error.message)
        }
    }
}
