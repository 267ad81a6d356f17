import NottyCore

// MARK: - What is loaded

extension TUIState {
    /// Whether the window holds rows of the current view and query (after a view switch or a
    /// new search it does not, until the shell answers).
    /// Always false while group rows are shown.
    public var isWindowCurrent: Bool { !showingGroups && window.view == view && window.query == query }

    /// Whether the list shows group rows: folded (`=`) and no group open.
    public var showingGroups: Bool { grouping && GroupQuery.key(in: query) == nil }

    /// The group rows of the current view and query, once loaded (nil otherwise).
    public var currentGroups: [NotificationGroup]? {
        guard showingGroups, let groupWindow, groupWindow.view == view, groupWindow.query == query else { return nil }
        return groupWindow.groups
    }

    /// The number of rows in the current view (matching the query), or of group rows; 0
    /// until loaded.
    public var total: Int { showingGroups ? currentGroups?.count ?? 0 : isWindowCurrent ? window.total : 0 }

    /// The selected row, when it is loaded: among group rows, a group's lone notification
    /// (shown as itself), never a group of several.
    public var selectedRow: UserNotification? {
        if showingGroups { return selectedGroup?.lone }
        return isWindowCurrent ? window.row(at: selection) : nil
    }

    /// Whether the selection is a group row of several notifications (Enter opens it; `a d r`
    /// act on all of it); a group of one is its notification, and the keys act on that.
    var onGroupRow: Bool { showingGroups && selectedGroup.map { $0.lone == nil } ?? true }

    /// The selected group row, when group rows are shown.
    public var selectedGroup: NotificationGroup? {
        guard let groups = currentGroups, groups.indices.contains(selection) else { return nil }
        return groups[selection]
    }

    /// How many rows to ask the shell for around the selection: three screens (one above
    /// and one below the visible one, wherever the selection is on it).
    var span: Int { max(30, 3 * listHeight) }

    /// A request for the current view and query around the selection.
    func request(anchor: String?, index: Int? = nil) -> WindowRequest {
        if showingGroups { return WindowRequest(view: view, query: query, span: 0, groups: true) }
        return WindowRequest(view: view, query: query, anchorId: anchor, index: index ?? selection, span: span)
    }

    /// A request for the first rows of the current view and query: two screens (nothing
    /// lies above the first), or for a search one screen and a row (the row says whether
    /// there are more; the shell may have to step over many rows that do not match).
    var requestFromTop: WindowRequest {
        if showingGroups { return request(anchor: nil) }
        return WindowRequest(view: view, query: query, index: 0, span: query.isEmpty ? max(20, 2 * listHeight) : listHeight + 1)
    }
}

// MARK: - Moving the selection

extension TUIState {
    /// Moves the selection to an absolute index (clamped). Asks for rows when the selection or
    /// the rows on screen are not loaded.
    mutating func select(_ index: Int) -> [TUIEffect] {
        guard total > 0 else { return [] }
        selection = max(0, min(index, total - 1))
        if showingGroups {
            selectedGroupKey = selectedGroup?.key
            scrollToSelection()
            return []
        }
        selectedId = window.row(at: selection)?.id
        scrollToSelection()
        if layout.placement == .right || layout.placement == .bottom, let row = selectedRow {
            detail = DetailState(notification: row)
        }
        return ensureRowsLoaded()
    }

    /// Moves the selection by `delta` rows.
    mutating func move(_ delta: Int) -> [TUIEffect] {
        select(selection + delta)
    }

    /// One row down. When the pane still shows a notification that has left the list (Enter
    /// marked it read in Unread), the row that took its place is the next one.
    mutating func moveDown() -> [TUIEffect] {
        if let shown = detail, !layout.isPage, isWindowCurrent, window.index(of: shown.notification.id) == nil, selectedRow != nil {
            return select(selection)
        }
        return move(1)
    }

    /// Keeps the selection on screen and the screen within the list.
    mutating func scrollToSelection() {
        top = Self.scrolledTop(top: top, selection: selection, height: listHeight, total: total)
    }

    /// The first row to show so that `selection` is visible and no space is wasted at the end.
    static func scrolledTop(top: Int, selection: Int, height: Int, total: Int) -> Int {
        var top = top
        if selection < top { top = selection }
        if selection >= top + height { top = selection - height + 1 }
        return max(0, min(top, total - height))
    }

    /// A `.load` when the selected row or a row on screen is missing from the window.
    mutating func ensureRowsLoaded() -> [TUIEffect] {
        guard isWindowCurrent, total > 0 else { return [] }
        if window.row(at: selection) == nil {
            awaitingLoad = true
            return [.load(request(anchor: nil))]
        }
        let visible = top..<min(top + listHeight, total)
        if visible.clamped(to: window.range) != visible, !awaitingLoad {
            awaitingLoad = true
            return [.load(request(anchor: selectedId))]
        }
        return []
    }

    /// The next (or previous) Unread row: among the loaded ones when one is there, else the
    /// shell looks in the whole view (`findUnread`) and answers with the window around it.
    mutating func moveToUnread(forward: Bool) -> [TUIEffect] {
        guard total > 0 else { return showMessage("Nothing here") }
        if let groups = currentGroups {
            let order = forward ? Array(groups.indices.filter { $0 > selection }) : groups.indices.filter { $0 < selection }.reversed()
            guard let index = order.first(where: { groups[$0].unread > 0 }) else { return showMessage(Self.noUnread(forward: forward)) }
            return select(index)
        }
        let candidates =
            forward
            ? Array(window.rows.indices.map { $0 + window.offset }.filter { $0 > selection })
            : Array(window.rows.indices.map { $0 + window.offset }.filter { $0 < selection }.reversed())
        if let index = candidates.first(where: { window.row(at: $0)?.readState == .unread }) {
            return select(index)
        }
        let edge = forward ? window.counted && window.range.upperBound >= total : window.offset == 0
        guard !edge, let selectedId else { return showMessage(Self.noUnread(forward: forward)) }
        return [.findUnread(request(anchor: selectedId), forward: forward)]
    }

    /// What `n` and `p` say when the view has no Unread row past the selection.
    public static func noUnread(forward: Bool) -> String {
        "No unread \(forward ? "below" : "above")"
    }
}

// MARK: - Views and search

extension TUIState {
    /// Switches to a view (or reloads the current one) at its first row.
    mutating func switchView(to newView: NotificationView) -> [TUIEffect] {
        if savedTab != nil {
            // Leaving a saved view's tab leaves its search too.
            savedTab = nil
            query = ""
        }
        view = newView
        return reloadFromTop()
    }

    /// A saved view's tab (PROTOCOL.md §17): All, with its search.
    mutating func switchToSaved(_ index: Int) -> [TUIEffect] {
        savedTab = index
        view = .all
        query = savedViews[index].query
        return reloadFromTop()
    }

    /// `Tab`/`S-Tab`: the next or previous tab, the six views then the saved ones, wrapping.
    mutating func switchTab(by steps: Int) -> [TUIEffect] {
        let all = NotificationView.allCases
        let current = savedTab.map { all.count + $0 } ?? all.firstIndex(of: view)!
        let count = all.count + savedViews.count
        let next = ((current + steps) % count + count) % count
        return next < all.count ? switchView(to: all[next]) : switchToSaved(next - all.count)
    }

    /// The saved views the shell read: the current saved tab follows its view by name (a new
    /// search is loaded; a removed view leaves All).
    mutating func apply(savedViews tabs: [SavedViewTab]) -> [TUIEffect] {
        let current = savedTab.map { savedViews[$0] }
        savedViews = tabs
        guard let current else { return [] }
        guard let index = tabs.firstIndex(where: { $0.name == current.name }) else {
            savedTab = nil
            query = ""
            return reloadFromTop()
        }
        savedTab = index
        guard tabs[index].query != query else { return [] }
        query = tabs[index].query
        return reloadFromTop()
    }

    /// Applies search text (`""` clears the search) and reloads from the first row. A search
    /// that is not the saved view's own leaves its tab (All keeps the search).
    mutating func applyQuery(_ text: String) -> [TUIEffect] {
        if let saved = savedTab, savedViews[saved].query != text { savedTab = nil }
        query = text
        return reloadFromTop()
    }

    /// `=`: folds the list into group rows, or unfolds it (closing an open group). The
    /// selection goes to the group of the selected row, and back.
    mutating func toggleGrouping() -> [TUIEffect] {
        if grouping {
            grouping = false
            message = "Group rows off"
            return GroupQuery.key(in: query) == nil ? reloadFromTop() : applyQuery("")
        }
        grouping = true
        selectedGroupKey = selectedRow?.groupKey
        message = "Group rows: Enter opens a group · d r a act on all of it · = unfolds"
        return reloadFromTop()
    }

    /// Enter on a group row: shows its notifications (the search `group:KEY`); Esc goes back.
    mutating func openGroup() -> [TUIEffect] {
        guard let group = selectedGroup else { return showMessage(nothingToActOn) }
        selectedGroupKey = group.key
        return applyQuery(GroupQuery.query(for: group.key))
    }

    private mutating func reloadFromTop() -> [TUIEffect] {
        if showingGroups, let key = selectedGroupKey, let index = currentGroups?.firstIndex(where: { $0.key == key }) {
            selection = index  // kept while the answer comes
        } else {
            selection = 0
        }
        selectedId = nil
        top = 0
        clearMarks()
        detail = nil
        awaitingLoad = true
        return [.load(requestFromTop)]
    }

    /// Sets the message line and returns no effects (for one-line early exits).
    mutating func showMessage(_ text: String) -> [TUIEffect] {
        message = text
        return []
    }
}

// MARK: - Reading ahead

extension TUIState {
    /// The keys whose windows the shell loads ahead while the user is idle: the next and the
    /// previous view, the last and the first row, and Enter in the search line. The loads they
    /// cause are the slow part of their frames; moving and paging mostly stay within the window
    /// already held.
    public static let readAheadKeys: [Key] = [.tab, .backTab, .character("G"), .character("g"), .enter]

    /// The windows `readAheadKeys` would ask for from this state, found by running `update`
    /// on a copy (so they are exactly the requests those keys make). Searches are left out
    /// (their windows can take many times longer to find), except the one being typed, once
    /// it is long enough for the search index (three characters): Enter's, so that the first
    /// matches are ready when it is pressed.
    public var readAheadRequests: [WindowRequest] {
        var requests: [WindowRequest] = []
        let typed: String? = if case .search(let text)? = prompt { text.trimmingCharacters(in: .whitespaces) } else { nil }
        for key in Self.readAheadKeys {
            var copy = self
            for case .load(let request) in update(&copy, .key(key)) where !requests.contains(request) {
                if request.query.isEmpty || GroupQuery.key(in: request.query) != nil
                    || (key == .enter && request.query == typed && request.query.unicodeScalars.count >= 3)
                {
                    requests.append(request)
                }
            }
        }
        return requests
    }
}
