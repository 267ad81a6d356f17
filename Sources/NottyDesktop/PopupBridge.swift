import Foundation
import NottyCore

/// What one desktop popup shows: the arguments of freedesktop `Notify`.
public struct PopupContent: Sendable, Equatable {
    public enum Urgency: UInt8, Sendable {
        case low = 0
        case normal = 1
        case critical = 2
    }

    public var appName = "notty"
    public var summary: String
    /// The body with markup escaped (`&`, `<`, `>`): daemons read a small HTML subset.
    public var body: String
    /// Action keys and labels; `default` is a click on the popup itself.
    public var actions: [(key: String, label: String)]
    public var urgency: Urgency
    /// Milliseconds; -1 lets the daemon decide.
    public var expireTimeout: Int32 = -1

    /// A popup with no actions but a click.
    public init(summary: String, body: String, urgency: Urgency = .normal) {
        self.summary = summary
        self.body = body
        self.urgency = urgency
        actions = []
    }

    /// The popup of a notification: summary = title, body = body, urgency Low for `Low`
    /// priority and normal otherwise, a click (`default`) activates (and opens the link),
    /// "Open" when there is a link, "Dismiss" dismisses; the publisher's actions (PROTOCOL.md §12)
    /// are buttons too, keyed `act-N`.
    public init(_ notification: UserNotification) {
        summary = notification.displayTitle
        body = Self.escapingMarkup(notification.payload.visualContent?.body ?? "")
        urgency = notification.priority == .low ? .low : .normal
        // A click (default) activates, and opens the link when there is one; "Open" says so.
        actions =
            notification.launchUrl == nil
            ? [("default", "Activate"), ("dismiss", "Dismiss")]
            : [("default", "Open"), ("open", "Open"), ("dismiss", "Dismiss")]
        for (index, action) in (notification.actions ?? []).enumerated() {
            actions.append(("\(Self.actionKeyPrefix)\(index + 1)", action.label))
        }
    }

    /// The keys of the publisher's actions: `act-1`, `act-2`, `act-3`.
    public static let actionKeyPrefix = "act-"

    public static func escapingMarkup(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for character in text {
            switch character {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            default: out.append(character)
            }
        }
        return out
    }

    public static func == (a: PopupContent, b: PopupContent) -> Bool {
        a.appName == b.appName && a.summary == b.summary && a.body == b.body && a.urgency == b.urgency
            && a.expireTimeout == b.expireTimeout && a.actions.map(\.key) == b.actions.map(\.key) && a.actions.map(\.label) == b.actions.map(\.label)
    }
}

/// Keeps a device's desktop popups true to the universal state (PROTOCOL.md §7.4), as a pure state
/// machine like the TUI's `update`: events in (a notification arrived or moved between views,
/// the daemon showed, closed or clicked a popup), effects out (D-Bus calls, state changes to
/// record). Its ``entries`` are the notification ↔ popup mapping, kept in the local store so a
/// restarted `notty poll` still closes the popups of the one before.
public struct PopupBridge: Sendable, Equatable {
    /// What the bridge remembers of one notification that popped up.
    public struct Entry: Sendable, Equatable {
        /// The daemon's id of its popup; nil when no popup is open (while it is snoozed).
        public var popupId: UInt32?
        /// Its view when last seen.
        public var view: NotificationView
        public init(popupId: UInt32?, view: NotificationView) {
            self.popupId = popupId
            self.view = view
        }
    }

    public enum Event: Sendable, Equatable {
        /// A notification arrived, or was re-published, in `view` (nil: deleted or expired), at
        /// `at` (what storms are counted by).
        case arrived(UserNotification, view: NotificationView?, at: Date = Date(timeIntervalSince1970: 0))
        /// A notification the bridge tracks is now in `view` (nil: deleted or expired); the
        /// notification itself when it is still there.
        case moved(id: String, UserNotification?, view: NotificationView?)
        /// The daemon answered `Notify` for `id` with `popupId`.
        case shown(id: String, popupId: UInt32)
        /// `NotificationClosed`: 1 expired, 2 dismissed by the user, 3 closed by a call, 4 other.
        case closed(popupId: UInt32, reason: UInt32)
        /// `ActionInvoked`: `default` (a click), or a key of ``PopupContent/actions``.
        case action(popupId: UInt32, key: String)
    }

    public enum Effect: Sendable, Equatable {
        /// `Notify`, replacing popup `replacing` in place (0: a new popup); answer with `.shown`.
        case show(id: String, PopupContent, replacing: UInt32)
        /// `CloseNotification`.
        case close(popupId: UInt32)
        /// Record Dismissed for the notification (synced to every device).
        case dismiss(id: String)
        /// Record Activated + Read, and open its link.
        case activate(id: String)
        /// Run action `number` (from 1) of the notification (PROTOCOL.md §12): a view action opens its
        /// URL and activates; an http action is the service's to run.
        case runAction(id: String, number: Int)
    }

    public private(set) var entries: [String: Entry]

    /// One app and group (PROTOCOL.md §9's storms are counted per app and group).
    public struct StormKey: Sendable, Hashable {
        public var app: String
        public var group: String?
        public init(_ notification: UserNotification) {
            app = notification.targetHostName.lowercased()
            group = notification.groupName
        }
        /// The storm popup's id in `.show` and `.shown` (never a notification's).
        var popupKey: String { "storm:\(app)/\(group ?? "")" }
    }

    /// A storm: one popup (nil until the daemon answers) for the notifications it stands for.
    struct Storm: Sendable, Equatable {
        var popupId: UInt32?
        var ids: [String]
        var latestTitle: String
    }

    /// More than this many popups of one app and group within ``stormWindow`` make a storm.
    public let stormLimit: Int
    public static let stormWindow: TimeInterval = 60
    /// When each app and group last popped up (within the window).
    private var recent: [StormKey: [Date]] = [:]
    private var storms: [StormKey: Storm] = [:]
    /// The storm key of each notification the bridge showed, while it is in a popup.
    private var keys: [String: StormKey] = [:]

    /// `stormLimit`: `[poll] storm` (5 by default in `notty poll`); none when not given.
    public init(entries: [String: Entry] = [:], stormLimit: Int = .max) {
        self.entries = entries
        self.stormLimit = stormLimit
    }

    /// The ids whose state the shell should report with `.moved` (after a store change, and at start).
    public var trackedIds: [String] { entries.keys.sorted() }

    public mutating func handle(_ event: Event) -> [Effect] {
        switch event {
        case .arrived(let notification, let view, let at):
            if view == .unread {
                if let storm = stormArrival(notification, at: at) { return storm }
                let replacing = entries[notification.id]?.popupId ?? 0
                entries[notification.id] = Entry(popupId: entries[notification.id]?.popupId, view: .unread)
                keys[notification.id] = StormKey(notification)
                return [.show(id: notification.id, PopupContent(notification), replacing: replacing)]
            }
            // Handled elsewhere before it arrived: no popup (and the one of an earlier version goes).
            return leave(notification.id, for: view)

        case .moved(let id, let notification, let view):
            guard let entry = entries[id] else { return [] }
            if view == .unread {
                // An ended snooze pops it up again.
                guard entry.popupId == nil, entry.view != .unread, let notification else { return [] }
                entries[id]?.view = .unread
                return [.show(id: id, PopupContent(notification), replacing: 0)]
            }
            return leave(id, for: view)

        case .shown(let id, let popupId):
            if let key = storms.keys.first(where: { $0.popupKey == id }) {
                storms[key]?.popupId = popupId
                for member in storms[key]?.ids ?? [] { entries[member]?.popupId = popupId }
                return []
            }
            if id.hasPrefix("storm:") { return [.close(popupId: popupId)] }  // its storm ended while the daemon answered
            guard entries[id] != nil else { return [.close(popupId: popupId)] }  // handled while the daemon answered
            if isInStorm(id) { return [.close(popupId: popupId)] }  // folded into a storm while the daemon answered
            entries[id]?.popupId = popupId
            return []

        case .closed(let popupId, let reason):
            // A storm's popup stands for all its notifications: closing it dismisses them all.
            let ids = ids(of: popupId)
            guard !ids.isEmpty else { return [] }
            forget(ids, popupId: popupId)
            return reason == 2 ? ids.map { .dismiss(id: $0) } : []

        case .action(let popupId, let key):
            let ids = ids(of: popupId)
            guard !ids.isEmpty else { return [] }
            let storm = ids.count > 1 || storms.values.contains { $0.popupId == popupId }
            // Forgotten first: the daemon then closes the popup (reason 2 on some), which must not dismiss it.
            forget(ids, popupId: popupId)
            // A storm's popup has one action: dismiss all it stands for.
            if storm { return ids.map { .dismiss(id: $0) } + [.close(popupId: popupId)] }
            switch key {
            case "default", "open": return ids.map { .activate(id: $0) } + [.close(popupId: popupId)]
            case "dismiss": return ids.map { .dismiss(id: $0) } + [.close(popupId: popupId)]
            case let key where key.hasPrefix(PopupContent.actionKeyPrefix):
                guard let number = Int(key.dropFirst(PopupContent.actionKeyPrefix.count)),
                    (1...NotificationAction.maxPerNotification).contains(number)
                else { return [] }
                return ids.map { .runAction(id: $0, number: number) } + [.close(popupId: popupId)]
            default: return []
            }
        }
    }

    // MARK: - Storms (PROTOCOL.md §9)

    /// A notification arriving in Unread during a storm of its app and group (more than
    /// ``stormLimit`` of its popups open, all come within ``stormWindow``): it joins the storm's
    /// one popup, updated in place with the count; the open popups fold into it. Nil: no storm,
    /// a popup of its own (a re-publish keeps its popup, replaced in place).
    private mutating func stormArrival(_ notification: UserNotification, at now: Date) -> [Effect]? {
        let key = StormKey(notification)
        let inStorm = storms[key]?.ids.contains(notification.id) ?? false
        if !inStorm, entries[notification.id]?.popupId != nil { return nil }  // a re-publish: its own popup, in place
        let times = (recent[key] ?? []).filter { now.timeIntervalSince($0) < Self.stormWindow } + [now]
        recent[key] = times
        var effects: [Effect] = []
        if storms[key] == nil {
            // Open, or asked for and not answered yet.
            let open = keys.filter { $0.value == key && entries[$0.key]?.view == .unread }.count
            guard times.count > stormLimit, open + 1 > stormLimit else { return nil }
            // The storm begins: the popups of its app and group so far fold into its popup.
            var storm = Storm(popupId: nil, ids: [], latestTitle: notification.displayTitle)
            for (id, entryKey) in keys where entryKey == key {
                if let popupId = entries[id]?.popupId { effects.append(.close(popupId: popupId)) }
                storm.ids.append(id)
                entries[id] = Entry(popupId: nil, view: .unread)
            }
            storm.ids.sort()
            storms[key] = storm
        }
        if !(storms[key]?.ids.contains(notification.id) ?? false) { storms[key]?.ids.append(notification.id) }
        storms[key]?.latestTitle = notification.displayTitle
        keys[notification.id] = key
        entries[notification.id] = Entry(popupId: storms[key]?.popupId, view: .unread)
        return effects + [stormPopup(key)]
    }

    /// Whether `id` is one of a storm's: a popup of its own is not wanted (the storm's stands for it).
    public func isInStorm(_ id: String) -> Bool {
        keys[id].flatMap { storms[$0] }?.ids.contains(id) ?? false
    }

    /// Effects of several events as one: a popup asked for several times is asked for once,
    /// with its last content, and one that has folded into a storm meanwhile not at all.
    public func coalesced(_ effects: [Effect]) -> [Effect] {
        var lastShow: [String: Int] = [:]
        for (index, effect) in effects.enumerated() {
            if case .show(let id, _, _) = effect { lastShow[id] = index }
        }
        return effects.enumerated().compactMap { index, effect in
            guard case .show(let id, _, _) = effect else { return effect }
            guard lastShow[id] == index, id.hasPrefix("storm:") || !isInStorm(id) else { return nil }
            return effect
        }
    }

    /// `Notify` for a storm's popup: "<group or app> ×N", the latest title as its body.
    private func stormPopup(_ key: StormKey) -> Effect {
        let storm = storms[key]!
        var content = PopupContent(summary: "\(key.group ?? key.app) ×\(storm.ids.count)", body: PopupContent.escapingMarkup(storm.latestTitle))
        content.actions = [("default", "Dismiss all"), ("dismiss", "Dismiss all")]
        return .show(id: key.popupKey, content, replacing: storm.popupId ?? 0)
    }

    /// Forgets the notifications of a popup that closed.
    private mutating func forget(_ ids: [String], popupId: UInt32) {
        for id in ids {
            entries[id] = nil
            keys[id] = nil
        }
        for (key, storm) in storms where storm.popupId == popupId { storms[key] = nil }
    }

    /// The notification left Unread (or was never there): close its popup; keep tracking a
    /// snoozed one so that it pops up again when the snooze ends.
    private mutating func leave(_ id: String, for view: NotificationView?) -> [Effect] {
        guard let entry = entries[id] else { return [] }
        // One of a storm: its popup counts one fewer, and goes with the last.
        if let key = keys[id], var storm = storms[key], storm.ids.contains(id) {
            storm.ids.removeAll { $0 == id }
            entries[id] = nil
            keys[id] = nil
            if storm.ids.isEmpty {
                storms[key] = nil
                return storm.popupId.map { [.close(popupId: $0)] } ?? []
            }
            storms[key] = storm
            return [stormPopup(key)]
        }
        keys[id] = nil
        if view == .snoozed {
            entries[id] = Entry(popupId: nil, view: .snoozed)
        } else {
            entries[id] = nil
        }
        return entry.popupId.map { [.close(popupId: $0)] } ?? []
    }

    /// The notifications a popup stands for (one, or a storm's).
    private func ids(of popupId: UInt32) -> [String] {
        entries.filter { $0.value.popupId == popupId }.map(\.key).sorted()
    }
}
