import Foundation
import NottyCore
import NottyWebhooks

/// Heartbeats (PROTOCOL.md §16.3) as the routes and the background jobs ask them: a user's or a
/// team's heartbeats, their pings, Opsgenie's Heartbeat API on a hook's key, and the job that
/// announces what is overdue. Its engine is `NottyIncidents`' `Heartbeats`.
public protocol HeartbeatService: Sendable {
    /// The job that announces what is overdue (one look over the due times a tick).
    var jobs: [BackgroundJob] { get }
    /// `POST /v1/me/heartbeats`: a new heartbeat, with its ping URL under `baseURL` (shown this once).
    func add(userId: String, _ request: HeartbeatRequest, baseURL: String) async throws -> HeartbeatInfo
    /// `GET /v1/me/heartbeats[?team=T]`: the user's (or the team's, for any member) by name.
    func list(userId: String, team: String?) async throws -> [HeartbeatInfo]
    /// `DELETE /v1/me/heartbeats/{name}[?team=T]`: removed, its notification (if out) dismissed.
    func remove(userId: String, name: String, team: String?) async throws
    /// `POST /v1/me/heartbeats/{name}/pause|resume[?team=T]`: paused, nothing is announced (an
    /// announcement out is taken back); resumed, due every + grace from now.
    func pause(userId: String, name: String, team: String?, paused: Bool) async throws -> HeartbeatInfo
    /// `GET|HEAD|POST /v1/heartbeats/{token}` (and `…/fail`): the ping is recorded; a late
    /// notification out is dismissed on every device by it, and a failure is published at once.
    func ping(token: String, failed: Bool) async throws
    /// Announces every overdue heartbeat (what this instance claims), a batch at a time.
    /// Returns how many were announced.
    @discardableResult
    func announceOverdue() async throws -> Int
    /// `POST /v2/heartbeats`: a heartbeat in the key's feed (disabled: paused from the start).
    func opsgenieCreate(key: String?, _ body: Opsgenie.Heartbeat) async throws -> HeartbeatInfo
    /// `GET /v2/heartbeats/{name}`.
    func opsgenieGet(key: String?, name: String) async throws -> HeartbeatInfo
    /// `GET /v2/heartbeats`.
    func opsgenieList(key: String?) async throws -> [HeartbeatInfo]
    /// `PATCH /v2/heartbeats/{name}`: what the body gives changes (a new interval counts from the
    /// last ping); `enabled` pauses or resumes.
    func opsgenieUpdate(key: String?, name: String, _ body: Opsgenie.Heartbeat) async throws -> HeartbeatInfo
    /// `DELETE /v2/heartbeats/{name}`.
    func opsgenieDelete(key: String?, name: String) async throws
    /// `POST /v2/heartbeats/{name}/enable|disable`.
    func opsgenieEnable(key: String?, name: String, enabled: Bool) async throws -> HeartbeatInfo
    /// `GET|POST|HEAD /v2/heartbeats/{name}/ping`: a ping, as through the heartbeat's URL.
    func opsgeniePing(key: String?, name: String) async throws
}
