import Foundation
import NottyCore

/// The last row: the open prompt, else the message, else a hint.
enum BottomLine {
    static func draw(into screen: inout Screen, state: TUIState, row: Int) {
        let width = state.size.columns
        let ask = CellStyle(bold: true, color: .accent)
        if let prompt = state.prompt {
            switch prompt {
            case .search(let text):
                let room = width - 2
                var shown = text
                while DisplayWidth.width(of: shown) > room { shown.removeFirst() }
                let end = screen.put([Span("/", ask), Span(shown)], column: 0, row: row)
                // A refusal (Enter on a search that cannot be read) after the text.
                if let message = state.message, end + 3 < width {
                    screen.put(DisplayWidth.truncate(message, to: width - end - 2), column: end + 2, row: row, style: CellStyle(dim: true))
                }
                screen.cursor = (column: min(end, width - 1), row: row)
            default:
                let texts = promptTexts(prompt, state: state)
                let text = texts.first(where: { DisplayWidth.width(of: $0) <= width }) ?? texts.last!
                screen.put(DisplayWidth.truncate(text, to: width), column: 0, row: row, style: ask)
            }
            return
        }
        if let message = state.message {
            screen.put(DisplayWidth.truncate(message, to: width), column: 0, row: row)
            return
        }
        let hints = hints(state)
        let hint = hints.first(where: { DisplayWidth.width(of: $0) <= width }) ?? hints.last!
        screen.put(DisplayWidth.truncate(hint, to: width), column: 0, row: row, style: CellStyle(dim: true))
    }

    /// The prompt's text, longest first; the first that fits is shown.
    static func promptTexts(_ prompt: Prompt, state: TUIState) -> [String] {
        switch prompt {
        case .snooze(let targets):
            let choices = SnoozeChoice.allCases
            return [
                "Snooze \(TUIState.count(targets.count)) for " + choices.map { "\($0.rawValue)) \($0.label)" }.joined(separator: "  ")
                    + "  Esc) cancel",
                "Snooze: " + choices.map { "\($0.rawValue)) \($0.label)" }.joined(separator: " "),
                "Snooze: " + choices.map { "\($0.rawValue))\($0.label)" }.joined(separator: " "),
            ]
        case .confirmDelete(let targets):
            return ["Delete \(TUIState.count(targets.count))? y/n", "Delete \(targets.count)? y/n"]
        case .confirmMarkAllRead(let view, let query, let count):
            let matching = query.isEmpty ? "" : " matching “\(query)”"
            return ["Mark all \(TUIState.count(count))\(matching) in \(view.title) read? y/n", "Mark \(count) read? y/n"]
        case .search(let text):
            return ["/" + text]
        case .action(let target):
            let actions = (target.actions ?? []).enumerated()
            return [
                "Run: " + actions.map { "\($0.offset + 1)) \($0.element.label)" }.joined(separator: "  ") + "  Esc) cancel",
                "Run: " + actions.map { "\($0.offset + 1)) \($0.element.label)" }.joined(separator: " "),
                "Run: " + actions.map { "\($0.offset + 1))" }.joined(separator: " "),
            ]
        }
    }

    /// A hint for the current mode, longest first; the first that fits is shown.
    static func hints(_ state: TUIState) -> [String] {
        if state.help != nil {
            let fits = HelpText.lines(width: state.size.columns).count <= state.layout.body.height
            return fits ? ["Press any key to close the help"] : ["j k scroll · any other key closes the help", "j k scroll · other keys close"]
        }
        if let shown = state.detail, state.layout.isPage {
            if shown.notification.actions?.isEmpty == false {
                return ["Esc back · j k scroll · ! actions · a d r s x act · ? help", "Esc back · ! actions · ? help", "Esc back · ? help"]
            }
            return ["Esc back · j k scroll · a d r s x act · ? help", "Esc back · j k scroll · ? help"]
        }
        if !state.markedRows.isEmpty {
            return ["\(state.markedRows.count) marked · a d r s x act on them · Esc clears", "\(state.markedRows.count) marked · Esc clears"]
        }
        if state.showingGroups, state.query.isEmpty {
            return ["Group rows · Enter opens · d r a act on a whole group · = unfolds · ? help", "Enter opens · = unfolds · ? help"]
        }
        if let key = GroupQuery.key(in: state.query) {
            let count = state.total == 1 ? "1 notification" : "\(state.total) notifications"
            return ["Group \(key) · \(count) · Esc back\(state.grouping ? " to the groups" : "")", "\(key) · Esc back"]
        }
        if !state.query.isEmpty {
            let matches =
                state.showingGroups
                ? (state.total == 1 ? "1 group" : "\(state.total) groups")
                : state.isWindowCurrent && !state.window.counted
                    ? "\(state.total)+ matches (counting)" : state.total == 1 ? "1 match" : "\(state.total) matches"
            return ["/\(state.query) · \(matches) · Esc clears"]
        }
        if (state.detail?.notification ?? state.selectedRow)?.actions?.isEmpty == false {
            return ["! actions · ? help · q quit", "! actions · ? help"]
        }
        return ["? help · q quit"]
    }
}
