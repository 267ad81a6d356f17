import NottyCore

/// The rows of one view the UI currently holds: a slice of the view, never the whole of it.
/// The shell loads it from the store when the UI asks (`TUIEffect.load`).
public struct ViewWindow: Sendable, Equatable {
    /// The view the rows come from.
    public var view: NotificationView
    /// The search text the rows match; `""` for none.
    public var query: String
    /// How many rows of the view match the query (the length of the whole list); while
    /// `counted` is false, only how many are known so far (the list ends at the loaded rows).
    public var total: Int
    /// The absolute index of `rows[0]` in the view.
    public var offset: Int
    /// The loaded rows, in view order (newest first).
    public var rows: [UserNotification]
    /// Whether `total` is the whole list's length. A search with many matches is shown
    /// before they are counted; the shell loads the window again once they are.
    public var counted: Bool

    public init(view: NotificationView, query: String = "", total: Int, offset: Int = 0, rows: [UserNotification], counted: Bool = true) {
        self.view = view
        self.query = query
        self.total = total
        self.offset = offset
        self.rows = rows
        self.counted = counted
    }

    /// An empty window: nothing loaded yet.
    public static func empty(_ view: NotificationView, query: String = "") -> ViewWindow {
        ViewWindow(view: view, query: query, total: 0, rows: [])
    }

    /// The absolute indexes the rows cover.
    public var range: Range<Int> { offset..<(offset + rows.count) }

    /// The row at an absolute index, if it is loaded.
    public func row(at index: Int) -> UserNotification? {
        range.contains(index) ? rows[index - offset] : nil
    }

    /// The absolute index of a loaded notification.
    public func index(of id: String) -> Int? {
        rows.firstIndex(where: { $0.id == id }).map { $0 + offset }
    }

    /// Whether every row of the view is loaded.
    public var isComplete: Bool { counted && offset == 0 && rows.count == total }
}

/// What the UI asks the shell to load (`TUIEffect.load`).
public struct WindowRequest: Sendable, Hashable {
    public var view: NotificationView
    /// Search text; `""` for none. The store matches it against title, body, app and group.
    public var query: String
    /// Keep the selection on this notification when it is still in the view.
    public var anchorId: String?
    /// The wanted absolute selection index, used when `anchorId` is `nil` or has left the view
    /// (the selection then lands on the neighbour at the same index, clamped to the view).
    public var index: Int
    /// How many rows to load around the selection.
    public var span: Int
    /// Load the view's group rows (all of them) instead: answered with `TUIEvent.groupsLoaded`.
    public var groups: Bool

    public init(view: NotificationView, query: String = "", anchorId: String? = nil, index: Int = 0, span: Int, groups: Bool = false) {
        self.view = view
        self.query = query
        self.anchorId = anchorId
        self.index = index
        self.span = span
        self.groups = groups
    }

    /// The answer to this request given every row of the view that matches the query, in view
    /// order: the window around the selection and the absolute selection index. A shell that
    /// can list the whole view uses this directly; a paging store does the same with a query.
    public func answer(from matching: [UserNotification]) -> (window: ViewWindow, selection: Int) {
        let place = placement(total: matching.count, anchorIndex: anchorId.flatMap { id in matching.firstIndex(where: { $0.id == id }) })
        let rows = Array(matching[place.offset..<(place.offset + place.length)])
        return (ViewWindow(view: view, query: query, total: matching.count, offset: place.offset, rows: rows), place.selection)
    }

    /// Where the answer's window lies in a view of `total` rows: the selection (the anchor's
    /// index when it is still in the view, else `index`, clamped) and `length` rows around it
    /// starting at `offset`.
    public func placement(total: Int, anchorIndex: Int?) -> (selection: Int, offset: Int, length: Int) {
        let selection = max(0, min(anchorIndex ?? index, total - 1))
        let length = min(max(1, span), total)
        let offset = max(0, min(selection - length / 2, total - length))
        return (selection, offset, length)
    }
}
