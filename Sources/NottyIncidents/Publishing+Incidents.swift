import Foundation
import NottyCore
import NottyRecords
import NottyService
import NottyWebhooks

// MARK: - Incident doors (PROTOCOL.md §16)

extension Publishing {
    /// What an incident door answers when the event was taken.
    public enum IncidentOutcome: Sendable, Equatable {
        /// An alert event: its dedup key.
        case alert(dedupKey: String)
        case change
    }

    /// `POST /v2/enqueue` and `POST /v2/change/enqueue` (PagerDuty's Events API v2): the routing
    /// key is a hook's token. A trigger publishes, or updates in place the alert with the same
    /// dedup key (one is made when none is given); acknowledge is Read and resolve Dismissed on
    /// every device, as its user's own change would be (handled: escalation and pages stop),
    /// with the sending tool named as who handled it. Acknowledging or resolving an alert that
    /// is not there (any more) is taken and does nothing, as PagerDuty does.
    public func pagerDuty(_ event: PagerDutyEvent) async throws -> IncidentOutcome {
        let hook = try await incidentHook(token: event.routingKey, door: "PagerDuty's Events API")
        guard var notification = event.notification else {
            guard let dedupKey = event.dedupKey else { throw ServiceError.badRequest("'dedup_key' is missing or blank") }
            try await handle(alert: dedupKey, of: hook, resolved: event.action == .resolve, by: event.client ?? "PagerDuty Events API")
            return .alert(dedupKey: dedupKey)
        }
        let dedupKey = event.dedupKey ?? Self.newDedupKey()
        notification.appNotificationId = event.isChange ? "change-" + dedupKey : dedupKey
        _ = try await publish([notification], as: hook)
        return event.isChange ? .change : .alert(dedupKey: dedupKey)
    }

    /// A new dedup key: 32 hexadecimal digits, as PagerDuty makes them.
    static func newDedupKey() -> String {
        (0..<16).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
    }

    /// The hook an incident door's key names. These doors carry one key and nothing else, so a
    /// hook with a secret is not reachable through them (as with Gotify's).
    func incidentHook(token: String, door: String) async throws -> Hook {
        try await hookWithoutSecret(
            token: token,
            unknown: .badRequest(
                "no notty webhook has this key: make one with notty subscribe --app HOST --webhook (its token is the key), or check for a typo"),
            secret: .badRequest("this webhook has a secret, which \(door) cannot send: make a webhook without --secret for it"))
    }

    /// Acknowledges (Read) or resolves (Dismissed) the hook's active alert `alertId` on every
    /// device, `by` named as who handled it; nothing when there is none.
    func handle(alert alertId: String, of hook: Hook, resolved: Bool, by: String) async throws {
        guard !hook.ownerDisabled else { throw ServiceError.badRequest("this webhook's account is disabled: it publishes, but changes nothing") }
        // Every event counts against the app's rate, as PagerDuty throttles them all.
        try takeRate(of: hook.app, now: clock.nowMillis())
        let userId = hook.subscription.userId
        guard
            let found = try await db({ try await storage.notification(userId: userId, hostName: hook.app.hostName, appNotificationId: alertId) }),
            found.status == .active
        else { return }
        var mutation = Mutation(id: found.id, change: resolved ? StateChange(userActionState: .dismissed) : StateChange(readState: .read))
        mutation.by = ChangedBy(user: String(by.prefix(64)), device: nil, at: clock.nowMillis())
        _ = try await inbox.mutate(userId: userId, [mutation])
    }
}

// MARK: - Opsgenie's Alert API (PROTOCOL.md §16.2)

extension Publishing {
    /// What an Opsgenie alert id names: the alert's id (and tinyId) or its alias.
    public enum OpsgenieIdentifier: Sendable, Equatable {
        case id(String)
        case alias(String)

        /// From the path and `identifierType` (`id`, the default, `tiny` or `alias`).
        public init(_ identifier: String, type: String?) throws {
            switch type?.lowercased() {
            case nil, "id", "tiny": self = .id(identifier)
            case "alias": self = .alias(identifier)
            default: throw ServiceError.badRequest("identifierType must be id, tiny or alias")
            }
        }
    }

    /// What a state request of Opsgenie's does.
    public enum OpsgenieAction: String, Sendable, CaseIterable {
        case acknowledge = "Acknowledge"
        case unacknowledge = "UnAcknowledge"
        case close = "Close"
        case snooze = "Snooze"
        case delete = "Delete"
    }

    /// The hook whose token is the Opsgenie key `key` (`Authorization: GenieKey KEY`): `401`,
    /// as Opsgenie answers, for none, a revoked one or one with a secret.
    /// A disabled user's key still publishes (`publishing`), but reads and changes nothing.
    func opsgenieHook(key: String?, publishing: Bool = false) async throws -> Hook {
        guard let key, !key.isEmpty else {
            throw ServiceError.unauthenticated("Could not authenticate: send Authorization: GenieKey TOKEN, a notty webhook's token")
        }
        let hook: Hook
        do {
            hook = try await incidentHook(token: key, door: "Opsgenie's API")
        } catch let error as ServiceError where error.kind == .badRequest {
            throw ServiceError.unauthenticated("Could not authenticate: \(error.message)")
        }
        guard publishing || !hook.ownerDisabled else { throw ServiceError.unauthenticated("Could not authenticate: this account is disabled") }
        return hook
    }

    /// `POST /v2/alerts`: publishes the alert (an open alias again updates it in place); answers
    /// the request's id.
    public func opsgenieCreate(key: String?, _ alert: Opsgenie.Alert) async throws -> String {
        var hook = try await opsgenieHook(key: key, publishing: true)
        if let team = alert.team { hook = try await responderHook(team: team, of: hook) }
        var notification = alert.notification
        let alias = alert.alias ?? Identifiers.timeOrdered()
        notification.appNotificationId = alias
        let record = alert.record, now = clock.nowMillis()
        // The same alert again, while it is open: counted, its notes kept (past the last 50 dropped).
        let merge: PublishInput.Merge = { active, request in
            guard NotificationView.current(of: active, now: now) != .dismissed else { return request }
            let before = Opsgenie.Record(of: active)
            var counted = record
            counted.count = before.count + 1
            counted.notes = Array((before.notes + record.notes).suffix(Opsgenie.Record.keptNotes))
            var request = request
            request.payload = NotificationPayload(
                rawContent: counted.rawContent, visualContent: VisualContent(title: request.payload.visualContent?.title ?? "", body: counted.body))
            return request
        }
        guard let published = try await publish([notification], as: hook, merge: alert.alias == nil ? nil : merge).first else {
            throw ServiceError.badRequest("nothing to publish")
        }
        return Opsgenie.RequestRecord(action: "Create", alertId: published.id, alias: alias, processedAt: ISOTime.millis(clock.nowMillis())).requestId
    }

    /// The hook's alert `identifier` names: one of its app's notifications in its feed, or in
    /// the feed of a team its user owns (published there through `responders`); `404` for
    /// anything else, another app's or user's too.
    func opsgenieAlert(_ identifier: OpsgenieIdentifier, of hook: Hook) async throws -> UserNotification {
        let userId = hook.subscription.userId
        let missing = ServiceError.notFound("Alert does not exist")
        let now = clock.nowMillis()
        let own = try await teamName(ofFeed: userId)
        // The teams the hook's user owns, read once and only when the hook's own feed is not enough.
        var owned: [Team]?
        func ownedOnce() async throws -> [Team] {
            if let owned { return owned }
            let read = try await ownedTeams(of: hook)
            owned = read
            return read
        }
        var found: UserNotification?
        switch identifier {
        case .id(let id):
            found = try await db { try await storage.notification(id: id, userId: userId) }
        case .alias(let alias):
            found = try await db { try await storage.notification(userId: userId, hostName: hook.app.hostName, appNotificationId: alias) }
            if !(found?.isLive(at: now) ?? false) {
                for team in try await ownedOnce() {
                    let there = try await db {
                        try await storage.notification(userId: team.id, hostName: hook.app.hostName, appNotificationId: alias)
                    }
                    if let there, there.isLive(at: now) {
                        found = there
                        break
                    }
                }
            }
        }
        guard let found, found.isLive(at: now), found.targetHostName.equalsIgnoringASCIICase(hook.app.hostName) else { throw missing }
        if found.team != own {
            // Not the hook's feed: a team's its user owns (not one they are a plain member of).
            guard own == nil, let team = found.team, try await ownedOnce().contains(where: { $0.name == team }) else { throw missing }
        }
        return found
    }

    /// The hook publishing into the feed `alert` is in (its own, or a team's its user owns).
    func feedHook(of alert: UserNotification, _ hook: Hook) async throws -> Hook {
        guard let team = alert.team, try await teamName(ofFeed: hook.subscription.userId) != team else { return hook }
        guard let owned = try await ownedTeams(of: hook).first(where: { $0.name == team }) else {
            throw ServiceError.notFound("Alert does not exist")
        }
        return hook.publishing(toFeed: owned.id)
    }

    /// The teams a user's hook may publish to: those its user owns (none for a team's hook,
    /// which publishes to its own team only).
    func ownedTeams(of hook: Hook) async throws -> [Team] {
        let userId = hook.subscription.userId
        guard try await teamName(ofFeed: userId) == nil, let account = try await db({ try await storage.user(id: userId) }) else { return [] }
        return try await teams.teams(userId: userId).value.filter { $0.role(of: account.userName) == .owner }
    }

    /// The hook an alert naming `team` among its `responders` publishes through: into that
    /// team's feed when the key may publish to it (a user's key whose user owns the team, or
    /// the team's own key); `422` else.
    func responderHook(team: String, of hook: Hook) async throws -> Hook {
        let refused = Opsgenie.Refusal(errors: [
            "responders":
                "No team named \(team.prefix(64)) that this key may publish to: a user's key publishes to the teams its user owns, a team's key to its own team."
        ])
        if let own = try await teamName(ofFeed: hook.subscription.userId) {
            guard own == team else { throw refused }
            return hook
        }
        guard let owned = try await ownedTeams(of: hook).first(where: { $0.name == team }) else { throw refused }
        return hook.publishing(toFeed: owned.id)
    }

    /// `GET /v2/alerts?query=&limit=&offset=&sort=&order=`: the hook's app's alerts in its
    /// feed, newest first (`order=asc`: oldest first). `query` takes `status:open|closed`,
    /// `acknowledged:true|false` and words the alerts match; another field is `422`.
    public func opsgenieList(key: String?, query: String?, limit: Int?, offset: Int?, sort: String?, order: String?) async throws
        -> [JSONValue]
    {
        let hook = try await opsgenieHook(key: key)
        let limit = limit ?? 20, offset = offset ?? 0
        guard (1...100).contains(limit), offset >= 0, offset <= 100_000 else {
            throw ServiceError.unprocessable("limit is 1 to 100 and offset 0 to 100,000")
        }
        guard sort == nil || sort == "createdAt" else { throw ServiceError.unprocessable("notty sorts alerts by createdAt only") }
        guard order == nil || order == "asc" || order == "desc" else { throw ServiceError.unprocessable("order is asc or desc") }
        let filter = try Self.alertFilter(query ?? "")
        let now = clock.nowMillis()
        let rows = try await db {
            try await storage.appNotifications(
                userId: hook.subscription.userId, hostName: hook.app.hostName, filter: filter, top: limit, skip: offset, oldestFirst: order == "asc",
                now: now)
        }
        return rows.map { Opsgenie.alertObject($0, now: now, integration: hook.subscription.id) }
    }

    /// Opsgenie's query as notty filters alerts: `status:open|closed`, `acknowledged:true|false`,
    /// and any other words (matched as a search).
    static func alertFilter(_ query: String) throws -> AlertFilter {
        var filter = AlertFilter()
        var words: [String] = []
        for term in query.split(whereSeparator: \.isWhitespace).map(String.init) {
            guard let colon = term.firstIndex(of: ":") else {
                words.append(term)
                continue
            }
            let field = term[..<colon].lowercased(), value = term[term.index(after: colon)...].lowercased()
            switch (field, value) {
            case ("status", "open"): filter.closed = false
            case ("status", "closed"): filter.closed = true
            case ("acknowledged", "true"): filter.acknowledged = true
            case ("acknowledged", "false"): filter.acknowledged = false
            default:
                throw ServiceError.unprocessable(
                    "notty's alert query takes status:open|closed, acknowledged:true|false and words, not \(term.prefix(64))")
            }
        }
        let text = words.joined(separator: " ")
        if text.count > NotificationSearch.maxLength || text.containsNUL {
            throw ServiceError.unprocessable("the query's words take at most \(NotificationSearch.maxLength) characters, none of them NUL")
        }
        filter.search = text.isEmpty ? nil : text
        return filter
    }

    /// `GET /v2/alerts/{identifier}`: the alert as Opsgenie shows one.
    public func opsgenieGet(key: String?, _ identifier: OpsgenieIdentifier) async throws -> JSONValue {
        let hook = try await opsgenieHook(key: key)
        return Opsgenie.alertObject(try await opsgenieAlert(identifier, of: hook), now: clock.nowMillis(), integration: hook.subscription.id)
    }

    /// `POST /v2/alerts/{identifier}/acknowledge|unacknowledge|close|snooze` and `DELETE`: the
    /// state changed on every device, as the user's own change would be (acknowledge Read,
    /// unacknowledge Unread, close Dismissed, snooze Snoozed until `endTime`, delete deleted),
    /// the sending `user` (else "Opsgenie API") named as who did it, its `note` added to the
    /// alert's. Answers the request's id.
    public func opsgenieChange(
        key: String?, _ identifier: OpsgenieIdentifier, _ action: OpsgenieAction, user: String?, note: String? = nil, until: Date?
    ) async throws -> String {
        let hook = try await opsgenieHook(key: key)
        let now = clock.nowMillis()
        try takeRate(of: hook.app, now: now)
        let alert = try await opsgenieAlert(identifier, of: hook)
        var mutation: Mutation
        switch action {
        case .acknowledge: mutation = Mutation(id: alert.id, change: StateChange(readState: .read))
        case .unacknowledge: mutation = Mutation(id: alert.id, change: StateChange(readState: .unread))
        case .close: mutation = Mutation(id: alert.id, change: StateChange(userActionState: .dismissed))
        case .delete: mutation = Mutation(id: alert.id, operation: .delete)
        case .snooze:
            guard let until, until > now else { throw ServiceError.badRequest("endTime is required: a time in the future (ISO 8601)") }
            mutation = Mutation(id: alert.id, change: StateChange(userActionState: .snoozed, snoozedUntil: until))
        }
        mutation.by = ChangedBy(user: String((user?.isEmpty == false ? user! : "Opsgenie API").prefix(64)), device: nil, at: now)
        let result = try await inbox.mutate(userId: hook.subscription.userId, [mutation])[0]  // a team's alert: as its owner's change
        guard result.status < 300 else { throw ServiceError.notFound("Alert does not exist") }
        if action != .delete, let note, !note.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty {
            try await opsgenieEdit(
                alert, of: try await feedHook(of: alert, hook),
                Opsgenie.Edit(change: .note, user: user, note: String(note.prefix(Opsgenie.Record.maxNote))), now: now)
        }
        return Opsgenie.RequestRecord(action: action.rawValue, alertId: alert.id, alias: alert.appNotificationId, processedAt: ISOTime.millis(now))
            .requestId
    }

    /// `GET /v2/alerts/requests/{requestId}`: how a request of this key's went (`404` for one
    /// that is not, or whose alert is not, this key's).
    public func opsgenieRequest(key: String?, requestId: String) async throws -> JSONValue {
        let hook = try await opsgenieHook(key: key)
        guard let record = Opsgenie.RequestRecord(requestId: requestId) else { throw ServiceError.notFound("Request does not exist") }
        if record.action != OpsgenieAction.delete.rawValue {
            do {
                _ = try await opsgenieAlert(.id(record.alertId), of: hook)
            } catch let error as ServiceError where error.kind == .notFound {
                throw ServiceError.notFound("Request does not exist")
            }
        }
        return record.status(integration: hook.subscription.id)
    }
}
