import Foundation
import NottyCore

/// The list: one row per notification.
///
/// `*●! 25m app/group  title` — mark (`*` when marked with Space), unread dot, priority
/// (`!` High, `↓` Low), age (3 cells, right aligned), app and group (the group is dropped
/// below 58 columns), title. Unread rows are bold, the selected row reversed.
enum ListView {
    static func draw(into screen: inout Screen, state: TUIState, in rect: Layout.Rect) {
        guard rect.height > 0, rect.width > 0 else { return }
        if state.showingGroups { return drawGroups(into: &screen, state: state, in: rect) }
        guard state.isWindowCurrent else {
            centre("Loading…", into: &screen, in: rect, style: CellStyle(dim: true))
            return
        }
        guard state.total > 0 else {
            centre(emptyText(state), into: &screen, in: rect, style: CellStyle(dim: true))
            return
        }
        let top = TUIState.scrolledTop(top: state.top, selection: state.selection, height: rect.height, total: state.total)
        let shown = (top..<min(top + rect.height, state.total)).map { ($0, state.window.row(at: $0)) }
        let columns = Columns(width: rect.width, rows: shown.compactMap { $0.1 })
        for (line, (index, row)) in shown.enumerated() {
            let y = rect.y + line
            if let row {
                screen.put(spans(for: row, state: state, columns: columns), column: rect.x, row: y, limit: rect.x + rect.width)
            } else {
                screen.put("   …", column: rect.x, row: y, limit: rect.x + rect.width, style: CellStyle(dim: true))
            }
            if index == state.selection {
                screen.restyle(row: y, from: rect.x, to: rect.x + rect.width) { $0.reverse = true }
            }
        }
    }

    /// Column widths for one screen of rows.
    struct Columns {
        let showGroup: Bool
        let source: Int
        let title: Int

        init(showGroup: Bool, source: Int, title: Int) {
            self.showGroup = showGroup
            self.source = source
            self.title = title
        }

        init(width: Int, rows: [UserNotification]) {
            let rest = width - 8
            let withGroup = rest >= 50
            showGroup = withGroup
            let cap = max(8, min(28, withGroup ? rest * 2 / 5 : rest / 3))
            let widest = rows.map { DisplayWidth.width(of: ListView.source(of: $0, withGroup: withGroup)) }.max() ?? 0
            source = max(4, min(cap, widest))
            title = max(0, rest - source - 1)
        }
    }

    /// `app/group`, or just the app; a team's notification begins with its team: `[ops] app`.
    static func source(of row: UserNotification, withGroup: Bool) -> String {
        let team = row.team.map { "[\($0)] " } ?? ""
        guard withGroup, let group = row.groupName, !group.isEmpty else { return team + row.targetHostName }
        return "\(team)\(row.targetHostName)/\(group)"
    }

    static func spans(for row: UserNotification, state: TUIState, columns: Columns) -> [Span] {
        let unread = row.readState == .unread
        let text = CellStyle(bold: unread)
        let marked = state.markedRows[row.id] != nil
        let priority: Span =
            switch row.priority {
            case .high: Span(RowGlyphs.priority(.high), CellStyle(bold: true, color: .high))
            case .low: Span(RowGlyphs.priority(.low), CellStyle(color: .low))
            case .none: Span(RowGlyphs.priority(.none))
            }
        return [
            Span(marked ? "*" : " ", CellStyle(bold: true, color: .accent)),
            Span(RowGlyphs.unread(row.readState), CellStyle(bold: true, color: .accent)),
            priority,
            Span(" "),
            Span(DisplayWidth.pad(TimeText.age(of: row.createdDateTime, now: state.now), to: 3, alignRight: true), CellStyle(color: .muted)),
            Span(" "),
            Span(DisplayWidth.pad(source(of: row, withGroup: columns.showGroup), to: columns.source), CellStyle(bold: unread, color: .muted)),
            Span(" "),
            Span(DisplayWidth.pad(row.displayTitle.singleLine, to: columns.title), text),
        ]
    }

    /// Group rows (`=`): `=● 25m app/group  12 notifications, 3 unread · Disk full on db-1` —
    /// the unread dot when any is Unread, the newest one's age, the group (with its app when it
    /// has one), how many, the newest one's title. Groups with Unread rows are bold. A group
    /// of one is its notification's own row.
    static func drawGroups(into screen: inout Screen, state: TUIState, in rect: Layout.Rect) {
        guard let groups = state.currentGroups else {
            centre("Loading…", into: &screen, in: rect, style: CellStyle(dim: true))
            return
        }
        guard !groups.isEmpty else {
            centre(emptyText(state), into: &screen, in: rect, style: CellStyle(dim: true))
            return
        }
        let top = TUIState.scrolledTop(top: state.top, selection: state.selection, height: rect.height, total: groups.count)
        let shown = top..<min(top + rect.height, groups.count)
        let rest = rect.width - 8
        let withGroup = rest >= 50
        let widest =
            shown.map { index in
                DisplayWidth.width(of: groups[index].lone.map { source(of: $0, withGroup: withGroup) } ?? label(of: groups[index]))
            }.max() ?? 0
        let sourceWidth = max(4, min(max(8, min(28, rest * 2 / 5)), widest))
        let columns = Columns(showGroup: withGroup, source: sourceWidth, title: max(0, rest - sourceWidth - 1))
        for (line, index) in shown.enumerated() {
            let group = groups[index]
            let y = rect.y + line
            if let lone = group.lone {
                screen.put(spans(for: lone, state: state, columns: columns), column: rect.x, row: y, limit: rect.x + rect.width)
            } else {
                let unread = group.unread > 0
                // Narrow: `3, 2 unread` leaves room for the title.
                let amount = (columns.title < 36 ? String(group.count) : TUIState.count(group.count)) + (unread ? ", \(group.unread) unread" : "")
                let spans = [
                    Span("=", CellStyle(bold: true, color: .accent)),
                    Span(unread ? RowGlyphs.unread(.unread) : RowGlyphs.unread(.read), CellStyle(bold: true, color: .accent)),
                    Span(" "),
                    Span(" "),
                    Span(DisplayWidth.pad(TimeText.age(of: group.newest, now: state.now), to: 3, alignRight: true), CellStyle(color: .muted)),
                    Span(" "),
                    Span(DisplayWidth.pad(label(of: group), to: sourceWidth), CellStyle(bold: unread, color: .muted)),
                    Span(" "),
                    Span(amount, CellStyle(bold: unread)),
                    Span(
                        DisplayWidth.pad(" · " + group.newestTitle.singleLine, to: max(0, columns.title - DisplayWidth.width(of: amount))),
                        CellStyle(color: .muted)),
                ]
                screen.put(spans, column: rect.x, row: y, limit: rect.x + rect.width)
            }
            if index == state.selection {
                screen.restyle(row: y, from: rect.x, to: rect.x + rect.width) { $0.reverse = true }
            }
        }
    }

    /// A group row's name: `app/group` when its rows are of one app other than the key.
    static func label(of group: NotificationGroup) -> String {
        guard let app = group.app, app != group.key else { return group.key }
        return "\(app)/\(group.key)"
    }

    /// What an empty view says.
    static func emptyText(_ state: TUIState) -> String {
        if let key = GroupQuery.key(in: state.query) { return "Nothing left in \(key) in \(state.view.title). Esc goes back to the groups." }
        if !state.query.isEmpty { return "No matches for “\(state.query)” in \(state.view.title). Esc clears the search." }
        switch state.view {
        case .unread: return "Nothing unread. Press 6 for All."
        case .read: return "Nothing read yet. Press 6 for All."
        case .activated: return "Nothing activated. Press 6 for All."
        case .dismissed: return "Nothing dismissed. Press 6 for All."
        case .snoozed: return "Nothing snoozed. Press 6 for All."
        case .all: return "No notifications yet."
        }
    }

    /// A line centred in a rectangle (wrapped when wider than it).
    static func centre(_ text: String, into screen: inout Screen, in rect: Layout.Rect, style: CellStyle) {
        let lines = DisplayWidth.wrap(text, to: max(1, rect.width - 2))
        let firstRow = rect.y + max(0, (rect.height - lines.count) / 2)
        for (offset, line) in lines.enumerated() where offset < rect.height {
            let x = rect.x + max(0, (rect.width - DisplayWidth.width(of: line)) / 2)
            screen.put(line, column: x, row: firstRow + offset, limit: rect.x + rect.width, style: style)
        }
    }
}

extension String {
    /// Line breaks and tabs as spaces, for one-line fields.
    var singleLine: String {
        // Line breaks and tabs are all below 0x20 but NEL (0xC2 0x85) and LS/PS (0xE2 0x80 0xA8/A9).
        guard utf8.contains(where: { $0 < 0x20 || $0 == 0xC2 || $0 == 0xE2 }) else { return self }
        return String(map { $0.isNewline || $0 == "\t" ? " " : $0 })
    }
}
