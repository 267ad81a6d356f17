import Foundation
import GRDB
import NottyCore
import NottyRecords
import NottyService
import NottyStorageSupport

/// The user's escalation rules (PROTOCOL.md §11): a row each, its targets as a JSON array.
extension SQLiteStorage {
    public func escalationRules(userId: String) async throws -> [EscalationRule] {
        try await read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM escalation_rules WHERE user_id = ? ORDER BY created, id", arguments: [userId]).map(
                Self.escalationRule)
        }
    }

    public func insertEscalationRule(_ rule: EscalationRule, userId: String, limit: Int) async throws -> Bool {
        try await write { db, _ in
            let count = try Int.fetchOne(db, sql: "SELECT count(*) FROM escalation_rules WHERE user_id = ?", arguments: [userId]) ?? 0
            guard count < limit else { return false }
            try db.execute(
                sql: """
                    INSERT INTO escalation_rules (id, user_id, name, after_seconds, repeat_seconds, targets, priority, app, group_name, created)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (user_id, name) DO NOTHING
                    """,
                arguments: [
                    rule.id, userId, rule.name, rule.afterSeconds, rule.repeatSeconds, JSONValue.array(rule.targets.map(JSONValue.string)).jsonText,
                    rule.priority, rule.app, rule.group, ISOTime.millis(rule.createdDateTime),
                ])
            guard db.changesCount == 1 else { return false }
            // A first rule watches what changes from now on: escalation's cursor starts at the newest.
            if count == 0 {
                try db.execute(
                    sql: """
                        INSERT INTO escalation_cursors (user_id, seq)
                        VALUES (?1, coalesce((SELECT max(seq) FROM notifications WHERE user_id = ?1), 0)) ON CONFLICT (user_id) DO UPDATE SET seq = excluded.seq
                        """, arguments: [userId])
            }
            return true
        }
    }

    public func deleteEscalationRule(id: String, userId: String) async throws -> Bool {
        try await write { db, _ in
            try db.execute(sql: "DELETE FROM escalation_rules WHERE id = ? AND user_id = ?", arguments: [id, userId])
            guard db.changesCount == 1 else { return false }
            // Its escalations not yet begun go with it; retractions of what it sent still go out.
            try db.execute(
                sql: "DELETE FROM escalation_deliveries WHERE rule_id = ? AND event = 'escalated' AND lease_until <= ?",
                arguments: [id, ISOTime.millis(Date())])
            return true
        }
    }

    static func escalationRule(_ row: Row) -> EscalationRule {
        let targets: [String]
        if case .array(let items)? = JSONParser.parse(Data((row["targets"] as String).utf8)) {
            targets = items.compactMap { if case .string(let text) = $0 { text } else { nil } }
        } else {
            targets = []
        }
        return EscalationRule(
            id: row["id"], name: row["name"], afterSeconds: row["after_seconds"], repeatSeconds: row["repeat_seconds"],
            targets: targets, priority: row["priority"], app: row["app"], group: row["group_name"],
            createdDateTime: ISOTime.date(millis: row["created"]))
    }

    // MARK: - Escalation's work

    public func escalationUserIds() async throws -> [String] {
        try await read { db in try String.fetchAll(db, sql: "SELECT DISTINCT user_id FROM escalation_rules") }
    }

    public func planEscalations(
        userIds: [String], limit: Int, now: Date,
        _ plan: @escaping @Sendable (EscalationPlanInput) -> EscalationPlan
    ) async throws -> (deliveries: Int, more: [String]) {
        try await write { db, _ in
            var made = 0, more: [String] = []
            for userId in userIds {
                let outcome = try Self.planEscalations(db, userId: userId, limit: limit, now: now, plan)
                made += outcome.deliveries
                if outcome.more { more.append(userId) }
            }
            return (made, more)
        }
    }

    /// One user's plan, inside a write.
    static func planEscalations(
        _ db: Database, userId: String, limit: Int, now: Date,
        _ plan: (EscalationPlanInput) -> EscalationPlan
    ) throws -> (deliveries: Int, more: Bool) {
        guard let cursor = try Int64.fetchOne(db.cachedStatement(sql: "SELECT seq FROM escalation_cursors WHERE user_id = ?"), arguments: [userId])
        else {
            // Rules made before there was a cursor watch from now on; no rules, nothing to watch.
            try db.execute(
                sql: """
                    INSERT INTO escalation_cursors (user_id, seq) SELECT id, coalesce((SELECT max(seq) FROM notifications WHERE user_id = ?1), 0)
                    FROM users WHERE id = ?1 AND EXISTS (SELECT 1 FROM escalation_rules WHERE user_id = ?1)
                    """, arguments: [userId])
            return (0, false)
        }
        let rows = try Row.fetchAll(
            db.cachedStatement(sql: "SELECT \(NotificationColumns.list) FROM notifications WHERE user_id = ? AND seq > ? ORDER BY seq LIMIT ?"),
            arguments: [userId, cursor, limit + 1]
        ).map { try Self.stored($0) }
        guard !rows.isEmpty else { return (0, false) }
        let page = rows.prefix(limit)
        let rules = try Row.fetchAll(
            db.cachedStatement(sql: "SELECT * FROM escalation_rules WHERE user_id = ? ORDER BY created, id"), arguments: [userId]
        )
        .map(Self.escalationRule)
        var tracks: [EscalationTrack] = [], sent: [EscalationSent] = [], pending: [PendingDelivery] = []
        if !rules.isEmpty {
            for row in page {
                let id = row.notification.id
                tracks += try Row.fetchAll(db.cachedStatement(sql: "SELECT * FROM escalation_tracks WHERE notification_id = ?"), arguments: [id])
                    .map(Self.track)
                sent += try Row.fetchAll(db.cachedStatement(sql: "SELECT * FROM escalation_sent WHERE notification_id = ?"), arguments: [id])
                    .map(Self.sent)
                pending += try Row.fetchAll(
                    db.cachedStatement(
                        sql: """
                            SELECT id, notification_id, rule_id, rule_name, target, event, lease_until FROM escalation_deliveries
                            WHERE notification_id = ? ORDER BY id
                            """), arguments: [id]
                ).map { row in
                    PendingDelivery(
                        id: row["id"], notificationId: row["notification_id"], ruleId: row["rule_id"], ruleName: row["rule_name"],
                        target: row["target"], event: EscalationEvent(rawValue: row["event"]) ?? .escalated,
                        inFlight: (row["lease_until"] as Int64) > ISOTime.millis(now))
                }
            }
        }
        let decided = plan(
            EscalationPlanInput(
                userId: userId, changed: page.map(\.notification), rules: rules, tracks: tracks, sent: sent,
                pending: pending, now: now))
        try Self.apply(decided, db)
        try db.cachedStatement(sql: "UPDATE escalation_cursors SET seq = ? WHERE user_id = ?").execute(arguments: [page.last!.seq, userId])
        return (decided.deliveries.count, rows.count > limit)
    }

    public func fireDueEscalations(now: Date, limit: Int, _ fire: @escaping @Sendable (EscalationDue) -> EscalationFiring) async throws -> Int {
        try await write { db, _ in
            let due = try Row.fetchAll(
                db, sql: "SELECT * FROM escalation_tracks WHERE due_at IS NOT NULL AND due_at <= ? ORDER BY due_at LIMIT ?",
                arguments: [ISOTime.millis(now), limit]
            ).map(Self.track)
            var preferences: [String: [PreferenceEntry]] = [:]
            var rules: [String: EscalationRule?] = [:]
            var made = 0
            for track in due {
                if preferences[track.userId] == nil { preferences[track.userId] = try Self.preferences(db, userId: track.userId) }
                let notification = try Self.fetchStored(db, sql: Self.byIdSQL, [track.notificationId, track.userId])?.notification
                if rules[track.ruleId] == nil {
                    rules[track.ruleId] = .some(
                        try Row.fetchOne(db, sql: "SELECT * FROM escalation_rules WHERE id = ?", arguments: [track.ruleId]).map(Self.escalationRule))
                }
                let rule = rules[track.ruleId] ?? nil
                let firing = fire(EscalationDue(track: track, notification: notification, rule: rule, preferences: preferences[track.userId] ?? []))
                var plan = EscalationPlan()
                plan.deliveries = firing.deliveries
                if let after = firing.track { plan.saveTracks = [after] } else { plan.dropTracks = [(track.notificationId, track.ruleId)] }
                try Self.apply(plan, db)
                made += firing.deliveries.count
            }
            return made
        }
    }

    public func claimEscalationDeliveries(now: Date, lease: Date, limit: Int) async throws -> [EscalationDelivery] {
        let at = ISOTime.millis(now)
        return try await write { db, _ in
            try Row.fetchAll(
                db,
                sql: """
                    UPDATE escalation_deliveries SET lease_until = ?
                    WHERE id IN (SELECT o.id FROM escalation_deliveries o WHERE o.next_at <= ? AND o.lease_until <= ?
                                 AND NOT EXISTS (SELECT 1 FROM escalation_deliveries e WHERE e.notification_id = o.notification_id AND e.target = o.target AND e.id < o.id)
                                 ORDER BY o.next_at LIMIT ?)
                    RETURNING *
                    """, arguments: [ISOTime.millis(lease), at, at, limit]
            ).compactMap(Self.delivery).sorted { $0.nextAt < $1.nextAt }
        }
    }

    public func finishEscalationDeliveries(_ finished: [FinishedDelivery], now: Date) async throws {
        guard !finished.isEmpty else { return }
        let at = ISOTime.millis(now)
        try await write { db, context in
            for item in finished {
                let delivery = item.delivery
                if let log = item.log, let row = try Self.fetchStored(db, sql: Self.byIdSQL, [delivery.notificationId, delivery.userId]),
                    row.notification.status == .active
                {
                    try db.cachedStatement(
                        sql:
                            """
                            INSERT INTO escalation_log (notification_id, user_id, at, target, rule_name, outcome, error, recipient)
                            VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                            """
                    )
                    .execute(arguments: [
                        delivery.notificationId, delivery.userId, ISOTime.millis(log.at), log.target, log.rule, log.outcome, log.error, log.user,
                    ])
                    // It moves in the feed (every device shows it); only its position changes.
                    let seq = context.nextSeq(for: delivery.userId)
                    try db.cachedStatement(sql: "UPDATE notifications SET seq = ?3 WHERE \(Self.idMatches) AND user_id = ?2")
                        .execute(arguments: [delivery.notificationId, delivery.userId, seq])
                    // Escalation has nothing to plan in it: its cursor follows, when it had seen the rest,
                    // this notification's change before the move included (a read that came while
                    // the page was on its way, not planned yet, is planned: its retraction goes).
                    try db.cachedStatement(
                        sql: """
                            UPDATE escalation_cursors SET seq = ?2 WHERE user_id = ?1 AND seq >= ?3
                            AND seq >= coalesce((SELECT max(seq) FROM notifications WHERE user_id = ?1 AND seq < ?2), 0)
                            """
                    ).execute(arguments: [delivery.userId, seq, row.seq])
                }
                try Self.finish(delivery, result: item.result, at: at, db)
            }
        }
    }

    /// What a finished delivery changes beside the log.
    static func finish(_ delivery: EscalationDelivery, result: DeliveryResult, at: Int64, _ db: Database) throws {
        switch result {
        case .delivered:
            try db.cachedStatement(sql: "DELETE FROM escalation_deliveries WHERE id = ?").execute(arguments: [delivery.id])
            switch delivery.event {
            case .escalated:
                try db.cachedStatement(
                    sql: """
                        INSERT INTO escalation_sent (notification_id, target, user_id, rule_id, rule_name, last_event) VALUES (?, ?, ?, ?, ?, 'escalated')
                        ON CONFLICT (notification_id, target) DO UPDATE SET last_event = 'escalated', rule_id = excluded.rule_id, rule_name = excluded.rule_name
                        """
                ).execute(arguments: [delivery.notificationId, delivery.target, delivery.userId, delivery.ruleId, delivery.ruleName])
            case .deleted:
                try db.cachedStatement(sql: "DELETE FROM escalation_sent WHERE notification_id = ? AND target = ?")
                    .execute(arguments: [delivery.notificationId, delivery.target])
            case .handled, .test:
                break
            }
            try recordStatus(db, ruleId: delivery.ruleId, userId: delivery.userId, target: delivery.target, error: nil, at: at)
        case .retry(let next, let error):
            try db.cachedStatement(
                sql: "UPDATE escalation_deliveries SET attempts = attempts + 1, next_at = ?, lease_until = 0, last_error = ? WHERE id = ?"
            )
            .execute(arguments: [ISOTime.millis(next), error, delivery.id])
            try recordStatus(db, ruleId: delivery.ruleId, userId: delivery.userId, target: delivery.target, error: error, at: at)
        case .failed(let error):
            try db.cachedStatement(sql: "DELETE FROM escalation_deliveries WHERE id = ?").execute(arguments: [delivery.id])
            try recordStatus(db, ruleId: delivery.ruleId, userId: delivery.userId, target: delivery.target, error: error, at: at)
        }
    }

    public func recordEscalationTest(ruleId: String, target: String, error: String?, now: Date) async throws {
        try await write { db, _ in
            guard let userId = try String.fetchOne(db, sql: "SELECT user_id FROM escalation_rules WHERE id = ?", arguments: [ruleId]) else { return }
            try Self.recordStatus(db, ruleId: ruleId, userId: userId, target: target, error: error, at: ISOTime.millis(now))
        }
    }

    public func escalationStatus(userId: String) async throws -> [String: [EscalationTargetState]] {
        try await read { db in
            var status: [String: [String: EscalationTargetState]] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT * FROM escalation_status WHERE user_id = ?", arguments: [userId]) {
                let target: String = row["target"]
                status[row["rule_id"], default: [:]][target] = EscalationTargetState(
                    target: target, lastDelivery: (row["last_delivery"] as Int64?).map(ISOTime.date(millis:)), lastError: row["last_error"],
                    lastErrorAt: (row["last_error_at"] as Int64?).map(ISOTime.date(millis:)))
            }
            for row in try Row.fetchAll(
                db, sql: "SELECT rule_id, target, count(*) AS n FROM escalation_deliveries WHERE user_id = ? GROUP BY rule_id, target",
                arguments: [userId])
            {
                let target: String = row["target"]
                status[row["rule_id"], default: [:]][target, default: EscalationTargetState(target: target)].pending = row["n"]
            }
            return status.mapValues { Array($0.values).sorted { $0.target < $1.target } }
        }
    }

    public func escalationLog(userId: String, notificationIds: [String]) async throws -> [String: [EscalationRecord]] {
        guard !notificationIds.isEmpty else { return [:] }
        return try await read { db in
            guard try Bool.fetchOne(db.cachedStatement(sql: "SELECT 1 FROM escalation_log WHERE user_id = ? LIMIT 1"), arguments: [userId]) == true
            else {
                return [:]
            }
            var log: [String: [EscalationRecord]] = [:]
            let statement = try db.cachedStatement(
                sql:
                    "SELECT at, target, rule_name, outcome, error, recipient FROM escalation_log WHERE notification_id = ? AND user_id = ? ORDER BY at"
            )
            for id in notificationIds {
                for row in try Row.fetchAll(statement, arguments: [id, userId]) {
                    log[id, default: []].append(
                        EscalationRecord(
                            target: row["target"], rule: row["rule_name"], at: ISOTime.date(millis: row["at"]),
                            outcome: row["outcome"], error: row["error"], user: row["recipient"]))
                }
            }
            return log
        }
    }

    public func escalationBacklog() async throws -> (pending: Int, failing: Int) {
        try await read { db in
            let row = try Row.fetchOne(db, sql: "SELECT count(*) AS n, coalesce(sum(attempts > 0), 0) AS failing FROM escalation_deliveries")
            return (row?["n"] ?? 0, row?["failing"] ?? 0)
        }
    }

    /// Writes what the planner decided.
    static func apply(_ plan: EscalationPlan, _ db: Database) throws {
        for (notificationId, ruleId) in plan.dropTracks {
            try db.cachedStatement(sql: "DELETE FROM escalation_tracks WHERE notification_id = ? AND rule_id = ?").execute(arguments: [
                notificationId, ruleId,
            ])
        }
        for t in plan.saveTracks {
            try db.cachedStatement(
                sql: """
                    INSERT INTO escalation_tracks (notification_id, rule_id, user_id, since, due_at, sent) VALUES (?, ?, ?, ?, ?, ?)
                    ON CONFLICT (notification_id, rule_id) DO UPDATE SET since = excluded.since, due_at = excluded.due_at, sent = excluded.sent
                    """
            ).execute(arguments: [t.notificationId, t.ruleId, t.userId, ISOTime.millis(t.since), t.dueAt.map(ISOTime.millis), t.sent])
        }
        for id in plan.cancel {
            try db.cachedStatement(sql: "DELETE FROM escalation_deliveries WHERE id = ?").execute(arguments: [id])
        }
        for d in plan.deliveries {
            try db.cachedStatement(
                sql: """
                    INSERT INTO escalation_deliveries (id, user_id, notification_id, rule_id, rule_name, target, event, payload, attempts, first_at, next_at)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """
            ).execute(arguments: [
                d.id, d.userId, d.notificationId, d.ruleId, d.ruleName, d.target, d.event.rawValue, d.payloadJSON, d.attempts,
                ISOTime.millis(d.firstAt), ISOTime.millis(d.nextAt),
            ])
        }
        for s in plan.saveSent {
            try db.cachedStatement(sql: "UPDATE escalation_sent SET last_event = ? WHERE notification_id = ? AND target = ?")
                .execute(arguments: [s.lastEvent.rawValue, s.notificationId, s.target])
        }
    }

    /// A target's last delivery (`error` nil) or last error, kept while its rule is.
    static func recordStatus(_ db: Database, ruleId: String, userId: String, target: String, error: String?, at: Int64) throws {
        try db.cachedStatement(
            sql: """
                INSERT INTO escalation_status (rule_id, target, user_id, last_delivery, last_error, last_error_at)
                SELECT ?1, ?2, ?3, ?4, ?5, ?6 WHERE EXISTS (SELECT 1 FROM escalation_rules WHERE id = ?1)
                ON CONFLICT (rule_id, target) DO UPDATE SET
                    last_delivery = coalesce(excluded.last_delivery, last_delivery),
                    last_error = coalesce(excluded.last_error, last_error), last_error_at = coalesce(excluded.last_error_at, last_error_at)
                """
        ).execute(arguments: [ruleId, target, userId, error == nil ? at : nil, error, error == nil ? nil : at])
    }

    static func track(_ row: Row) -> EscalationTrack {
        EscalationTrack(
            notificationId: row["notification_id"], ruleId: row["rule_id"], userId: row["user_id"], since: ISOTime.date(millis: row["since"]),
            dueAt: (row["due_at"] as Int64?).map(ISOTime.date(millis:)), sent: row["sent"])
    }

    static func sent(_ row: Row) -> EscalationSent {
        EscalationSent(
            notificationId: row["notification_id"], userId: row["user_id"], target: row["target"], ruleId: row["rule_id"],
            ruleName: row["rule_name"], lastEvent: EscalationEvent(rawValue: row["last_event"]) ?? .escalated)
    }

    static func delivery(_ row: Row) -> EscalationDelivery? {
        guard let payload = EscalationDelivery.payload(row["payload"]), let event = EscalationEvent(rawValue: row["event"]) else { return nil }
        return EscalationDelivery(
            id: row["id"], userId: row["user_id"], notificationId: row["notification_id"], ruleId: row["rule_id"], ruleName: row["rule_name"],
            target: row["target"], event: event, notification: payload.notification, handledBy: payload.handledBy, recipient: payload.recipient,
            attempts: row["attempts"],
            firstAt: ISOTime.date(millis: row["first_at"]), nextAt: ISOTime.date(millis: row["next_at"]), lastError: row["last_error"])
    }
}
