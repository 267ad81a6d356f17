import Foundation
import NottyCore

/// Everything that can happen to the UI. The shell merges key presses, store changes, ticks
/// and sync status into one stream of these and feeds each to `update`.
public enum TUIEvent: Sendable, Equatable {
    /// A key press.
    case key(Key)
    /// The terminal has a new size.
    case resize(Size)
    /// The clock moved on (about once a second): ages and "synced … ago" are redrawn, and rows
    /// whose snooze ended or that expired are reloaded.
    case tick(Date)
    /// The shell's answer to `TUIEffect.load`: the window, every view's count, and the absolute
    /// index of the anchored row (or of the row at the requested index, clamped).
    case loaded(ViewWindow, counts: ViewCounts, selection: Int)
    /// The saved views and their counts (read again when the store changes).
    case savedViews([SavedViewTab])
    /// Something in the store changed (this process, another notty process, the sync engine).
    /// Also the first event to send: it makes the UI load its view.
    case storeChanged
    /// The sync engine's state, for the status line.
    case status(SyncStatus)
    /// A line for the message row ("synced", an error).
    case message(String)
    /// The shell's answer to `TUIEffect.findUnread`: like `.loaded`, but the selection moves to
    /// `selection` (the unread row found) instead of staying on the selected notification.
    case jumped(ViewWindow, counts: ViewCounts, selection: Int)
    /// The shell marked these notifications read for `TUIEffect.markAllRead` (the ones that
    /// were Unread): `u` marks them unread again, as one step.
    case markedAllRead([String])
    /// The shell's answer to a load of group rows (`WindowRequest.groups`).
    case groupsLoaded(GroupWindow, counts: ViewCounts)
    /// The shell's answer to `TUIEffect.readGroup`: every notification of the group, in view
    /// order, for the action to act on as one step.
    case groupRead(GroupAction, [UserNotification])
}

/// I/O the shell performs for the UI. After writing a change to the store, the shell sends
/// `.storeChanged`; the UI never changes rows itself.
public enum TUIEffect: Sendable, Equatable {
    /// Load a window of a view and answer with `TUIEvent.loaded`.
    case load(WindowRequest)
    /// Write state changes (each one also goes to the outbox).
    case mutate([IdChange])
    /// Delete notifications (final; synced like any change).
    case delete([String])
    /// Mark every notification of the view that matches the query read; answer with
    /// `TUIEvent.markedAllRead`.
    case markAllRead(view: NotificationView, query: String)
    /// Find the next (`forward`, older) or previous Unread row of the request's view and query
    /// after the request's anchor, in the whole view; answer with `TUIEvent.jumped` around it,
    /// or with a `.message` when there is none.
    case findUnread(WindowRequest, forward: Bool)
    /// Read every notification of the view matching the query (one group, `group:KEY`) and
    /// answer with `TUIEvent.groupRead`.
    case readGroup(view: NotificationView, query: String, action: GroupAction)
    /// Open a notification's link (`$BROWSER`, else `xdg-open`); a problem comes back as `.message`.
    case open(url: String)
    /// Ask the service to run action `number` (from 1) of a notification (PROTOCOL.md §12); how it
    /// went comes back as a `.message`, and on the notification with the next sync.
    case runAction(id: String, number: Int, label: String)
    /// Sync now (pull, then flush the outbox); report with `.status` / `.message`.
    case sync
    /// Make the user quiet until then on every device (PROTOCOL.md §9), or end quiet (nil).
    case setQuiet(until: Date?)
    /// Leave the program.
    case quit
}

/// One notification's state change.
public struct IdChange: Sendable, Equatable {
    public var id: String
    public var change: StateChange

    public init(id: String, change: StateChange) {
        self.id = id
        self.change = change
    }
}
