import Foundation
import NottyCore

/// Everything the terminal notification center shows and remembers. Changed only by `update`,
/// drawn only by `render`.
public struct TUIState: Sendable, Equatable {
    // MARK: - Terminal and clock

    /// The terminal size; `render` fills exactly this.
    public internal(set) var size: Size
    /// The current time: ages, "synced … ago" and snooze times are computed from it.
    public internal(set) var now: Date
    /// The zone for clock times and "tomorrow 9:00".
    public var timeZone: TimeZone
    /// `false` when `NO_COLOR` is set: render then sets no colour at all.
    public var useColor: Bool

    // MARK: - What the user asked to see

    /// The current view (tab).
    public internal(set) var view: NotificationView
    /// The applied search text; `""` for none (on a saved view's tab, its search).
    public internal(set) var query = ""
    /// The saved views (PROTOCOL.md §17), tabs after All with their counts, as the shell read them.
    public internal(set) var savedViews: [SavedViewTab] = []
    /// The saved view whose tab is current (the view is All and `query` its search); nil on
    /// one of the six.
    public internal(set) var savedTab: Int?

    // MARK: - What the shell loaded

    /// The loaded rows; shown only while they belong to `view` and `query`.
    public internal(set) var window: ViewWindow
    /// Every view's count, for the tab bar.
    public internal(set) var counts = ViewCounts()
    /// The absolute index of the selected row in the view.
    public internal(set) var selection = 0
    /// The notification under the selection; `nil` while its row is not loaded.
    public internal(set) var selectedId: String?
    /// The absolute index of the first row on screen.
    public internal(set) var top = 0
    /// Rows marked with Space, by id, as last seen (marked rows may scroll out of the window);
    /// `a d r s x` act on them.
    public internal(set) var markedRows: [String: UserNotification] = [:]
    /// The ids of the marked rows.
    public var marked: Set<String> { Set(markedRows.keys) }
    /// Whether a reload was asked for and not yet answered.
    public internal(set) var awaitingLoad = false

    // MARK: - Group rows (`=`)

    /// Whether the list folds into group rows (`=`). An open group (Enter) is the search
    /// `groupkey:KEY` (``GroupQuery``), whose rows are notifications again.
    public internal(set) var grouping = false
    /// The loaded group rows; shown only while they belong to `view` and `query`.
    public internal(set) var groupWindow: GroupWindow?
    /// The group under the selection, kept across loads and while a group is open.
    public internal(set) var selectedGroupKey: String?

    // MARK: - Overlays, prompts and messages

    /// The open detail (page or pane, see `Layout`).
    public internal(set) var detail: DetailState?
    /// The help overlay, when open.
    public internal(set) var help: HelpState?
    /// The question or input line at the bottom, when one is open.
    public internal(set) var prompt: Prompt?
    /// A one-line message at the bottom; cleared by the next key.
    public internal(set) var message: String?
    /// The sync engine's state for the status line; `nil` until the shell reports it.
    public internal(set) var status: SyncStatus?
    /// What `u` undoes.
    public internal(set) var lastAction: UndoEntry?

    /// A fresh state showing `view` (the settings' `view`, Unread by default); send
    /// `.storeChanged` to load it.
    public init(size: Size, now: Date, timeZone: TimeZone = .current, useColor: Bool = true, view: NotificationView = .unread) {
        self.size = size
        self.now = now
        self.timeZone = timeZone
        self.useColor = useColor
        self.view = view
        window = .empty(view)
    }
}

// MARK: - Parts of the state

/// A saved view's tab: its name, its search and how many it holds (nil until counted).
public struct SavedViewTab: Sendable, Equatable {
    public var name: String
    public var query: String
    public var count: Int?

    public init(name: String, query: String, count: Int?) {
        self.name = name
        self.query = query
        self.count = count
    }
}

/// Every group row of a view (matching a search): there are few, so all are loaded.
public struct GroupWindow: Sendable, Equatable {
    public var view: NotificationView
    public var query: String
    public var groups: [NotificationGroup]

    public init(view: NotificationView, query: String, groups: [NotificationGroup]) {
        self.view = view
        self.query = query
        self.groups = groups
    }
}

/// What `a`, `d` and `r` do to every notification of a group row.
public enum GroupAction: Sendable, Equatable {
    case activate, dismiss, toggleRead
}

/// The notification shown in the detail page or pane. It is a copy: it stays on screen when
/// the notification leaves the view (for example after Enter marked it read in Unread).
public struct DetailState: Sendable, Equatable {
    public var notification: UserNotification
    /// The first content line shown (full page only).
    public var scroll = 0
    /// Re-point the pane to the selected row at the next load (after acting on the shown one).
    public var followSelection = false

    public init(notification: UserNotification) {
        self.notification = notification
    }
}

/// The help overlay.
public struct HelpState: Sendable, Equatable {
    /// The first line shown when the help does not fit the terminal.
    public var scroll = 0
    public init() {}
}

/// A question or input line at the bottom of the screen.
public enum Prompt: Sendable, Equatable {
    /// `s`: how long to snooze these notifications.
    case snooze([UserNotification])
    /// `x`: delete these notifications? y/n
    case confirmDelete([UserNotification])
    /// `M`: mark every notification of the view (matching the query) read? y/n
    case confirmMarkAllRead(view: NotificationView, query: String, count: Int)
    /// `/`: the search text being typed.
    case search(String)
    /// `!`: which of this notification's actions to run (PROTOCOL.md §12).
    case action(UserNotification)
}

/// What `u` can undo: the state each affected notification had before the last action.
public enum UndoEntry: Sendable, Equatable {
    /// Restore these fields (only the ones the action changed).
    case restore(label: String, changes: [IdChange])
    /// The last action cannot be undone; the text says why.
    case impossible(reason: String)
}

/// The snooze choices of the `s` prompt, keys 1 to 4.
public enum SnoozeChoice: Int, CaseIterable, Sendable {
    case fifteenMinutes = 1
    case oneHour, fourHours, tomorrowMorning

    /// The label in the prompt.
    public var label: String {
        switch self {
        case .fifteenMinutes: "15m"
        case .oneHour: "1h"
        case .fourHours: "4h"
        case .tomorrowMorning: "tomorrow 9:00"
        }
    }

    /// When the snooze ends, from `now`; "tomorrow 9:00" is in `timeZone`.
    public func until(now: Date, timeZone: TimeZone) -> Date {
        switch self {
        case .fifteenMinutes: return now.addingTimeInterval(15 * 60)
        case .oneHour: return now.addingTimeInterval(3600)
        case .fourHours: return now.addingTimeInterval(4 * 3600)
        case .tomorrowMorning:
            var calendar = Calendar(identifier: .gregorian)
            calendar.timeZone = timeZone
            let today = calendar.startOfDay(for: now)
            let tomorrow = calendar.date(byAdding: .day, value: 1, to: today) ?? today.addingTimeInterval(86_400)
            return calendar.date(bySettingHour: 9, minute: 0, second: 0, of: tomorrow) ?? tomorrow.addingTimeInterval(9 * 3600)
        }
    }
}
