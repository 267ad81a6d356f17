import Foundation
import GRDB
import NottyCore
import NottySecrets
import NottyService

/// Web Push (PROTOCOL.md §14): the VAPID key and the browsers' subscriptions.
extension SQLiteStorage {
    public func webPushKey(orInsert candidate: (privateKey: String, publicKey: String)) async throws -> (privateKey: String, publicKey: String) {
        try await write { db, _ in
            try db.execute(
                sql: "INSERT INTO webpush_keys (name, private_key, public_key) VALUES ('vapid', ?, ?) ON CONFLICT (name) DO NOTHING",
                arguments: [candidate.privateKey, candidate.publicKey])
            let row = try Row.fetchOne(db, sql: "SELECT private_key, public_key FROM webpush_keys WHERE name = 'vapid'")
            return (row?["private_key"] ?? candidate.privateKey, row?["public_key"] ?? candidate.publicKey)
        }
    }

    public func upsertWebPushSubscription(_ subscription: WebPushSubscription, limit: Int) async throws -> WebPushSubscription? {
        try await write { db, _ in
            if let existing = try Self.webPushRows(db, "WHERE user_id = ? AND endpoint = ?", [subscription.userId, subscription.endpoint]).first {
                try db.execute(
                    sql: """
                        UPDATE webpush_subscriptions SET p256dh = ?, auth = ?, device_id = ?, retry_at = NULL, failures = 0, last_error = NULL
                        WHERE id = ?
                        """,
                    arguments: [subscription.p256dh, subscription.auth.stored, subscription.deviceId, existing.id])
                var renewed = existing
                (renewed.p256dh, renewed.auth, renewed.deviceId, renewed.retryAt, renewed.failures, renewed.lastError) = (
                    subscription.p256dh, subscription.auth, subscription.deviceId, nil, 0, nil
                )
                return renewed
            }
            let count =
                try Int.fetchOne(db, sql: "SELECT count(*) FROM webpush_subscriptions WHERE user_id = ?", arguments: [subscription.userId]) ?? 0
            guard count < limit else { return nil }
            try db.execute(
                sql: """
                    INSERT INTO webpush_subscriptions (id, user_id, device_id, endpoint, p256dh, auth, position, created)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    subscription.id, subscription.userId, subscription.deviceId, subscription.endpoint, subscription.p256dh, subscription.auth.stored,
                    subscription.position,
                    ISOTime.millis(subscription.created),
                ])
            return subscription
        }
    }

    public func deleteWebPushSubscription(id: String, userId: String?) async throws -> Bool {
        try await write { db, _ in
            if let userId {
                try db.execute(sql: "DELETE FROM webpush_subscriptions WHERE id = ? AND user_id = ?", arguments: [id, userId])
            } else {
                try db.execute(sql: "DELETE FROM webpush_subscriptions WHERE id = ?", arguments: [id])
            }
            return db.changesCount > 0
        }
    }

    public func webPushSubscriptions(userId: String) async throws -> [WebPushSubscription] {
        try await read { db in try Self.webPushRows(db, "WHERE user_id = ? ORDER BY created, id", [userId]) }
    }

    public func webPushUsers(retryDue: Date?, limit: Int) async throws -> [String] {
        try await read { db in
            if let retryDue {
                try String.fetchAll(
                    db, sql: "SELECT DISTINCT user_id FROM webpush_subscriptions WHERE retry_at <= ? LIMIT ?",
                    arguments: [ISOTime.millis(retryDue), limit])
            } else {
                try String.fetchAll(db, sql: "SELECT DISTINCT user_id FROM webpush_subscriptions LIMIT ?", arguments: [limit])
            }
        }
    }

    public func updateWebPushSubscription(id: String, from: Int64, to: Int64, retryAt: Date?, failures: Int, error: String?) async throws -> Bool {
        try await write { db, _ in
            try db.execute(
                sql: "UPDATE webpush_subscriptions SET position = ?, retry_at = ?, failures = ?, last_error = ? WHERE id = ? AND position = ?",
                arguments: [to, retryAt.map(ISOTime.millis), failures, error, id, from])
            return db.changesCount > 0
        }
    }

    private static func webPushRows(_ db: Database, _ condition: String, _ arguments: StatementArguments) throws -> [WebPushSubscription] {
        try Row.fetchAll(
            db,
            sql:
                "SELECT id, user_id, device_id, endpoint, p256dh, auth, position, created, retry_at, failures, last_error FROM webpush_subscriptions \(condition)",
            arguments: arguments
        ).map { row in
            WebPushSubscription(
                id: row["id"], userId: row["user_id"], deviceId: row["device_id"], endpoint: row["endpoint"], p256dh: row["p256dh"],
                auth: Sealed(stored: row["auth"]), position: row["position"],
                created: ISOTime.date(millis: row["created"]), retryAt: (row["retry_at"] as Int64?).map(ISOTime.date(millis:)),
                failures: row["failures"], lastError: row["last_error"])
        }
    }
}
