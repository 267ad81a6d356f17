import Foundation
import NottyCore

// MARK: - What a state key (a d r s x) acts on

extension TUIState {
    /// What `a d r s x` act on: the marked rows (in view order), else the notification in the
    /// open detail, else the selected row.
    public var keyTargets: [UserNotification] {
        if !markedRows.isEmpty {
            let loaded = isWindowCurrent ? window.rows.filter { markedRows[$0.id] != nil } : []
            let loadedIds = Set(loaded.map(\.id))
            return loaded + markedRows.keys.filter { !loadedIds.contains($0) }.sorted().compactMap { markedRows[$0] }
        }
        if let shown = detail { return [shown.notification] }
        return selectedRow.map { [$0] } ?? []
    }

    /// The message when there is nothing to act on.
    var nothingToActOn: String {
        total == 0 ? "Nothing here to act on" : "Still loading…"
    }
}

// MARK: - Single-key actions

extension TUIState {
    /// Enter: open the detail of the selected row and mark it Read.
    mutating func openDetail() -> [TUIEffect] {
        guard let row = selectedRow else { return showMessage(nothingToActOn) }
        var shown = row
        shown.readState = .read
        detail = DetailState(notification: shown)
        scrollToSelection()
        guard row.readState == .unread else { return [] }
        lastAction = .restore(label: "mark read", changes: [IdChange(id: row.id, change: StateChange(readState: .unread))])
        return [.mutate([IdChange(id: row.id, change: StateChange(readState: .read))])]
    }

    /// `a`: Activated and Read (`targets`: a group's rows, else ``keyTargets``).
    mutating func activate(_ targets: [UserNotification]? = nil) -> [TUIEffect] {
        perform("Activated", undoLabel: "activate", on: targets, fields: [.read, .action], leavesView: true) { _ in
            StateChange.activate
        }
    }

    /// `o`: open the link and activate (Activated + Read). Without a link: says so, changes nothing.
    mutating func openLink() -> [TUIEffect] {
        guard let target = detail?.notification ?? selectedRow else { return showMessage(nothingToActOn) }
        guard let url = target.launchUrl else { return showMessage("No link to open") }
        let effects = perform("Opened the link of", undoLabel: "activate", on: [target], fields: [.read, .action], leavesView: true) { _ in
            StateChange.activate
        }
        return effects + [.open(url: url)]
    }

    /// `d`: Dismissed.
    mutating func dismiss(_ targets: [UserNotification]? = nil) -> [TUIEffect] {
        perform("Dismissed", undoLabel: "dismiss", on: targets, fields: .action, leavesView: true) { _ in
            StateChange(userActionState: .dismissed)
        }
    }

    /// `r`: Read when any target is Unread, else Unread.
    mutating func toggleRead(_ targets: [UserNotification]? = nil) -> [TUIEffect] {
        let toRead = (targets ?? keyTargets).contains { $0.readState == .unread }
        return perform(
            toRead ? "Marked read" : "Marked unread", undoLabel: toRead ? "mark read" : "mark unread",
            on: targets, fields: .read, leavesView: false
        ) { _ in
            StateChange(readState: toRead ? .read : .unread)
        }
    }

    /// `a`, `d`, `r` on a group row: the shell reads the group's rows (`groupRead`), then
    /// the action acts on all of them as one step that `u` undoes.
    mutating func actOnGroup(_ action: GroupAction) -> [TUIEffect] {
        guard let group = selectedGroup else { return showMessage(nothingToActOn) }
        return [.readGroup(view: view, query: GroupQuery.query(for: group.key), action: action)]
    }

    /// Applies a group action to the rows the shell read.
    mutating func perform(_ action: GroupAction, on rows: [UserNotification]) -> [TUIEffect] {
        switch action {
        case .activate: activate(rows)
        case .dismiss: dismiss(rows)
        case .toggleRead: toggleRead(rows)
        }
    }

    /// Space: mark or unmark the selected row, then move down.
    mutating func toggleMark() -> [TUIEffect] {
        guard let row = selectedRow else { return showMessage(nothingToActOn) }
        if markedRows.removeValue(forKey: row.id) == nil { markedRows[row.id] = row }
        return move(1)
    }

    /// `u`: restore what the last action changed, as a new change.
    mutating func undo() -> [TUIEffect] {
        switch lastAction {
        case nil:
            return showMessage("Nothing to undo")
        case .impossible(let reason):
            return showMessage(reason)
        case .restore(let label, let changes):
            lastAction = nil
            patchDetail(with: changes)
            message = "Undid \(label) of \(Self.count(changes.count))"
            return [.mutate(changes)]
        }
    }
}

// MARK: - Performing a state change

extension TUIState {
    /// The fields an action changes; undo restores exactly these.
    struct Fields: OptionSet {
        let rawValue: Int
        static let read = Fields(rawValue: 1)
        /// `userActionState` together with `snoozedUntil`.
        static let action = Fields(rawValue: 2)
    }

    /// Emits the change for every target, remembers how to undo it, clears the marks.
    mutating func perform(
        _ verb: String, undoLabel: String, on given: [UserNotification]? = nil, fields: Fields, leavesView: Bool,
        suffix: String = "", change: (UserNotification) -> StateChange
    ) -> [TUIEffect] {
        let targets = given ?? keyTargets
        guard !targets.isEmpty else { return showMessage(nothingToActOn) }
        let changes = targets.map { IdChange(id: $0.id, change: change($0)) }
        let restores = targets.map { row in
            IdChange(
                id: row.id,
                change: StateChange(
                    readState: fields.contains(.read) ? row.readState : nil,
                    userActionState: fields.contains(.action) ? row.userActionState : nil,
                    snoozedUntil: fields.contains(.action) ? row.snoozedUntil : nil))
        }
        lastAction = .restore(label: undoLabel, changes: restores)
        clearMarks()
        if let shown = detail, targets.contains(where: { $0.id == shown.notification.id }) {
            // A page closes when its notification leaves the view; a pane then moves on to the
            // selected row at the next load. Otherwise the detail shows the change at once.
            if layout.isPage, leavesView {
                detail = nil
            } else {
                patchDetail(with: changes)
                if leavesView { detail?.followSelection = true }
            }
        }
        message = "\(verb) \(Self.count(targets.count))\(suffix)"
        return [.mutate(changes)]
    }

    /// Shows a change on the detail's copy at once (the list waits for the store).
    private mutating func patchDetail(with changes: [IdChange]) {
        guard var shown = detail, let change = changes.first(where: { $0.id == shown.notification.id })?.change else { return }
        (shown.notification.readState, shown.notification.userActionState, shown.notification.snoozedUntil) =
            change.applied(to: (shown.notification.readState, shown.notification.userActionState, shown.notification.snoozedUntil))
        detail = shown
    }

    mutating func clearMarks() {
        markedRows = [:]
    }

    /// "1 notification", "3 notifications".
    static func count(_ n: Int) -> String {
        n == 1 ? "1 notification" : "\(n) notifications"
    }
}
