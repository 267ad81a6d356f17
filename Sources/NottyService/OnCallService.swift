import Foundation
import NottyCore

/// On call (PROTOCOL.md §13.2) as the routes and the rest of the service ask it: a team's
/// rotation and overrides, where a user is on call, a calendar feed of their shifts, and each
/// user's contacts (which a team's escalation policy pages). Its engine is `NottyOnCall`'s
/// `OnCall`.
public protocol OnCallService: Sendable {
    /// `GET /v1/teams/{name}/oncall`: who is on call now, the next handoffs, the overrides.
    func view(team name: String, userId: String) async throws -> OnCallView
    /// `PUT /v1/teams/{name}/oncall` `{"rotation": [users], "shift": "1w", "start": "YYYY-MM-DD HH:MM",
    /// "zone": "Europe/Berlin"}` (owners): the rotation; its overrides stay.
    func setRotation(team name: String, by userId: String, _ request: RotationRequest) async throws -> OnCallView
    /// `POST /v1/teams/{name}/oncall/overrides` `{"user", "from", "until"}`: `user` on call
    /// instead of the rotation from `from` until `until` (times in the rotation's zone, or ISO
    /// 8601). A member overrides for themselves, an owner for anyone.
    func addOverride(team name: String, by userId: String, _ request: OverrideRequest) async throws -> OnCallOverride
    /// `DELETE /v1/teams/{name}/oncall/overrides/{id}`: an owner removes any; a member their own.
    func removeOverride(team name: String, by userId: String, id: String) async throws
    /// `teams` each with who is on call now (`GET /v1/me/teams`, `GET /v1/teams/{name}`).
    func withOnCall(_ teams: [Team]) async throws -> [Team]
    /// `GET /v1/me/oncall`: for each of the user's teams with a schedule, whether they are on
    /// call now and until when, else their next shift.
    func mine(userId: String) async throws -> MyOnCallList
    /// `POST /v1/teams/{name}/oncall/calendar`: a secret URL of an iCalendar feed of the user's
    /// own shifts in the team (a device of platform `ical`: `notty devices revoke` ends it).
    func makeCalendar(team name: String, userId: String, baseURL: String?) async throws -> SubscriptionInfo
    /// `GET /v1/calendars/{token}.ics`: the feed (`404` when revoked, or the user left the team).
    func calendarFeed(token: String) async throws -> String
    /// `GET /v1/me/contacts`: the user's contacts, their credentials opened (the user's own).
    func contacts(userId: String) async throws -> ContactList
    /// `POST /v1/me/contacts` `{"target": "ntfy:URL"}`: one of §11's targets, which the outbound
    /// policy must allow; kept sealed.
    func addContact(userId: String, _ request: ContactRequest) async throws -> Contact
    /// `DELETE /v1/me/contacts/{id}`.
    func removeContact(userId: String, id: String) async throws
    /// `POST /v1/me/contacts/{id}/test`: one test message to the contact, now.
    func testContact(userId: String, id: String) async throws -> EscalationTestOutcome
}

/// What on call asks of the storage.
public typealias OnCallWorkStorage = OnCallStorage & TeamStorage & AccountStorage & SubscriptionStorage
