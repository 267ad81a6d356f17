import Foundation
import NottyCore

/// The whole behaviour of the terminal notification center: applies one event to the state
/// and returns the I/O the shell must perform. Pure: no clock, no store, no terminal.
public func update(_ state: inout TUIState, _ event: TUIEvent) -> [TUIEffect] {
    switch event {
    case .key(let key):
        state.message = nil
        return state.handleKey(key)
    case .resize(let size):
        state.size = size
        state.scrollToSelection()
        return state.ensureRowsLoaded()
    case .tick(let now):
        state.now = now
        return state.reloadIfRowsLeftTheView()
    case .loaded(let window, let counts, let selection):
        state.counts = counts
        state.apply(window, selection: selection)
        return []
    case .savedViews(let tabs):
        return state.apply(savedViews: tabs)
    case .storeChanged:
        state.awaitingLoad = true
        return [.load(state.request(anchor: state.selectedId))]
    case .status(let status):
        state.status = status
        return []
    case .message(let text):
        state.message = text
        return []
    case .jumped(let window, let counts, let selection):
        state.counts = counts
        guard window.view == state.view, window.query == state.query, !state.showingGroups else { return [] }
        state.selectedId = nil
        state.apply(window, selection: selection)
        return []
    case .groupsLoaded(let groups, let counts):
        state.counts = counts
        state.apply(groups)
        return []
    case .groupRead(let action, let rows):
        return state.perform(action, on: rows)
    case .markedAllRead(let ids):
        state.lastAction =
            ids.isEmpty
            ? nil
            : .restore(
                label: "mark all read", changes: ids.map { IdChange(id: $0, change: StateChange(readState: .unread)) })
        return []
    }
}

// MARK: - Loads

extension TUIState {
    /// Takes the shell's answer. The selection stays on `selectedId` when it is in the new
    /// rows (even if the user moved after asking); otherwise it goes to the shell's index.
    mutating func apply(_ newWindow: ViewWindow, selection answered: Int) {
        // An answer for a view or search the user has already left.
        guard newWindow.view == view, newWindow.query == query, !showingGroups else { return }
        awaitingLoad = false
        window = newWindow
        var index = selectedId.flatMap { newWindow.index(of: $0) } ?? answered
        index = max(0, min(index, newWindow.total - 1))
        selection = index
        selectedId = newWindow.row(at: index)?.id
        scrollToSelection()
        refreshMarks()
        refreshDetail()
    }

    /// Forgets marks on rows that left the view (known only when the whole view is loaded)
    /// and refreshes the copies of marked rows.
    /// Takes the shell's group rows; the selection stays on its group while it is there.
    mutating func apply(_ groups: GroupWindow) {
        guard showingGroups, groups.view == view, groups.query == query else { return }
        awaitingLoad = false
        groupWindow = groups
        let index = selectedGroupKey.flatMap { key in groups.groups.firstIndex { $0.key == key } } ?? selection
        selection = max(0, min(index, groups.groups.count - 1))
        selectedGroupKey = groups.groups.indices.contains(selection) ? groups.groups[selection].key : nil
        scrollToSelection()
    }

    private mutating func refreshMarks() {
        if window.isComplete {
            let inView = Set(window.rows.map(\.id))
            markedRows = markedRows.filter { inView.contains($0.key) }
        }
        for row in window.rows where markedRows[row.id] != nil { markedRows[row.id] = row }
    }

    private mutating func refreshDetail() {
        guard var shown = detail else { return }
        if shown.followSelection {
            if let row = selectedRow { detail = DetailState(notification: row) }
            return
        }
        if let row = window.rows.first(where: { $0.id == shown.notification.id }) {
            shown.notification = row
            detail = shown
        }
    }

    /// On a tick: reload when a loaded row is no longer in the view (its snooze ended, it
    /// expired), so it disappears without a key press.
    mutating func reloadIfRowsLeftTheView() -> [TUIEffect] {
        guard isWindowCurrent, !awaitingLoad else { return [] }
        guard window.rows.contains(where: { !view.contains($0, now: now) }) else { return [] }
        awaitingLoad = true
        return [.load(request(anchor: selectedId))]
    }
}

// MARK: - Keys

extension TUIState {
    /// Routes a key to the help, the prompt, the full-page detail or the list, in that order.
    mutating func handleKey(_ key: Key) -> [TUIEffect] {
        if key == .control("c") { return [.quit] }
        if help != nil { return handleHelpKey(key) }
        if prompt != nil { return handlePromptKey(key) }
        if detail != nil, layout.isPage { return handleDetailPageKey(key) }
        return handleListKey(key)
    }

    /// The list (with or without a detail pane).
    mutating func handleListKey(_ key: Key) -> [TUIEffect] {
        switch key {
        case .character("j"), .down: return moveDown()
        case .character("k"), .up: return move(-1)
        case .character("g"), .home: return select(0)
        case .character("G"), .end: return select(total - 1)
        case .pageDown, .control("f"): return move(listHeight)
        case .pageUp, .control("b"): return move(-listHeight)
        case .tab: return switchTab(by: 1)
        case .backTab: return switchTab(by: -1)
        case .character(let c) where ("1"..."6").contains(c):
            return switchView(to: NotificationView.allCases[Int(String(c))! - 1])
        case .character(let c) where ("7"..."9").contains(c):
            let index = Int(String(c))! - 7
            guard index < savedViews.count else { return showMessage("No saved view \(c): notty view add NAME 'QUERY' makes one") }
            return switchToSaved(index)
        case .character("="): return toggleGrouping()
        case .enter where onGroupRow: return openGroup()
        case .character("a") where onGroupRow: return actOnGroup(.activate)
        case .character("d") where onGroupRow: return actOnGroup(.dismiss)
        case .character("r") where onGroupRow: return actOnGroup(.toggleRead)
        case .character(let c) where onGroupRow && "osx !".contains(c):
            return showMessage("On a group row: Enter opens it, d r a act on all of it")
        case .enter: return openDetail()
        case .character("a"): return activate()
        case .character("o"): return openLink()
        case .character("!"): return askAction()
        case .character("d"): return dismiss()
        case .character("r"): return toggleRead()
        case .character("s"): return askSnooze()
        case .character("x"): return askDelete()
        case .character(" "): return toggleMark()
        case .character("M"): return askMarkAllRead()
        case .character("u"): return undo()
        case .character("n"): return moveToUnread(forward: true)
        case .character("p"): return moveToUnread(forward: false)
        case .character("/"):
            prompt = .search(query)
            return []
        case .character("R"):
            message = "syncing…"
            return [.sync]
        case .character("Q"):
            if status?.isQuiet(at: now) == true {
                message = "quiet is off on every device"
                return [.setQuiet(until: nil)]
            }
            message = "quiet for an hour on every device"
            return [.setQuiet(until: now.addingTimeInterval(3600))]
        case .character("?"):
            help = HelpState()
            return []
        case .escape: return backOut()
        case .character("q"):
            if detail != nil {
                detail = nil
                return []
            }
            return [.quit]
        default: return []
        }
    }

    /// Esc in the list: close the pane, else clear the search, else clear the marks.
    private mutating func backOut() -> [TUIEffect] {
        if detail != nil {
            detail = nil
            scrollToSelection()
            return []
        }
        if !query.isEmpty { return applyQuery("") }
        if !markedRows.isEmpty {
            clearMarks()
            return showMessage("Marks cleared")
        }
        return []
    }

    /// The view `steps` tabs away, wrapping around.
    static func view(after view: NotificationView, by steps: Int) -> NotificationView {
        let all = NotificationView.allCases
        let index = all.firstIndex(of: view)!
        return all[((index + steps) % all.count + all.count) % all.count]
    }

    /// The full-page detail: scroll keys scroll, Esc/q/Enter close, actions act on the
    /// notification shown; any other key closes the page and works as in the list.
    mutating func handleDetailPageKey(_ key: Key) -> [TUIEffect] {
        switch key {
        case .escape, .character("q"), .enter:
            detail = nil
            return []
        case .character("j"), .down: scrollDetail(by: 1)
        case .character("k"), .up: scrollDetail(by: -1)
        case .pageDown, .control("f"), .character(" "): scrollDetail(by: max(1, layout.body.height - 1))
        case .pageUp, .control("b"): scrollDetail(by: -max(1, layout.body.height - 1))
        case .character("g"), .home: scrollDetail(by: -Int.max / 2)
        case .character("G"), .end: scrollDetail(by: Int.max / 2)
        case .character("a"), .character("d"), .character("r"), .character("s"), .character("x"), .character("o"),
            .character("!"), .character("u"), .character("R"), .character("?"):
            return handleListKey(key)
        default:
            detail = nil
            return handleListKey(key)
        }
        return []
    }

    private mutating func scrollDetail(by delta: Int) {
        guard var shown = detail, let rect = layout.detail else { return }
        let lines = DetailText.lines(for: shown.notification, width: rect.width - 2, state: self).count
        let maxScroll = max(0, lines - rect.height)
        let wanted = delta > 0 ? min(shown.scroll, Int.max - delta) + delta : shown.scroll + delta
        shown.scroll = max(0, min(wanted, maxScroll))
        detail = shown
    }

    /// Help: scroll keys scroll when it does not fit; any other key closes it.
    mutating func handleHelpKey(_ key: Key) -> [TUIEffect] {
        let overflow = max(0, HelpText.lines(width: size.columns).count - layout.body.height)
        guard var shown = help else { return [] }
        switch key {
        case .character("j") where overflow > 0, .down where overflow > 0:
            shown.scroll = min(shown.scroll + 1, overflow)
        case .character("k") where overflow > 0, .up where overflow > 0:
            shown.scroll = max(shown.scroll - 1, 0)
        default:
            help = nil
            return []
        }
        help = shown
        return []
    }
}
