import Foundation
import NottyCore
import NottyRecords
import NottySecrets
import NottyService

/// On call (PROTOCOL.md §13.2): a team's rotation and overrides (owners set the rotation; a
/// member overrides for themselves, an owner for anyone), where a user is on call, an
/// iCalendar feed of a user's shifts behind a secret URL (a device: `notty devices revoke`
/// ends it), and each user's contacts, which a team's escalation policy pages.
public final class OnCall: OnCallService, ServicePart {
    package let core: ServiceCore
    let teams: Teams
    /// Whose subscriptions a calendar feed is one of (and counted with).
    let inbox: Inbox
    let paging: any Paging
    /// Where contacts may send (the outbound policy's check when one is added).
    let outbound: (any OutboundHTTP)?
    /// The storage this part uses: its concerns alone.
    let storage: any OnCallWorkStorage

    package init(core: ServiceCore, inbox: Inbox, paging: any Paging, outbound: (any OutboundHTTP)?, storage: any OnCallWorkStorage) {
        self.core = core
        self.inbox = inbox
        teams = inbox.teams
        self.paging = paging
        self.outbound = outbound
        self.storage = storage
    }

    /// How far ahead shifts are shown and put in a calendar; how far back a calendar keeps them.
    static let ahead: TimeInterval = 90 * 86_400
    static let behind: TimeInterval = 30 * 86_400

    // MARK: - A team's schedule

    public func view(team name: String, userId: String) async throws -> OnCallView {
        let (team, _) = try await teams.membership(name: name, userId: userId)
        return OnCallView(team: team.name, schedule: try await schedule(of: team), now: clock.nowMillis())
    }

    public func setRotation(team name: String, by userId: String, _ request: RotationRequest) async throws -> OnCallView {
        let (team, role) = try await teams.membership(name: name, userId: userId)
        guard role == .owner else { throw ServiceError.forbidden("only the owners of \(team.name) set its rotation") }
        if let outsider = request.rotation.first(where: { team.role(of: $0) == nil }) {
            throw ServiceError.badRequest(
                "\(outsider.prefix(64)) is not a member of \(team.name): add them first (notty team \(team.name) --add \(outsider.prefix(64)))")
        }
        try await update(team) { old in
            OnCallSchedule(
                rotation: request.rotation, shift: request.shift, start: request.start, zone: request.zone.identifier,
                overrides: old?.overrides ?? [])
        }
        return try await view(team: name, userId: userId)
    }

    public func addOverride(team name: String, by userId: String, _ request: OverrideRequest) async throws -> OnCallOverride {
        let (team, role) = try await teams.membership(name: name, userId: userId)
        let me = try await db { try await storage.user(id: userId) }?.userName ?? ""
        let existing = try await schedule(of: team)
        let zone = existing.flatMap { TimeZone(identifier: $0.zone) } ?? .gmt
        let now = clock.nowMillis()
        let override: OnCallOverride
        do throws(ValidationError) {
            let user = request.user ?? me
            guard team.role(of: user) != nil else { throw ValidationError("\(user) is not a member of \(team.name)") }
            let (fromText, untilText) = (request.from, request.until)
            let from = try LocalTime.parse(fromText, zone: zone, field: "from"), until = try LocalTime.parse(untilText, zone: zone, field: "until")
            guard until > from else { throw ValidationError("the override ends (\(untilText)) before it starts (\(fromText))") }
            guard until > now else { throw ValidationError("the override ends (\(untilText)) in the past") }
            guard until.timeIntervalSince(from) <= 366 * 86_400 else { throw ValidationError("an override lasts at most a year") }
            if user != me && role != .owner {
                throw ValidationError("only an owner of \(team.name) overrides for someone else: a member overrides for themselves")
            }
            override = OnCallOverride(
                id: "ovr-" + Identifiers.timeOrdered(now: now).suffix(10), user: user, from: from, until: until, created: now, by: me)
        } catch {
            throw error.message.hasPrefix("only an owner") ? ServiceError.forbidden(error.message) : ServiceError.badRequest(error.message)
        }
        try await update(team) { old throws(ServiceError) in
            var schedule = old ?? OnCallSchedule(rotation: [], shift: ShiftLength(count: 1, unit: .weeks), start: now, zone: "UTC")
            // What ended a while ago goes; a new one beyond a limit is refused, so that nobody's
            // overrides push out anybody else's (PROTOCOL.md §15).
            schedule.overrides.removeAll { $0.until <= now - Self.behind }
            if schedule.overrides.filter({ $0.by == me }).count >= OnCallSchedule.maxOverridesPerMember {
                throw ServiceError.badRequest(
                    "you hold \(OnCallSchedule.maxOverridesPerMember) overrides in \(team.name), the most a member may: remove one first (notty oncall \(team.name) --remove ID)"
                )
            }
            if schedule.overrides.count >= OnCallSchedule.maxOverrides {
                throw ServiceError.badRequest(
                    "\(team.name) holds \(OnCallSchedule.maxOverrides) overrides, the most a team may: an owner removes some first (notty oncall \(team.name) --remove ID)"
                )
            }
            schedule.overrides.append(override)
            return schedule
        }
        return override
    }

    public func removeOverride(team name: String, by userId: String, id: String) async throws {
        let (team, role) = try await teams.membership(name: name, userId: userId)
        let me = try await db { try await storage.user(id: userId) }?.userName ?? ""
        guard let found = try await schedule(of: team)?.overrides.first(where: { $0.id == id }) else {
            throw ServiceError.notFound("no override \(id) in \(team.name) (notty oncall \(team.name) shows them)")
        }
        guard role == .owner || found.user == me || found.by == me else {
            throw ServiceError.forbidden("only an owner of \(team.name) removes someone else's override")
        }
        try await update(team) { old in
            guard var schedule = old else { return nil }
            schedule.overrides.removeAll { $0.id == id }
            return schedule
        }
    }

    public func withOnCall(_ teams: [Team]) async throws -> [Team] {
        let now = clock.nowMillis()
        var answer: [Team] = []
        for var team in teams {
            if let schedule = try await schedule(of: team) { team.onCall = OnCallView(team: team.name, schedule: schedule, now: now).now }
            answer.append(team)
        }
        return answer
    }

    public func mine(userId: String) async throws -> MyOnCallList {
        guard let me = try await db({ try await storage.user(id: userId) })?.userName else { return MyOnCallList(value: []) }
        let now = clock.nowMillis()
        var value: [MyOnCall] = []
        for team in try await db({ try await storage.teams(userId: userId) }) {
            guard let schedule = try await schedule(of: team) else { continue }
            if let until = schedule.onCallUntil(user: me, now: now, horizon: Self.ahead) {
                value.append(MyOnCall(team: team.name, onCall: true, until: until))
            } else {
                value.append(
                    MyOnCall(team: team.name, onCall: false, next: schedule.shifts(from: now, until: now + Self.ahead).first { $0.user == me }))
            }
        }
        return MyOnCallList(value: value)
    }

    // MARK: - The calendar feed

    public func makeCalendar(team name: String, userId: String, baseURL: String?) async throws -> SubscriptionInfo {
        let (team, _) = try await teams.membership(name: name, userId: userId)
        let now = clock.nowMillis(), token = Secrets.newToken()
        let record = SubscriptionRecord(
            id: UUID().uuidString.lowercased(), userId: userId, targetHostName: nil, deviceId: team.id, deviceName: "on-call calendar (\(team.name))",
            platform: "ical", createdAt: now, expiresAt: SubscriptionRecord.never, webhookHash: Secrets.tokenHash(token))
        try await inbox.refuseBeyondLimit(record)
        try await db { try await storage.insertSubscription(record) }
        var info = record.info
        info.calendarUrl = "\(baseURL ?? "")/v1/calendars/\(token).ics"
        return info
    }

    public func calendarFeed(token: String) async throws -> String {
        let hash = Secrets.tokenHash(token.hasSuffix(".ics") ? String(token.dropLast(4)) : token)
        guard let record = try await db({ try await storage.subscription(webhookHash: hash) }), !record.revoked,
            let teamId = record.calendarTeamId, let user = try await db({ try await storage.user(id: record.userId) }), !user.disabled,
            let team = try await db({ try await storage.teams(userId: record.userId) }).first(where: { $0.id == teamId })
        else { throw ServiceError.notFound("no such calendar: it was revoked, or the URL is mistyped") }
        let now = clock.nowMillis()
        let shifts = try await schedule(of: team)?.shifts(from: now - Self.behind, until: now + Self.ahead) ?? []
        return ICalendar.onCallFeed(team: team.name, teamId: team.id, user: user.userName, shifts: shifts, now: now)
    }

    // MARK: - Contacts

    public func contacts(userId: String) async throws -> ContactList {
        var list: [Contact] = []
        for var contact in try await db({ try await storage.contacts(userId: userId) }) {
            contact.target = (try? await secrets.openFetching(stored: contact.target)) ?? secrets.shownTarget(contact.target)
            list.append(contact)
        }
        return ContactList(value: list)
    }

    public func addContact(userId: String, _ request: ContactRequest) async throws -> Contact {
        let target = request.target
        do throws(ValidationError) {
            try target.requireKnown(commands: config.escalationCommands)
        } catch {
            throw ServiceError.badRequest(error.message)
        }
        if let refusal = target.refusal(by: outbound) { throw ServiceError.badRequest("\(target.shown) is not allowed: \(refusal)") }
        let now = clock.nowMillis()
        let contact = Contact(id: "ct-" + Identifiers.timeOrdered(now: now).suffix(10), target: target.description, created: now)
        var sealed = contact
        sealed.target = secrets.seal(contact.target).stored
        guard try await db({ try await storage.insertContact(sealed, userId: userId, limit: Contact.maxPerUser) }) else {
            throw ServiceError.badRequest("a user has at most \(Contact.maxPerUser) contacts: remove one first (notty contact remove ID)")
        }
        paging.pagingChanged()
        return contact
    }

    public func removeContact(userId: String, id: String) async throws {
        guard try await db({ try await storage.deleteContact(id: id, userId: userId) }) else {
            throw ServiceError.notFound("no contact \(id) (notty contact --list shows yours)")
        }
        paging.pagingChanged()
    }

    public func testContact(userId: String, id: String) async throws -> EscalationTestOutcome {
        guard let contact = try await db({ try await storage.contacts(userId: userId) }).first(where: { $0.id == id }) else {
            throw ServiceError.notFound("no contact \(id) (notty contact --list shows yours)")
        }
        try core.takeTest(userId: userId)
        let now = clock.nowMillis()
        let sample = EscalationDelivery.testNotification(
            "notty-contact-test", title: "notty contact test", body: "When you are paged, it reaches you here.", now: now)
        let delivery = EscalationDelivery(
            id: "test", userId: userId, notificationId: sample.id, ruleId: "", ruleName: "contact test", target: contact.target, event: .test,
            notification: sample, firstAt: now, nextAt: now)
        let failure = await paging.sendOnce(delivery)
        return EscalationTestOutcome(target: secrets.shownTarget(contact.target), ok: failure == nil, error: failure)
    }

    // MARK: - Reading and writing a schedule

    /// The team's schedule, nil when it has none; one that cannot be read is an error that
    /// says so (PROTOCOL.md §15), never "no rotation".
    func schedule(of team: Team) async throws -> OnCallSchedule? {
        guard let text = try await db({ try await storage.onCallSchedule(teamId: team.id) }) else { return nil }
        do {
            return try OnCallSchedule.decode(stored: text, team: team.name)
        } catch {
            throw Self.unreadable(error)
        }
    }

    /// A schedule that cannot be read, as the service answers it (logged with the request id).
    static func unreadable(_ error: OnCallSchedule.Unreadable) -> ServiceError {
        ServiceError(.internalError, "scheduleUnreadable", error.description)
    }

    /// Changes the team's schedule in one transaction; one stored that cannot be read is left
    /// as it is, and the change refused.
    func update(_ team: Team, _ change: @escaping @Sendable (OnCallSchedule?) throws(ServiceError) -> OnCallSchedule?) async throws {
        let name = team.name
        try await db {
            try await storage.updateOnCallSchedule(teamId: team.id, at: clock.nowMillis()) { old in
                var schedule: OnCallSchedule? = nil
                if let old {
                    do throws(OnCallSchedule.Unreadable) {
                        schedule = try OnCallSchedule.decode(stored: old, team: name)
                    } catch {
                        throw Self.unreadable(error)
                    }
                }
                return try change(schedule).map { try $0.encoded() }
            }
        }
        paging.pagingChanged()
    }
}
