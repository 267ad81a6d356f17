import Foundation
import Logging
import NottyCore
import NottyRecords
import NottySecrets
import Synchronization

/// The signed-in user's API (PROTOCOL.md §2.3): who they are, their subscriptions (devices, webhooks,
/// ntfy topics), their inbox by view, the change feed and its cursors, state changes.
public final class Inbox: ServicePart {
    package let core: ServiceCore
    /// The storage this part uses: its concerns alone.
    let storage: any InboxStorage
    /// Told of every new rule; sends a rule's test.
    let paging: any Paging
    /// Whose teams a subscription may be for.
    package let teams: Teams
    /// Where rules and contacts may send (the outbound policy's check when one is made).
    let outbound: (any OutboundHTTP)?

    init(core: ServiceCore, storage: any InboxStorage, paging: any Paging, teams: Teams, outbound: (any OutboundHTTP)?) {
        self.core = core
        self.storage = storage
        self.paging = paging
        self.teams = teams
        self.outbound = outbound
    }

    public func me(userId: String) async throws -> Me {
        guard let user = try await db({ try await storage.user(id: userId) }) else { throw ServiceError.unauthenticated("this user was removed") }
        return Me(id: user.id, userName: user.userName, displayName: user.displayName)
    }

    /// Registers a device (no `targetHostName`), subscribes the user to an app, or makes a
    /// webhook (`platform` `webhook`: its URL, under `baseURL`, is in the answer this once).
    /// The app must be registered (else `404`). A device signed in since devices were listed keeps one id:
    /// the one its tokens carry.
    public func createSubscription(userId: String, deviceId callerDevice: String? = nil, body: Data, baseURL: String? = nil) async throws
        -> SubscriptionInfo
    {
        let fields: JSONFields
        let host: String?, deviceName: String?, platform: String?
        do {
            fields = try JSONFields(body: body)
            host = try fields.string("targetHostName", max: 253)
            deviceName = try fields.string("deviceName", max: 256)
            platform = try fields.string("platform", max: 32)
        } catch {
            throw ServiceError.badRequest(error.message)
        }
        if let platform, !["websocket", "polling", "webhook", "ntfy", "web"].contains(platform.lowercased()) {
            throw ServiceError.badRequest("platform must be websocket, polling, webhook, ntfy or web")
        }
        let webhook = platform?.lowercased() == "webhook"
        // An ntfy topic (PROTOCOL.md §8.2): a read-only device whose URL is its credential.
        let topic = platform?.lowercased() == "ntfy"
        if topic && host != nil { throw ServiceError.badRequest("an ntfy topic follows the whole inbox: leave out targetHostName") }
        let secret: String?, alertmanager: String?, teamName: String?
        do {
            secret = try fields.string("secret", max: 256)
            alertmanager = try fields.string("alertmanager", max: 2048)
            teamName = try fields.string("team", max: Team.maxNameLength)
        } catch {
            throw ServiceError.badRequest(error.message)
        }
        if let alertmanager {
            guard webhook else { throw ServiceError.badRequest("alertmanager is for webhooks (platform webhook)") }
            guard LaunchURL.isValid(alertmanager), !alertmanager.contains("?") else {
                throw ServiceError.badRequest("alertmanager must be Alertmanager's http(s) address, e.g. http://alertmanager:9093")
            }
        }
        if webhook && host == nil { throw ServiceError.badRequest("a webhook needs targetHostName: the registered app it publishes as") }
        if secret != nil && !webhook { throw ServiceError.badRequest("secret is for webhooks (platform webhook)") }
        if let host, try await db({ try await storage.app(hostName: host) }) == nil {
            throw ServiceError.notFound(
                "no app \(host) is registered on this service: check the name, or ask its administrator to run notty admin app add \(host)")
        }
        // An app's subscription for a team (PROTOCOL.md §13.1): its owners make it, and it
        // publishes into the team's feed, which every member reads.
        var owner = userId
        if let teamName {
            guard host != nil, !topic else { throw ServiceError.badRequest("team is for an app's subscription: give targetHostName") }
            let (team, role) = try await teams.membership(name: teamName, userId: userId)
            guard role == .owner else { throw ServiceError.forbidden("only the owners of \(team.name) subscribe apps for it") }
            owner = team.id
        }
        let now = clock.nowMillis()
        let token = webhook || topic ? Secrets.newToken() : nil
        let record = SubscriptionRecord(
            id: UUID().uuidString.lowercased(), userId: owner, targetHostName: host,
            deviceId: topic ? UUID().uuidString.lowercased() : callerDevice ?? UUID().uuidString.lowercased(),
            deviceName: deviceName, platform: platform?.lowercased(), createdAt: now,
            // A webhook's URL lives until it is revoked: the tools it is pasted into do not renew it.
            expiresAt: webhook || topic ? SubscriptionRecord.never : now + TimeInterval(config.subscriptionLifetime),
            lastSeen: host == nil && !topic ? now : nil,  // a device registering is a device seen
            webhookHash: token.map(Secrets.tokenHash), webhookSecret: secret.map(secrets.seal),
            alertmanagerURL: alertmanager.map { secrets.seal($0.hasSuffix("/") ? String($0.dropLast()) : $0) },
            upstreamId: topic ? config.publicURL.flatMap { url in token.map { Inbox.upstreamTopic(publicURL: url, topic: $0) } } : nil)
        try await refuseBeyondLimit(record)
        try await db { try await storage.insertSubscription(record) }
        var info = record.info
        if let token, webhook { info.webhookUrl = "\(baseURL ?? "")/v1/hooks/\(token)" }
        if let token, topic { info.topicUrl = "\(baseURL ?? "")/\(token)" }
        return info
    }

    /// `400` when `record` would be one more of its kind than its owner may hold (PROTOCOL.md §15);
    /// a device registering again, or an app subscribed again from the same device, is the same one.
    package func refuseBeyondLimit(_ record: SubscriptionRecord) async throws {
        let now = clock.nowMillis()
        let limited = record.kind.limited
        let held = try await db { try await storage.subscriptions(userId: record.userId) }.filter {
            $0.kind.limited == limited && $0.expiresAt > now
        }
        let counted = Set(held.map(\.countedAs))
        guard !counted.contains(record.countedAs), counted.count >= limited.limit else { return }
        throw ServiceError.badRequest(
            "at most \(limited.limit) \(limited.noun) each: revoke one first (notty devices lists them, notty devices revoke ID)")
    }

    public func subscriptions(userId: String) async throws -> [SubscriptionInfo] {
        try await db { try await storage.subscriptions(userId: userId) }.map(\.info)
    }

    /// `GET /v1/teams/{name}/subscriptions` (owners): the apps subscribed and the hooks made for
    /// the team, whoever of its owners made them (PROTOCOL.md §15: they are the team's).
    public func teamSubscriptions(team name: String, userId: String) async throws -> [SubscriptionInfo] {
        let team = try await ownedTeam(name, userId: userId, to: "list its apps and hooks")
        return try await db { try await storage.subscriptions(userId: team.id) }.map(\.info)
    }

    /// `DELETE /v1/teams/{name}/subscriptions/{id}` (owners): the app's subscription or hook
    /// ends; its URL stops publishing at once.
    public func revokeTeamSubscription(team name: String, userId: String, id: String) async throws {
        let team = try await ownedTeam(name, userId: userId, to: "revoke its apps and hooks")
        let revoked = try await db { try await storage.revokeSubscription(id: id, userId: team.id) }
        core.forgetCachedCredentials()  // a hook's URL is cached by its hash
        guard revoked else { throw ServiceError.notFound("no app or hook \(id) in \(team.name) (notty team \(team.name) --apps lists them)") }
    }

    private func ownedTeam(_ name: String, userId: String, to what: String) async throws -> Team {
        let (team, role) = try await teams.membership(name: name, userId: userId)
        guard role == .owner else { throw ServiceError.forbidden("only the owners of \(team.name) \(what)") }
        return team
    }

    public func revokeSubscription(userId: String, id: String) async throws {
        let revoked = try await db { try await storage.revokeSubscription(id: id, userId: userId) }
        core.forgetCachedCredentials()  // a webhook's URL is cached by its hash, not by this id
        guard revoked else { throw ServiceError.notFound("no such subscription") }
        await wakeStreams(userId: userId)  // a revoked ntfy topic's streams end at once
    }

    /// Parses a cursor; `since` absent means "from the start".
    public func parseCursor(_ text: String?) throws -> Int64 {
        guard let text else { return 0 }
        guard !text.isEmpty, text.utf8.count <= 18, text.allSatisfy(\.isASCIIDigit), let value = Int64(text) else {
            throw ServiceError.badRequest("since must be a cursor returned by this service")
        }
        return value
    }

    /// The user's newest cursor as this instance knows it without asking storage (nil: not known).
    package func knownLatestCursor(userId: String) -> Int64? { core.latestCursors[userId] }

    /// The user's newest cursor (what a device that is up to date holds).
    public func latestCursor(userId: String) async throws -> Int64 {
        if let known = core.latestCursors[userId] { return known }
        let latest = try await db { try await storage.latestSeq(userId: userId) }
        core.latestCursors.advance([userId: latest])
        return core.latestCursors[userId] ?? latest
    }

    /// A page after a position, with a plain position as its cursor (the service's own readers:
    /// a full-payload doorbell, an ntfy topic).
    public func changes(userId: String, since: Int64, limit: Int) async throws -> ChangesPage {
        try await changes(userId: userId, cursor: FeedCursor(seq: since), limit: limit, marksResyncs: false)
    }

    /// A page of the change feed after `cursor` (as ``parseFeedCursor(_:)`` reads it).
    ///
    /// A read from the start (a resync) that takes several pages gets cursors that say so
    /// (`r<start>.<position>`): the history's start may be past the positions it has reached
    /// (a member who joined or left a team moves it), and such a cursor is refused only when the
    /// start moved again meanwhile. The last page's cursor is a plain position.
    public func changes(userId: String, cursor: FeedCursor, limit: Int, marksResyncs: Bool = true) async throws -> ChangesPage {
        let highest = try await db { try await storage.highestSeq() }
        if cursor.seq > highest { throw ServiceError.cursorExpired }
        guard
            let page = try await db({
                try await storage.changes(userId: userId, since: cursor.seq, limit: limit, historyFrom: cursor.resyncFrom)
            })
        else {
            throw ServiceError.cursorExpired
        }
        let resyncing = marksResyncs && (cursor.seq == 0 || cursor.resyncFrom != nil)
        let next =
            page.hasMore && resyncing
            ? FeedCursor(seq: page.lastSeq, resyncFrom: cursor.resyncFrom ?? page.historyStart) : FeedCursor(seq: page.lastSeq)
        return ChangesPage(
            changes: try await withEscalations(page.changes, userId: userId), cursor: next.text, hasMore: page.hasMore,
            preferences: page.preferences.isEmpty ? nil : page.preferences)
    }

    /// `since` as a device sends it back: a position, or a resync's (`r<start>.<position>`).
    public func parseFeedCursor(_ text: String?) throws -> FeedCursor {
        guard let text, text.hasPrefix("r") else { return FeedCursor(seq: try parseCursor(text)) }
        let parts = text.dropFirst().split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 2 else { throw ServiceError.badRequest("since must be a cursor returned by this service") }
        return FeedCursor(seq: try parseCursor(parts[1]), resyncFrom: try parseCursor(parts[0]))
    }

    /// `GET /v1/me/notifications`: a window of `view`, newest first; with `search`, of the
    /// notifications that match it (``SearchQuery``, PROTOCOL.md §17: a query it cannot read is
    /// `400` with what to write instead).
    public func list(userId: String, view: NotificationView, top: Int, skip: Int, search: String? = nil) async throws -> [UserNotification] {
        let query = try Self.searchQuery(search)
        return try await withEscalations(
            try await db { try await storage.list(userId: userId, view: view, top: top, skip: skip, search: query, now: clock.nowMillis()) },
            userId: userId)
    }

    /// `notifications` with the escalations logged on them (PROTOCOL.md §11) and how their actions
    /// went (PROTOCOL.md §12).
    func withEscalations(_ notifications: [UserNotification], userId: String) async throws -> [UserNotification] {
        let live = notifications.filter { $0.status == .active }
        var log = try await db { try await storage.escalationLog(userId: userId, notificationIds: live.map(\.id)) }
        // A team's notifications are logged in the team's feed (its policy's pages, PROTOCOL.md §13.2).
        let teamIds = live.filter { $0.team != nil }.map(\.id)
        if !teamIds.isEmpty {
            let owners = try await db { try await storage.teamOwners(ids: teamIds, userId: userId) }
            for (owner, ids) in Dictionary(grouping: owners.keys, by: { owners[$0]! }) where owner != userId {
                log.merge(try await db { try await storage.escalationLog(userId: owner, notificationIds: Array(ids)) }) { $1 }
            }
        }
        var published: [String: Int64] = [:]
        for n in live where n.actions != nil { published[n.id] = ISOTime.millis(n.createdDateTime) }
        let results = try await db { try await storage.actionResults(userId: userId, published: published) }
        guard !log.isEmpty || !results.isEmpty else { return notifications }
        return notifications.map { n in
            var n = n
            n.escalations = log[n.id]
            n.actionResults = results[n.id]
            return n
        }
    }

    /// `GET /v1/me/notifications/counts[?search=QUERY]`: every view's count; with a search,
    /// of the notifications it finds (a saved view's tab, PROTOCOL.md §17).
    public func counts(userId: String, search: String? = nil) async throws -> ViewCounts {
        let query = try Self.searchQuery(search)
        return try await db { try await storage.counts(userId: userId, now: clock.nowMillis(), search: query) }
    }

    /// `search` read (``SearchQuery``; `400` with the parser's words), nil when blank.
    static func searchQuery(_ search: String?) throws -> SearchQuery? {
        guard let search else { return nil }
        do throws(ValidationError) {
            let parsed = try SearchQuery.parse(search)
            return parsed.isEmpty ? nil : parsed
        } catch {
            throw ServiceError.badRequest("search: \(error.message)")
        }
    }

    /// One notification. Tombstones and expired ones are gone: 404.
    public func notification(userId: String, id: String) async throws -> UserNotification {
        guard let found = try await db({ try await storage.notification(id: id, userId: userId) }), found.isLive(at: clock.nowMillis()) else {
            throw ServiceError.notFound()
        }
        return try await withEscalations([found], userId: userId)[0]
    }

    /// The name the user gave the device (`notty devices`), else `device` and its id's start.
    public func deviceName(userId: String, deviceId: String?) async throws -> String? {
        guard let deviceId else { return nil }
        // Given its name already (an action's press passes it on), the name.
        let device = try await db { try await storage.subscriptions(userId: userId) }.first {
            ($0.deviceId == deviceId || $0.deviceName == deviceId) && $0.targetHostName == nil
        }
        return device?.deviceName ?? "device " + deviceId.prefix(8)
    }

    /// Applies device mutations; one result per mutation, in order. `device` (the caller's
    /// name or id) is who handled them, should that take an escalation back.
    public func mutate(userId: String, device: String? = nil, _ mutations: [Mutation]) async throws -> [MutationResult] {
        if let device { core.handlers.note(userId: userId, ids: mutations.map(\.id), device: device, now: clock.nowMillis()) }
        // A team's notification is changed in the team's feed, for every member (PROTOCOL.md §13.1).
        let owners = try await db { try await storage.teamOwners(ids: Array(Set(mutations.map(\.id))), userId: userId) }
        let now = clock.nowMillis()
        // Each member's change of a team's notification says who made it.
        var by: ChangedBy?
        if !owners.isEmpty, let user = try await db({ try await storage.user(id: userId) }) {
            by = ChangedBy(user: user.userName, device: try await deviceName(userId: userId, deviceId: device), at: now)
        }
        var results: [MutationResult?] = Array(repeating: nil, count: mutations.count)
        let byOwner = Dictionary(grouping: mutations.indices) { owners[mutations[$0].id] ?? userId }
        for (owner, indices) in byOwner.sorted(by: { $0.key < $1.key }) {
            let changes = indices.map { index in
                var mutation = mutations[index]
                if owner != userId { mutation.by = by }
                return mutation
            }
            let applied = try await db { try await storage.mutate(userId: owner, mutations: changes, now: now) }
            for (index, result) in zip(indices, applied) { results[index] = result }
        }
        metrics.mutations.increment(by: Int64(mutations.count))
        return results.compactMap { $0 }
    }
}

/// What ``Inbox`` asks of the storage.
public typealias InboxStorage = AccountStorage & SubscriptionStorage & FeedStorage & PreferenceStorage & EscalationRuleStorage & EscalationStorage
    & OnCallStorage
    & ActionStorage

/// Where a device is in its change feed: a position, and for a resync under way the history's
/// start it began at.
public struct FeedCursor: Sendable, Equatable {
    public var seq: Int64
    public var resyncFrom: Int64?

    public init(seq: Int64, resyncFrom: Int64? = nil) {
        self.seq = seq
        self.resyncFrom = resyncFrom
    }

    /// As the wire carries it.
    public var text: String { resyncFrom.map { "r\($0).\(seq)" } ?? String(seq) }
}
