import Foundation
import NottyCore
import NottyTestSupport

@testable import NottyTUI

/// A fixed clock and a fixed set of realistic notifications, so screens are deterministic.
enum Fixtures {
    /// Saturday 2026-03-14 10:00 UTC.
    static let now = Date(timeIntervalSince1970: 1_773_482_400)
    static let utc = TimeZone(identifier: "UTC")!

    static func id(_ n: Int) -> String { String(format: "3f2a9c1e-7d4b-4e0a-9b1c-%012d", n) }

    static func note(
        _ n: Int, _ app: String, _ group: String?, _ title: String, body: String? = nil, raw: String? = nil,
        priority: Priority = .none, ago: TimeInterval, read: ReadState = .unread,
        action: UserActionState = .noInteraction, snoozedUntil: Date? = nil, ttl: TimeInterval = 30 * 86_400
    ) -> UserNotification {
        .fixture(
            id: id(n), appNotificationId: "app-\(n)", app: app, group: group, priority: priority, title: title, body: body, raw: raw,
            created: now.addingTimeInterval(-ago), ttl: ttl, read: read, action: action, snoozedUntil: snoozedUntil)
    }

    static let minute: TimeInterval = 60
    static let hour: TimeInterval = 3600
    static let day: TimeInterval = 86_400

    /// 17 notifications: 7 Unread, 4 Read, 2 Activated, 2 Dismissed, 2 Snoozed.
    static let notifications: [UserNotification] = [
        note(
            1, "ci.acme.io", "main", "Build #4821 failed on main",
            body:
                "test_payment_refund timed out after 30s.\nCommit 9f3c2ab by dana: Retry webhook delivery on 5xx responses from the payment provider",
            raw: #"{"run":4821,"status":"failed","url":"https://ci.acme.io/runs/4821"}"#, priority: .high, ago: 2 * minute),
        note(
            2, "deploy.acme.io", "production", "デプロイ完了 ✅ api v2.14.0",
            body: "api v2.14.0 を本番環境にデプロイしました。所要時間 3分12秒。", ago: 5 * minute),
        note(
            3, "alerts.acme.io", "cn-north", "服务器告警 🔥 CPU 使用率 97%",
            body: "主机 web-07 的 CPU 使用率在过去 5 分钟内持续高于 95%。", priority: .high, ago: 14 * minute),
        note(
            4, "chat.acme.io", "#ops", "bob: can someone look at the queue backlog? it has been growing since the 9:40 deploy",
            ago: 38 * minute),
        note(
            5, "code.acme.io", "notty", "🎉 Release 2.0", body: "Tagged v2.0.0 — changelog at code.acme.io/notty/releases",
            priority: .low, ago: 1 * hour + 5 * minute),
        note(6, "calendar.acme.io", "reminders", "Standup in 15 minutes", body: "Room 4B or meet.acme.io/standup", ago: 2 * hour),
        note(
            7, "alerts.acme.io", "eu-west", "Disk usage 91% on db-02", body: "/var/lib/postgresql is at 91% (threshold 90%).",
            priority: .high, ago: 3 * hour),
        note(
            8, "chat.acme.io", "@carol", "carol: lunch at 12:30?", ago: 4 * hour, action: .snoozed,
            snoozedUntil: now.addingTimeInterval(1 * hour)),
        note(
            9, "calendar.acme.io", "reminders", "Renew TLS certificate for api.acme.io", priority: .high, ago: 1 * day,
            action: .snoozed, snoozedUntil: now.addingTimeInterval(23 * hour)),
        note(10, "ci.acme.io", "release-2.0", "Build #4817 passed on release-2.0", ago: 5 * hour, read: .read),
        note(11, "chat.acme.io", "#general", "erin: 👨‍👩‍👧 family photos are up!", ago: 1 * day + 2 * hour, read: .read),
        note(
            12, "deploy.acme.io", "staging", "Deployed web 3.8.1 to staging (feature flags: new-billing, dark-mode, faster-search)",
            ago: 2 * day, read: .read),
        note(
            13, "alerts.acme.io", "eu-west", "Latency p99 above 800 ms on checkout", priority: .high, ago: 6 * hour, read: .read,
            action: .snoozed, snoozedUntil: now.addingTimeInterval(-30 * minute)),
        note(
            14, "ci.acme.io", "main", "Build #4810 failed on main", priority: .high, ago: 1 * day + 5 * hour, read: .read,
            action: .activated),
        note(15, "code.acme.io", "notty", "Review requested: Fix resize flicker (#312)", ago: 3 * day, read: .read, action: .activated),
        note(16, "calendar.acme.io", "reminders", "Pay the Hetzner invoice", ago: 8 * day, read: .read, action: .dismissed),
        note(17, "alerts.acme.io", "cn-north", "Recovered: 服务器告警 resolved", ago: 2 * day + 3 * hour, action: .dismissed),
    ]

    static let status = SyncStatus(
        user: "alice", server: "http://127.0.0.1:8787", connection: .live, outbox: 0,
        lastSync: now.addingTimeInterval(-2 * minute))
}

/// An in-memory store that answers the UI like the real shell would.
struct FakeStore {
    var notifications: [UserNotification]
    var now: Date

    /// The view's rows matching the query, newest first (then by id).
    func matching(_ view: NotificationView, query: String) -> [UserNotification] {
        notifications
            .filter { view.contains($0, now: now) && Self.matches($0, query: query) }
            .sorted { ($0.createdDateTime, $0.id) > ($1.createdDateTime, $1.id) }
    }

    static func matches(_ n: UserNotification, query: String) -> Bool {
        guard !query.isEmpty else { return true }
        if let key = GroupQuery.key(in: query) { return n.groupKey == key }
        let fields = [n.displayTitle, n.payload.visualContent?.body ?? "", n.targetHostName, n.groupName ?? ""]
        return fields.contains { $0.range(of: query, options: [.caseInsensitive, .diacriticInsensitive]) != nil }
    }

    var counts: ViewCounts {
        var counts = ViewCounts()
        for n in notifications { counts.add(n, now: now) }
        return counts
    }

    /// The group rows of a view, computed from the rows (the store does it in SQL).
    func groups(_ view: NotificationView, query: String) -> [NotificationGroup] {
        var groups: [NotificationGroup] = []
        for row in matching(view, query: query) {
            if let i = groups.firstIndex(where: { $0.key == row.groupKey }) {
                groups[i].count += 1
                groups[i].lone = nil
                groups[i].unread += row.readState == .unread ? 1 : 0
                if groups[i].app != row.targetHostName { groups[i].app = nil }
            } else {
                // The rows come newest first: the first of a group is its newest.
                groups.append(
                    NotificationGroup(
                        key: row.groupKey, app: row.targetHostName, count: 1,
                        unread: row.readState == .unread ? 1 : 0, newest: row.createdDateTime,
                        newestTitle: row.displayTitle, lone: row))
            }
        }
        return groups
    }

    func answer(_ request: WindowRequest) -> TUIEvent {
        if request.groups {
            return .groupsLoaded(
                GroupWindow(view: request.view, query: request.query, groups: groups(request.view, query: request.query)), counts: counts)
        }
        let (window, selection) = request.answer(from: matching(request.view, query: request.query))
        return .loaded(window, counts: counts, selection: selection)
    }

    /// `findUnread` answered as the real shell does: the window around the next (or previous)
    /// Unread row after the anchor in the whole view.
    func findUnread(_ request: WindowRequest, forward: Bool) -> TUIEvent {
        let rows = matching(request.view, query: request.query)
        let from = rows.firstIndex { $0.id == request.anchorId } ?? (forward ? -1 : rows.count)
        let candidates = forward ? Array(rows.indices.filter { $0 > from }) : Array(rows.indices.filter { $0 < from }.reversed())
        guard let found = candidates.first(where: { rows[$0].readState == .unread }) else { return .message(TUIState.noUnread(forward: forward)) }
        var jump = request
        jump.anchorId = rows[found].id
        let (window, selection) = jump.answer(from: rows)
        return .jumped(window, counts: counts, selection: selection)
    }

    /// Applies a store effect; returns the events the shell sends back (`.storeChanged` when
    /// the store changed).
    mutating func perform(_ effect: TUIEffect) -> [TUIEvent] {
        if case .markAllRead(let view, let query) = effect {
            let ids = matching(view, query: query).filter { $0.readState == .unread }.map(\.id)
            for i in notifications.indices where ids.contains(notifications[i].id) { notifications[i].readState = .read }
            return [.markedAllRead(ids), .storeChanged]
        }
        if case .readGroup(let view, let query, let action) = effect {
            return [.groupRead(action, matching(view, query: query))]
        }
        return apply(effect) ? [.storeChanged] : []
    }

    /// Applies a store effect; returns whether the store changed.
    mutating func apply(_ effect: TUIEffect) -> Bool {
        switch effect {
        case .mutate(let changes):
            for item in changes {
                guard let i = notifications.firstIndex(where: { $0.id == item.id }) else { continue }
                if let read = item.change.readState { notifications[i].readState = read }
                if let action = item.change.userActionState {
                    notifications[i].userActionState = action
                    notifications[i].snoozedUntil = action == .snoozed ? item.change.snoozedUntil : nil
                }
            }
            return true
        case .delete(let ids):
            notifications.removeAll { ids.contains($0.id) }
            return true
        case .markAllRead:
            return !perform(effect).isEmpty
        case .load, .findUnread, .readGroup, .open, .runAction, .sync, .setQuiet, .quit:
            return false
        }
    }
}

/// The UI driven like the real shell drives it: loads are answered at once, store effects are
/// applied and followed by `.storeChanged`.
struct Harness {
    var state: TUIState
    var store: FakeStore

    init(
        size: Size = Size(columns: 80, rows: 24), view: NotificationView = .unread, notifications: [UserNotification] = Fixtures.notifications,
        useColor: Bool = true
    ) {
        state = TUIState(size: size, now: Fixtures.now, timeZone: Fixtures.utc, useColor: useColor)
        state.status = Fixtures.status
        store = FakeStore(notifications: notifications, now: Fixtures.now)
        run(.storeChanged)
        if view != .unread { run(.key(.character(Character(String(NotificationView.allCases.firstIndex(of: view)! + 1))))) }
    }

    /// Sends one event and returns its direct effects, without performing them.
    mutating func send(_ event: TUIEvent) -> [TUIEffect] {
        update(&state, event)
    }

    /// Sends one event and performs every effect like the shell; returns the effects other
    /// than loads (what the user's key asked of the store and the program).
    @discardableResult
    mutating func run(_ event: TUIEvent) -> [TUIEffect] {
        var queue = [event]
        var performed: [TUIEffect] = []
        var steps = 0
        while !queue.isEmpty {
            steps += 1
            precondition(steps < 100, "the UI and the fake store keep asking each other")
            let effects = update(&state, queue.removeFirst())
            for effect in effects {
                if case .load(let request) = effect {
                    queue.append(store.answer(request))
                } else if case .findUnread(let request, let forward) = effect {
                    queue.append(store.findUnread(request, forward: forward))
                } else {
                    performed.append(effect)
                    queue += store.perform(effect)
                }
            }
        }
        return performed
    }

    /// Sends several keys through `run`.
    @discardableResult
    mutating func keys(_ keys: Key...) -> [TUIEffect] {
        keys.flatMap { run(.key($0)) }
    }

    /// The titles of the loaded rows.
    var titles: [String] { state.window.rows.map(\.displayTitle) }

    var selectedTitle: String? { state.selectedRow?.displayTitle }
}

extension Key {
    static func ch(_ c: Character) -> Key { .character(c) }
}

extension Fixtures {
    /// `count` Unread chat messages, one a minute apart, newest first: "Message 1" … "Message N".
    static func many(_ count: Int) -> [UserNotification] {
        (1...count).map { i in
            note(1000 + i, "chat.acme.io", "#random", "Message \(i)", ago: Double(i) * minute)
        }
    }
}
