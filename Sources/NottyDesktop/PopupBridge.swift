import Foundation
import NottyCore

/// What one desktop popup shows: the arguments of freedesktop `Notify`.
public struct PopupContent: Sendable, Equatable {
    public enum Urgency: UInt8, Sendable { case low = 0, normal = 1, critical = 2 }

    public var appName = "notty"
    public var summary: String
    /// The body with markup escaped (`&`, `<`, `>`): daemons read a small HTML subset.
    public var body: String
    /// Action keys and labels; `default` is a click on the popup itself.
    public var actions: [(key: String, label: String)]
    public var urgency: Urgency
    /// Milliseconds; -1 lets the daemon decide.
    public var expireTimeout: Int32 = -1

    /// The popup of a notification: summary = title, body = body, urgency Low for `Low`
    /// priority and normal otherwise, a click (`default`) activates (and opens the link),
    /// "Open" when there is a link, "Dismiss" dismisses.
    public init(_ notification: UserNotification) {
        summary = notification.displayTitle
        body = Self.escapingMarkup(notification.payload.visualContent?.body ?? "")
        urgency = notification.priority == .low ? .low : .normal
        // A click (default) activates, and opens the link when there is one; "Open" says so.
        actions = notification.launchUrl == nil ? [("default", "Activate"), ("dismiss", "Dismiss")]
            : [("default", "Open"), ("open", "Open"), ("dismiss", "Dismiss")]
    }

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

/// Keeps a device's desktop popups true to the universal state (SPEC §7.4), as a pure state
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
        /// A notification arrived, or was re-published, in `view` (nil: deleted or expired).
        case arrived(UserNotification, view: NotificationView?)
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
    }

    public private(set) var entries: [String: Entry]

    public init(entries: [String: Entry] = [:]) {
        self.entries = entries
    }

    /// The ids whose state the shell should report with `.moved` (after a store change, and at start).
    public var trackedIds: [String] { entries.keys.sorted() }

    public mutating func handle(_ event: Event) -> [Effect] {
        switch event {
        case .arrived(let notification, let view):
            if view == .unread {
                let replacing = entries[notification.id]?.popupId ?? 0
                entries[notification.id] = Entry(popupId: entries[notification.id]?.popupId, view: .unread)
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
            guard entries[id] != nil else { return [.close(popupId: popupId)] }  // handled while the daemon answered
            entries[id]?.popupId = popupId
            return []

        case .closed(let popupId, let reason):
            guard let id = id(of: popupId) else { return [] }
            entries[id] = nil
            return reason == 2 ? [.dismiss(id: id)] : []

        case .action(let popupId, let key):
            guard let id = id(of: popupId) else { return [] }
            // Forgotten first: the daemon then closes the popup (reason 2 on some), which must not dismiss it.
            entries[id] = nil
            switch key {
            case "default", "open": return [.activate(id: id), .close(popupId: popupId)]
            case "dismiss": return [.dismiss(id: id), .close(popupId: popupId)]
            default: return []
            }
        }
    }

    /// The notification left Unread (or was never there): close its popup; keep tracking a
    /// snoozed one so that it pops up again when the snooze ends.
    private mutating func leave(_ id: String, for view: NotificationView?) -> [Effect] {
        guard let entry = entries[id] else { return [] }
        if view == .snoozed {
            entries[id] = Entry(popupId: nil, view: .snoozed)
        } else {
            entries[id] = nil
        }
        return entry.popupId.map { [.close(popupId: $0)] } ?? []
    }

    private func id(of popupId: UInt32) -> String? {
        entries.first { $0.value.popupId == popupId }?.key
    }
}
