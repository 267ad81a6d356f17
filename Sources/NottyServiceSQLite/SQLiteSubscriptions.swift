import Foundation
import GRDB
import NottyCore
import NottyRecords
import NottySecrets
import NottyService

/// Subscriptions (devices, webhooks, ntfy topics) and when a device was last seen.
extension SQLiteStorage {
    public func insertSubscription(_ s: SubscriptionRecord) async throws {
        try await write { db, _ in
            try db.execute(
                sql: """
                    INSERT INTO subscriptions (id, user_id, host_name, device_id, device_name, platform, created, expires, revoked, last_seen,
                                               webhook_hash, webhook_secret, alertmanager_url, upstream_id)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    s.id, s.userId, s.targetHostName, s.deviceId, s.deviceName, s.platform,
                    ISOTime.millis(s.createdAt), ISOTime.millis(s.expiresAt), s.revoked, s.lastSeen.map(ISOTime.millis),
                    s.webhookHash, s.webhookSecret?.stored, s.alertmanagerURL?.stored, s.upstreamId,
                ])
        }
    }

    public func subscription(id: String) async throws -> SubscriptionRecord? {
        try await read { db in try Row.fetchOne(db, sql: "SELECT * FROM subscriptions WHERE id = ?", arguments: [id]).map(Self.subscription) }
    }

    public func subscription(webhookHash hash: String) async throws -> SubscriptionRecord? {
        try await read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM subscriptions WHERE webhook_hash = ?", arguments: [hash]).map(Self.subscription)
        }
    }

    public func subscriptions(userId: String) async throws -> [SubscriptionRecord] {
        try await read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM subscriptions WHERE user_id = ? AND revoked = 0 ORDER BY created", arguments: [userId]).map(
                Self.subscription)
        }
    }

    public func revokeSubscription(id: String, userId: String) async throws -> Bool {
        defer { markCredentialsChanged() }
        return try await write { db, _ in
            guard
                let row = try Row.fetchOne(
                    db, sql: "SELECT host_name, device_id FROM subscriptions WHERE id = ? AND user_id = ? AND revoked = 0", arguments: [id, userId])
            else { return false }
            try db.execute(sql: "UPDATE subscriptions SET revoked = 1 WHERE id = ?", arguments: [id])
            if (row["host_name"] as String?) == nil {
                try db.execute(
                    sql: "UPDATE tokens SET revoked = 1 WHERE device_id = ? AND subject = ? AND revoked = 0",
                    arguments: [row["device_id"] as String, userId])
                // A browser's Web Push subscriptions end with its device (PROTOCOL.md §14).
                try db.execute(
                    sql: "DELETE FROM webpush_subscriptions WHERE device_id = ? AND user_id = ?", arguments: [row["device_id"] as String, userId])
            }
            return true
        }
    }

    public func setUpstreamId(subscriptionId: String, upstreamId: String) async throws {
        try await write { db, _ in
            try db.execute(sql: "UPDATE subscriptions SET upstream_id = ? WHERE id = ?", arguments: [upstreamId, subscriptionId])
        }
    }

    public func touchDevice(deviceId: String, userId: String, at: Date) async throws {
        try await write { db, _ in
            try db.execute(
                sql: "UPDATE subscriptions SET last_seen = ? WHERE device_id = ? AND user_id = ? AND host_name IS NULL AND revoked = 0",
                arguments: [ISOTime.millis(at), deviceId, userId])
        }
    }

    static func subscription(_ row: Row) -> SubscriptionRecord {
        SubscriptionRecord(
            id: row["id"], userId: row["user_id"], targetHostName: row["host_name"], deviceId: row["device_id"],
            deviceName: row["device_name"], platform: row["platform"], createdAt: ISOTime.date(millis: row["created"]),
            expiresAt: ISOTime.date(millis: row["expires"]), revoked: row["revoked"],
            lastSeen: (row["last_seen"] as Int64?).map(ISOTime.date(millis:)), webhookHash: row["webhook_hash"],
            webhookSecret: (row["webhook_secret"] as String?).map(Sealed.init(stored:)),
            alertmanagerURL: (row["alertmanager_url"] as String?).map(Sealed.init(stored:)), upstreamId: row["upstream_id"])
    }
}
