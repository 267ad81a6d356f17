import Foundation
import NottyCore
import NottyService
import NottyWebhooks

// MARK: - Opsgenie's Heartbeat API (PROTOCOL.md §16.3)

extension Heartbeats {
    /// The feed an Opsgenie key's heartbeats are in: its hook's (its user's, or its team's);
    /// `401` for a key that is no hook's, as Opsgenie answers.
    func feed(genieKey key: String?) async throws -> Feed {
        let hook = try await publishing.opsgenieHook(key: key)
        return Feed(id: hook.subscription.userId, team: try await publishing.teamName(ofFeed: hook.subscription.userId))
    }

    public func opsgenieCreate(key: String?, _ body: Opsgenie.Heartbeat) async throws -> HeartbeatInfo {
        let owner = try await feed(genieKey: key)
        guard let name = body.name, let every = body.every else { throw ServiceError.unprocessable("name and interval are required") }
        let request = HeartbeatRequest(name: name, every: every, priority: body.priority ?? .high, message: body.message)
        let (made, _) = try await add(owner: owner, createdBy: owner.id, request)
        return body.enabled == false ? try await pause(owner: owner, name: made.name, paused: true) : made
    }

    public func opsgenieGet(key: String?, name: String) async throws -> HeartbeatInfo {
        let owner = try await feed(genieKey: key)
        return Self.info(try await heartbeat(owner: owner, name: name), team: owner.team, now: clock.nowMillis())
    }

    public func opsgenieList(key: String?) async throws -> [HeartbeatInfo] {
        try await list(owner: try await feed(genieKey: key))
    }

    public func opsgenieUpdate(key: String?, name: String, _ body: Opsgenie.Heartbeat) async throws -> HeartbeatInfo {
        let owner = try await feed(genieKey: key)
        if body.name.map({ $0 != name }) == true { throw ServiceError.unprocessable("notty does not rename heartbeats: make a new one") }
        if body.every != nil || body.priority != nil || body.message != nil {
            let every = body.every
            guard
                try await db({
                    try await storage.updateHeartbeat(
                        ownerId: owner.id, name: name, every: every, grace: every.map(Heartbeat.defaultGrace(every:)), priority: body.priority,
                        message: body.message)
                }) != nil
            else { throw Self.missing(name, owner) }
            lookAgain()
        }
        if let enabled = body.enabled { return try await pause(owner: owner, name: name, paused: !enabled) }
        return Self.info(try await heartbeat(owner: owner, name: name), team: owner.team, now: clock.nowMillis())
    }

    public func opsgenieDelete(key: String?, name: String) async throws {
        try await remove(owner: try await feed(genieKey: key), name: name)
    }

    public func opsgenieEnable(key: String?, name: String, enabled: Bool) async throws -> HeartbeatInfo {
        try await pause(owner: try await feed(genieKey: key), name: name, paused: !enabled)
    }

    public func opsgeniePing(key: String?, name: String) async throws {
        let owner = try await feed(genieKey: key)
        try await ping(try await heartbeat(owner: owner, name: name), failed: false)
    }
}
