import Foundation
import NottyCore
import NottySecrets
import NottyService
import PostgresNIO

/// Web Push (PROTOCOL.md §14) on PostgreSQL: one VAPID key for every instance (the first to
/// start makes it), the browsers' subscriptions, each moved on only from where it was read.
extension PostgresStorage {
    public func webPushKey(orInsert candidate: (privateKey: String, publicKey: String)) async throws -> (privateKey: String, publicKey: String) {
        try await transaction { connection in
            try await connection.exec(
                """
                INSERT INTO webpush_keys (name, private_key, public_key) VALUES ('vapid', \(candidate.privateKey), \(candidate.publicKey))
                ON CONFLICT (name) DO NOTHING
                """, logger: self.logger)
            let rows = try await connection.query("SELECT private_key, public_key FROM webpush_keys WHERE name = 'vapid'", logger: self.logger)
                .collect((String, String).self)
            return rows.first.map { ($0.0, $0.1) } ?? candidate
        }
    }

    public func upsertWebPushSubscription(_ subscription: WebPushSubscription, limit: Int) async throws -> WebPushSubscription? {
        try await transaction { connection in
            _ = try await connection.query("SELECT 1 FROM users WHERE id = \(subscription.userId) FOR UPDATE", logger: self.logger).collect()
            let found = try await Self.webPushRows(
                connection, "WHERE user_id = \(subscription.userId) AND endpoint = \(subscription.endpoint)", logger: self.logger)
            if var renewed = found.first {
                try await connection.exec(
                    """
                    UPDATE webpush_subscriptions SET p256dh = \(subscription.p256dh), auth = \(subscription.auth.stored),
                    device_id = \(subscription.deviceId), retry_at = NULL, failures = 0, last_error = NULL WHERE id = \(renewed.id)
                    """, logger: self.logger)
                (renewed.p256dh, renewed.auth, renewed.deviceId, renewed.retryAt, renewed.failures, renewed.lastError) = (
                    subscription.p256dh, subscription.auth, subscription.deviceId, nil, 0, nil
                )
                return renewed
            }
            let counted = try await connection.query(
                "SELECT count(*) FROM webpush_subscriptions WHERE user_id = \(subscription.userId)", logger: self.logger
            ).collect(Int64.self)
            guard (counted.first ?? 0) < Int64(limit) else { return nil }
            try await connection.exec(
                """
                INSERT INTO webpush_subscriptions (id, user_id, device_id, endpoint, p256dh, auth, position, created)
                VALUES (\(subscription.id), \(subscription.userId), \(subscription.deviceId), \(subscription.endpoint), \(subscription.p256dh), \(subscription.auth.stored),
                        \(subscription.position), \(ISOTime.millis(subscription.created)))
                """, logger: self.logger)
            return subscription
        }
    }

    public func deleteWebPushSubscription(id: String, userId: String?) async throws -> Bool {
        try await run { connection in
            let query: PostgresQuery =
                if let userId {
                    "DELETE FROM webpush_subscriptions WHERE id = \(id) AND user_id = \(userId) RETURNING 1"
                } else {
                    "DELETE FROM webpush_subscriptions WHERE id = \(id) RETURNING 1"
                }
            return !(try await connection.query(query, logger: self.logger).collect(Int32.self).isEmpty)
        }
    }

    public func webPushSubscriptions(userId: String) async throws -> [WebPushSubscription] {
        try await run { connection in
            try await Self.webPushRows(connection, "WHERE user_id = \(userId) ORDER BY created, id", logger: self.logger)
        }
    }

    public func webPushUsers(retryDue: Date?, limit: Int) async throws -> [String] {
        try await run { connection in
            let query: PostgresQuery =
                if let retryDue {
                    "SELECT DISTINCT user_id FROM webpush_subscriptions WHERE retry_at <= \(ISOTime.millis(retryDue)) LIMIT \(Int64(limit))"
                } else {
                    "SELECT DISTINCT user_id FROM webpush_subscriptions LIMIT \(Int64(limit))"
                }
            return try await connection.query(query, logger: self.logger).collect(String.self)
        }
    }

    public func updateWebPushSubscription(id: String, from: Int64, to: Int64, retryAt: Date?, failures: Int, error: String?) async throws -> Bool {
        try await run { connection in
            !(try await connection.query(
                """
                UPDATE webpush_subscriptions SET position = \(to), retry_at = \(retryAt.map(ISOTime.millis)), failures = \(Int64(failures)),
                last_error = \(error) WHERE id = \(id) AND position = \(from) RETURNING 1
                """, logger: self.logger
            ).collect(Int32.self).isEmpty)
        }
    }

    private static func webPushRows(_ connection: PostgresConnection, _ condition: PostgresQuery, logger: Logger) async throws
        -> [WebPushSubscription]
    {
        var query: PostgresQuery =
            "SELECT id, user_id, device_id, endpoint, p256dh, auth, position, created, retry_at, failures, last_error FROM webpush_subscriptions "
        query.sql += condition.sql
        query.binds = condition.binds
        return try await connection.query(query, logger: logger).collect(
            (String, String, String?, String, String, String, Int64, Int64, Int64?, Int32, String?).self
        )
        .map { row in
            WebPushSubscription(
                id: row.0, userId: row.1, deviceId: row.2, endpoint: row.3, p256dh: row.4, auth: Sealed(stored: row.5), position: row.6,
                created: ISOTime.date(millis: row.7), retryAt: row.8.map(ISOTime.date(millis:)), failures: Int(row.9), lastError: row.10)
        }
    }
}
