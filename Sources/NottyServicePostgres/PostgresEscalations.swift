import Foundation
import Logging
import NottyCore
import NottyRecords
import NottyService
import PostgresNIO

/// The user's escalation rules (PROTOCOL.md §11) on PostgreSQL: a row each, its targets as a JSON
/// array. A new rule locks the user's row, so that two instances adding at once keep the limit.
extension PostgresStorage {
    static let escalationColumns = "id, name, after_seconds, repeat_seconds, targets, priority, app, group_name, created"
    typealias EscalationRow = (String, String, Int64, Int64?, String, String, String?, String?, Int64)

    public func escalationRules(userId: String) async throws -> [EscalationRule] {
        try await run { connection in
            try await connection.query(
                "SELECT \(unescaped: Self.escalationColumns) FROM escalation_rules WHERE user_id = \(userId) ORDER BY created, id",
                logger: self.logger
            ).collect(EscalationRow.self).map(Self.escalationRule)
        }
    }

    public func insertEscalationRule(_ rule: EscalationRule, userId: String, limit: Int) async throws -> Bool {
        let targets = JSONValue.array(rule.targets.map(JSONValue.string)).jsonText
        return try await transaction { connection in
            _ = try await connection.query("SELECT 1 FROM users WHERE id = \(userId) FOR UPDATE", logger: self.logger).collect()
            let counted: [Int64] = try await connection.query("SELECT count(*) FROM escalation_rules WHERE user_id = \(userId)", logger: self.logger)
                .collect(Int64.self)
            guard (counted.first ?? 0) < Int64(limit) else { return false }
            let inserted = try await connection.query(
                """
                INSERT INTO escalation_rules (id, user_id, name, after_seconds, repeat_seconds, targets, priority, app, group_name, created)
                VALUES (\(rule.id), \(userId), \(rule.name), \(Int64(rule.afterSeconds)), \(rule.repeatSeconds.map(Int64.init)), \(targets),
                        \(rule.priority), \(rule.app), \(rule.group), \(ISOTime.millis(rule.createdDateTime)))
                ON CONFLICT (user_id, name) DO NOTHING RETURNING id
                """, logger: self.logger
            ).collect(String.self)
            guard !inserted.isEmpty else { return false }
            // A first rule watches what changes from now on: escalation's cursor starts at the newest.
            if (counted.first ?? 0) == 0 {
                try await connection.exec(
                    """
                    INSERT INTO escalation_cursors (user_id, seq)
                    VALUES (\(userId), coalesce((SELECT max(seq) FROM notifications WHERE user_id = \(userId)), 0))
                    ON CONFLICT (user_id) DO UPDATE SET seq = excluded.seq
                    """, logger: self.logger)
            }
            return true
        }
    }

    public func deleteEscalationRule(id: String, userId: String) async throws -> Bool {
        let now = ISOTime.millis(Date())
        return try await transaction { connection in
            guard
                try await !connection.query("DELETE FROM escalation_rules WHERE id = \(id) AND user_id = \(userId) RETURNING id", logger: self.logger)
                    .collect(String.self).isEmpty
            else { return false }
            // Its escalations not yet begun go with it; retractions of what it sent still go out.
            try await connection.exec(
                "DELETE FROM escalation_deliveries WHERE rule_id = \(id) AND event = 'escalated' AND lease_until <= \(now)", logger: self.logger)
            return true
        }
    }

    static func escalationRule(_ r: EscalationRow) -> EscalationRule {
        let targets: [String]
        if case .array(let items)? = JSONParser.parse(Data(r.4.utf8)) {
            targets = items.compactMap { if case .string(let text) = $0 { text } else { nil } }
        } else {
            targets = []
        }
        return EscalationRule(
            id: r.0, name: r.1, afterSeconds: Int(r.2), repeatSeconds: r.3.map(Int.init), targets: targets, priority: r.5,
            app: r.6, group: r.7, createdDateTime: ISOTime.date(millis: r.8))
    }

    // MARK: - Escalation's work

    static let trackColumns = "notification_id, rule_id, user_id, since, due_at, sent"
    typealias TrackRow = (String, String, String, Int64, Int64?, Int32)
    static let deliveryColumns = "id, user_id, notification_id, rule_id, rule_name, target, event, payload, attempts, first_at, next_at, last_error"
    typealias DeliveryRow = (String, String, String, String, String, String, String, String, Int32, Int64, Int64, String?)

    public func escalationUserIds() async throws -> [String] {
        try await run { connection in
            try await connection.query("SELECT DISTINCT user_id FROM escalation_rules", logger: self.logger).collect(String.self)
        }
    }

    public func planEscalations(
        userIds: [String], limit: Int, now: Date,
        _ plan: @escaping @Sendable (EscalationPlanInput) -> EscalationPlan
    ) async throws -> (deliveries: Int, more: [String]) {
        try await transaction { connection in
            var made = 0, more: [String] = []
            // In one order on every instance: two planning at once wait for each other, never deadlock.
            for userId in userIds.sorted() {
                let outcome = try await self.planEscalations(connection, userId: userId, limit: limit, now: now, plan)
                made += outcome.deliveries
                if outcome.more { more.append(userId) }
            }
            return (made, more)
        }
    }

    /// One user's plan, inside a transaction.
    func planEscalations(
        _ connection: PostgresConnection, userId: String, limit: Int, now: Date,
        _ plan: @escaping @Sendable (EscalationPlanInput) -> EscalationPlan
    ) async throws -> (deliveries: Int, more: Bool) {
        let nowMillis = ISOTime.millis(now)
        // The cursor's row, locked: instances planning for one user take turns.
        guard
            let cursor = try await connection.query("SELECT seq FROM escalation_cursors WHERE user_id = \(userId) FOR UPDATE", logger: self.logger)
                .collect(Int64.self).first
        else {
            try await connection.exec(
                """
                INSERT INTO escalation_cursors (user_id, seq)
                SELECT id, coalesce((SELECT max(seq) FROM notifications WHERE user_id = \(userId)), 0) FROM users WHERE id = \(userId)
                AND EXISTS (SELECT 1 FROM escalation_rules WHERE user_id = \(userId))
                ON CONFLICT (user_id) DO NOTHING
                """, logger: self.logger)
            return (0, false)
        }
        let rows = try await self.fetchStored(
            connection,
            """
            SELECT \(unescaped: Self.columns) FROM notifications WHERE user_id = \(userId) AND seq > \(cursor) ORDER BY seq LIMIT \(limit + 1)
            """)
        guard !rows.isEmpty else { return (0, false) }
        let page = Array(rows.prefix(limit))
        let ids = page.map(\.notification.id)
        let rules = try await connection.query(
            "SELECT \(unescaped: Self.escalationColumns) FROM escalation_rules WHERE user_id = \(userId) ORDER BY created, id", logger: self.logger
        ).collect(EscalationRow.self).map(Self.escalationRule)
        var tracks: [EscalationTrack] = [], sent: [EscalationSent] = [], pending: [PendingDelivery] = []
        if !rules.isEmpty {
            // The tracks first, locked: a sweep firing one of them ends before its deliveries are read.
            tracks = try await connection.query(
                "SELECT \(unescaped: Self.trackColumns) FROM escalation_tracks WHERE notification_id = ANY(\(ids)) FOR UPDATE", logger: self.logger
            ).collect(TrackRow.self).map(Self.track)
            sent = try await connection.query(
                "SELECT notification_id, user_id, target, rule_id, rule_name, last_event FROM escalation_sent WHERE notification_id = ANY(\(ids))",
                logger: self.logger
            ).collect((String, String, String, String, String, String).self).map {
                EscalationSent(
                    notificationId: $0.0, userId: $0.1, target: $0.2, ruleId: $0.3, ruleName: $0.4,
                    lastEvent: EscalationEvent(rawValue: $0.5) ?? .escalated)
            }
            pending = try await connection.query(
                """
                SELECT id, notification_id, rule_id, rule_name, target, event, lease_until FROM escalation_deliveries
                WHERE notification_id = ANY(\(ids)) ORDER BY id
                """, logger: self.logger
            ).collect((String, String, String, String, String, String, Int64).self).map {
                PendingDelivery(
                    id: $0.0, notificationId: $0.1, ruleId: $0.2, ruleName: $0.3, target: $0.4,
                    event: EscalationEvent(rawValue: $0.5) ?? .escalated, inFlight: $0.6 > nowMillis)
            }
        }
        let decided = plan(
            EscalationPlanInput(
                userId: userId, changed: page.map(\.notification), rules: rules, tracks: tracks, sent: sent,
                pending: pending, now: now))
        try await self.apply(decided, connection)
        try await connection.exec("UPDATE escalation_cursors SET seq = \(page.last!.seq) WHERE user_id = \(userId)", logger: self.logger)
        return (decided.deliveries.count, rows.count > limit)
    }

    public func fireDueEscalations(now: Date, limit: Int, _ fire: @escaping @Sendable (EscalationDue) -> EscalationFiring) async throws -> Int {
        let nowMillis = ISOTime.millis(now)
        return try await transaction { connection in
            // SKIP LOCKED: instances sweeping at once each fire different tracks.
            let due = try await connection.query(
                """
                SELECT \(unescaped: Self.trackColumns) FROM escalation_tracks WHERE due_at IS NOT NULL AND due_at <= \(nowMillis)
                ORDER BY due_at LIMIT \(limit) FOR UPDATE SKIP LOCKED
                """, logger: self.logger
            ).collect(TrackRow.self).map(Self.track)
            var preferences: [String: [PreferenceEntry]] = [:]
            var plan = EscalationPlan()
            for track in due {
                if preferences[track.userId] == nil { preferences[track.userId] = try await self.preferences(connection, userId: track.userId) }
                let notification = try await self.fetchStored(
                    connection,
                    "SELECT \(unescaped: Self.columns) FROM notifications WHERE id = \(track.notificationId) AND user_id = \(track.userId)"
                ).first?.notification
                let rule = try await connection.query(
                    "SELECT \(unescaped: Self.escalationColumns) FROM escalation_rules WHERE id = \(track.ruleId)", logger: self.logger
                ).collect(EscalationRow.self).first.map(Self.escalationRule)
                let firing = fire(EscalationDue(track: track, notification: notification, rule: rule, preferences: preferences[track.userId] ?? []))
                plan.deliveries += firing.deliveries
                if let after = firing.track { plan.saveTracks.append(after) } else { plan.dropTracks.append((track.notificationId, track.ruleId)) }
            }
            try await self.apply(plan, connection)
            return plan.deliveries.count
        }
    }

    public func claimEscalationDeliveries(now: Date, lease: Date, limit: Int) async throws -> [EscalationDelivery] {
        let at = ISOTime.millis(now)
        return try await run { connection in
            try await connection.query(
                """
                UPDATE escalation_deliveries SET lease_until = \(ISOTime.millis(lease))
                WHERE id IN (SELECT o.id FROM escalation_deliveries o WHERE o.next_at <= \(at) AND o.lease_until <= \(at)
                             AND NOT EXISTS (SELECT 1 FROM escalation_deliveries e WHERE e.notification_id = o.notification_id AND e.target = o.target AND e.id < o.id)
                             ORDER BY o.next_at LIMIT \(limit) FOR UPDATE SKIP LOCKED)
                RETURNING \(unescaped: Self.deliveryColumns)
                """, logger: self.logger
            ).collect(DeliveryRow.self).compactMap(Self.delivery).sorted { $0.nextAt < $1.nextAt }
        }
    }

    public func finishEscalationDeliveries(_ finished: [FinishedDelivery], now: Date) async throws {
        guard !finished.isEmpty else { return }
        let logged = finished.filter { $0.log != nil }
        guard !logged.isEmpty else {
            try await transaction { connection in
                for item in finished { try await self.finishRows(item.delivery, result: item.result, now: now, connection) }
            }
            return
        }
        // Logged on their notifications, which move in their users' feeds: positions are reserved.
        try await feedWrite(users: Array(Set(logged.map(\.delivery.userId))).sorted(), positions: logged.count) { connection, context in
            for item in finished {
                let delivery = item.delivery
                if let log = item.log,
                    var row = try await self.fetchStored(
                        connection,
                        "SELECT \(unescaped: Self.columns) FROM notifications WHERE id = \(delivery.notificationId) AND user_id = \(delivery.userId)"
                    ).first, row.notification.status == .active
                {
                    try await connection.exec(
                        """
                        INSERT INTO escalation_log (notification_id, user_id, at, target, rule_name, outcome, error, recipient)
                        VALUES (\(delivery.notificationId), \(delivery.userId), \(ISOTime.millis(log.at)), \(log.target), \(log.rule), \(log.outcome),
                                \(log.error), \(log.user))
                        """, logger: self.logger)
                    let before = row.seq
                    row.seq = context.nextSeq(for: delivery.userId)
                    try await self.save([row], connection)
                    // Escalation has nothing to plan in it: its cursor follows, when it had seen the rest,
                    // this notification's change before the move included (a read that came while
                    // the page was on its way, not planned yet, is planned: its retraction goes).
                    try await connection.exec(
                        """
                        UPDATE escalation_cursors SET seq = \(row.seq) WHERE user_id = \(delivery.userId) AND seq >= \(before)
                        AND seq >= coalesce((SELECT max(seq) FROM notifications WHERE user_id = \(delivery.userId) AND seq < \(row.seq)), 0)
                        """, logger: self.logger)
                }
                try await self.finishRows(delivery, result: item.result, now: now, connection)
            }
        }
    }

    public func escalationLog(userId: String, notificationIds: [String]) async throws -> [String: [EscalationRecord]] {
        guard !notificationIds.isEmpty else { return [:] }
        return try await run { connection in
            var log: [String: [EscalationRecord]] = [:]
            for row in try await connection.query(
                """
                SELECT notification_id, at, target, rule_name, outcome, error, recipient FROM escalation_log
                WHERE user_id = \(userId) AND notification_id = ANY(\(notificationIds)) ORDER BY at
                """, logger: self.logger
            ).collect((String, Int64, String, String, String, String?, String?).self) {
                log[row.0, default: []].append(
                    EscalationRecord(target: row.2, rule: row.3, at: ISOTime.date(millis: row.1), outcome: row.4, error: row.5, user: row.6))
            }
            return log
        }
    }

    /// What a finished delivery changes beside the log.
    func finishRows(_ delivery: EscalationDelivery, result: DeliveryResult, now: Date, _ connection: PostgresConnection) async throws {
        let at = ISOTime.millis(now)
        switch result {
        case .delivered:
            try await connection.exec("DELETE FROM escalation_deliveries WHERE id = \(delivery.id)", logger: self.logger)
            switch delivery.event {
            case .escalated:
                try await connection.exec(
                    """
                    INSERT INTO escalation_sent (notification_id, target, user_id, rule_id, rule_name, last_event)
                    VALUES (\(delivery.notificationId), \(delivery.target), \(delivery.userId), \(delivery.ruleId), \(delivery.ruleName), 'escalated')
                    ON CONFLICT (notification_id, target) DO UPDATE SET last_event = 'escalated', rule_id = excluded.rule_id, rule_name = excluded.rule_name
                    """, logger: self.logger)
            case .deleted:
                try await connection.exec(
                    "DELETE FROM escalation_sent WHERE notification_id = \(delivery.notificationId) AND target = \(delivery.target)",
                    logger: self.logger)
            case .handled, .test:
                break
            }
            try await self.recordStatus(connection, ruleId: delivery.ruleId, userId: delivery.userId, target: delivery.target, error: nil, at: at)
        case .retry(let next, let error):
            try await connection.exec(
                """
                UPDATE escalation_deliveries SET attempts = attempts + 1, next_at = \(ISOTime.millis(next)), lease_until = 0, last_error = \(error)
                WHERE id = \(delivery.id)
                """, logger: self.logger)
            try await self.recordStatus(connection, ruleId: delivery.ruleId, userId: delivery.userId, target: delivery.target, error: error, at: at)
        case .failed(let error):
            try await connection.exec("DELETE FROM escalation_deliveries WHERE id = \(delivery.id)", logger: self.logger)
            try await self.recordStatus(connection, ruleId: delivery.ruleId, userId: delivery.userId, target: delivery.target, error: error, at: at)
        }
    }

    public func recordEscalationTest(ruleId: String, target: String, error: String?, now: Date) async throws {
        try await run { connection in
            guard
                let userId = try await connection.query("SELECT user_id FROM escalation_rules WHERE id = \(ruleId)", logger: self.logger)
                    .collect(String.self).first
            else { return }
            try await self.recordStatus(connection, ruleId: ruleId, userId: userId, target: target, error: error, at: ISOTime.millis(now))
        }
    }

    public func escalationStatus(userId: String) async throws -> [String: [EscalationTargetState]] {
        try await run { connection in
            var status: [String: [String: EscalationTargetState]] = [:]
            for row in try await connection.query(
                "SELECT rule_id, target, last_delivery, last_error, last_error_at FROM escalation_status WHERE user_id = \(userId)",
                logger: self.logger
            ).collect((String, String, Int64?, String?, Int64?).self) {
                status[row.0, default: [:]][row.1] = EscalationTargetState(
                    target: row.1, lastDelivery: row.2.map(ISOTime.date(millis:)), lastError: row.3, lastErrorAt: row.4.map(ISOTime.date(millis:)))
            }
            for row in try await connection.query(
                "SELECT rule_id, target, count(*) FROM escalation_deliveries WHERE user_id = \(userId) GROUP BY rule_id, target", logger: self.logger
            ).collect((String, String, Int64).self) {
                status[row.0, default: [:]][row.1, default: EscalationTargetState(target: row.1)].pending = Int(row.2)
            }
            return status.mapValues { Array($0.values).sorted { $0.target < $1.target } }
        }
    }

    public func escalationBacklog() async throws -> (pending: Int, failing: Int) {
        try await run { connection in
            let row = try await connection.query(
                "SELECT count(*), count(*) FILTER (WHERE attempts > 0) FROM escalation_deliveries", logger: self.logger
            ).collect((Int64, Int64).self).first
            return (Int(row?.0 ?? 0), Int(row?.1 ?? 0))
        }
    }

    /// Writes what the planner decided.
    func apply(_ plan: EscalationPlan, _ connection: PostgresConnection) async throws {
        for (notificationId, ruleId) in plan.dropTracks {
            try await connection.exec(
                "DELETE FROM escalation_tracks WHERE notification_id = \(notificationId) AND rule_id = \(ruleId)", logger: logger)
        }
        for t in plan.saveTracks {
            try await connection.exec(
                """
                INSERT INTO escalation_tracks (notification_id, rule_id, user_id, since, due_at, sent)
                VALUES (\(t.notificationId), \(t.ruleId), \(t.userId), \(ISOTime.millis(t.since)), \(t.dueAt.map(ISOTime.millis)), \(Int32(t.sent)))
                ON CONFLICT (notification_id, rule_id) DO UPDATE SET since = excluded.since, due_at = excluded.due_at, sent = excluded.sent
                """, logger: logger)
        }
        if !plan.cancel.isEmpty {
            try await connection.exec("DELETE FROM escalation_deliveries WHERE id = ANY(\(plan.cancel))", logger: logger)
        }
        for d in plan.deliveries {
            try await connection.exec(
                """
                INSERT INTO escalation_deliveries (id, user_id, notification_id, rule_id, rule_name, target, event, payload, attempts, first_at, next_at)
                VALUES (\(d.id), \(d.userId), \(d.notificationId), \(d.ruleId), \(d.ruleName), \(d.target), \(d.event.rawValue), \(d.payloadJSON),
                        \(Int32(d.attempts)), \(ISOTime.millis(d.firstAt)), \(ISOTime.millis(d.nextAt)))
                """, logger: logger)
        }
        for s in plan.saveSent {
            try await connection.exec(
                """
                UPDATE escalation_sent SET last_event = \(s.lastEvent.rawValue) WHERE notification_id = \(s.notificationId) AND target = \(s.target)
                """, logger: logger)
        }
    }

    /// A target's last delivery (`error` nil) or last error, kept while its rule is.
    func recordStatus(_ connection: PostgresConnection, ruleId: String, userId: String, target: String, error: String?, at: Int64) async throws {
        let delivered: Int64? = error == nil ? at : nil, failed: Int64? = error == nil ? nil : at
        try await connection.exec(
            """
            INSERT INTO escalation_status (rule_id, target, user_id, last_delivery, last_error, last_error_at)
            SELECT \(ruleId), \(target), \(userId), \(delivered), \(error), \(failed) WHERE EXISTS (SELECT 1 FROM escalation_rules WHERE id = \(ruleId))
            ON CONFLICT (rule_id, target) DO UPDATE SET
                last_delivery = coalesce(excluded.last_delivery, escalation_status.last_delivery),
                last_error = coalesce(excluded.last_error, escalation_status.last_error),
                last_error_at = coalesce(excluded.last_error_at, escalation_status.last_error_at)
            """, logger: logger)
    }

    static func track(_ r: TrackRow) -> EscalationTrack {
        EscalationTrack(
            notificationId: r.0, ruleId: r.1, userId: r.2, since: ISOTime.date(millis: r.3), dueAt: r.4.map(ISOTime.date(millis:)), sent: Int(r.5))
    }

    static func delivery(_ r: DeliveryRow) -> EscalationDelivery? {
        guard let payload = EscalationDelivery.payload(r.7), let event = EscalationEvent(rawValue: r.6) else { return nil }
        return EscalationDelivery(
            id: r.0, userId: r.1, notificationId: r.2, ruleId: r.3, ruleName: r.4, target: r.5, event: event,
            notification: payload.notification, handledBy: payload.handledBy, recipient: payload.recipient, attempts: Int(r.8),
            firstAt: ISOTime.date(millis: r.9), nextAt: ISOTime.date(millis: r.10), lastError: r.11)
    }
}
