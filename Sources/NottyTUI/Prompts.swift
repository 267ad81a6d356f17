import Foundation
import NottyCore

// MARK: - Actions that ask first

extension TUIState {
    /// `s`: ask how long to snooze.
    mutating func askSnooze() -> [TUIEffect] {
        let targets = keyTargets
        guard !targets.isEmpty else { return showMessage(nothingToActOn) }
        prompt = .snooze(targets)
        return []
    }

    /// `x`: ask before deleting.
    mutating func askDelete() -> [TUIEffect] {
        let targets = keyTargets
        guard !targets.isEmpty else { return showMessage(nothingToActOn) }
        prompt = .confirmDelete(targets)
        return []
    }

    /// `!`: ask which action to run (the notification in the detail, else the selected one).
    mutating func askAction() -> [TUIEffect] {
        guard let target = detail?.notification ?? selectedRow else { return showMessage(nothingToActOn) }
        guard let actions = target.actions, !actions.isEmpty else { return showMessage("No actions on this notification") }
        prompt = .action(target)
        return []
    }

    /// A digit after `!`: a view action opens its link and activates, as `o`; an http action
    /// is run by the service.
    private mutating func runAction(_ number: Int, of target: UserNotification) -> [TUIEffect] {
        guard let actions = target.actions, actions.indices.contains(number - 1) else { return showMessage("No action \(number)") }
        let action = actions[number - 1]
        if action.kind == .view, let url = action.url {
            let effects = perform("Opened \(action.label) of", undoLabel: "activate", on: [target], fields: [.read, .action], leavesView: true) { _ in
                StateChange.activate
            }
            return effects + [.open(url: url)]
        }
        message = "\(action.label): running…"
        return [.runAction(id: target.id, number: number, label: action.label)]
    }

    /// `M`: ask before marking the whole view read.
    mutating func askMarkAllRead() -> [TUIEffect] {
        guard total > 0 else { return showMessage(nothingToActOn) }
        guard window.counted else { return showMessage("Still counting the matches; press M again in a moment") }
        prompt = .confirmMarkAllRead(view: view, query: query, count: total)
        return []
    }

    /// The answer to a prompt.
    mutating func handlePromptKey(_ key: Key) -> [TUIEffect] {
        guard let open = prompt else { return [] }
        if case .search(let text) = open { return handleSearchKey(key, text: text) }
        prompt = nil
        switch (open, key) {
        case (.snooze(let targets), .character(let c)):
            guard let digit = Int(String(c)), let choice = SnoozeChoice(rawValue: digit) else { break }
            let until = choice.until(now: now, timeZone: timeZone)
            return perform(
                "Snoozed", undoLabel: "snooze", on: targets, fields: .action, leavesView: true,
                suffix: " until \(TimeText.clock(until, in: timeZone, now: now))"
            ) { _ in
                StateChange(userActionState: .snoozed, snoozedUntil: until)
            }
        case (.confirmDelete(let targets), .character("y")):
            let ids = targets.map(\.id)
            clearMarks()
            if let shown = detail, ids.contains(shown.notification.id) {
                if layout.isPage { detail = nil } else { detail?.followSelection = true }
            }
            lastAction = .impossible(reason: "Delete is final: it cannot be undone")
            message = "Deleted \(Self.count(ids.count))"
            return [.delete(ids)]
        case (.action(let target), .character(let c)) where c.isASCII && c.isNumber:
            return runAction(Int(String(c)) ?? 0, of: target)
        case (.confirmMarkAllRead(let view, let query, let count), .character("y")):
            lastAction = nil  // the shell answers with the ids it changed (.markedAllRead)
            message = "Marked \(Self.count(count)) read"
            return [.markAllRead(view: view, query: query)]
        default:
            break
        }
        switch open {
        case .snooze: return showMessage("Not snoozed")
        case .confirmDelete: return showMessage("Not deleted")
        case .action: return showMessage("No action run")
        default: return showMessage("Nothing changed")
        }
    }

    /// Typing in the search line: Enter applies, Esc cancels and clears the search.
    private mutating func handleSearchKey(_ key: Key, text: String) -> [TUIEffect] {
        switch key {
        case .character(let c):
            prompt = .search(text + String(c))
        case .backspace, .delete:
            prompt = .search(String(text.dropLast()))
        case .control("u"):
            prompt = .search("")
        case .enter:
            let text = text.trimmingCharacters(in: .whitespaces)
            // A search the query language cannot read stays open, saying what to write.
            if GroupQuery.key(in: text) == nil {
                do throws(ValidationError) {
                    _ = try SearchQuery.parse(text)
                } catch {
                    message = "search: " + error.message
                    return []
                }
            }
            prompt = nil
            return applyQuery(text)
        case .escape:
            prompt = nil
            return query.isEmpty ? [] : applyQuery("")
        default:
            break
        }
        return []
    }
}
