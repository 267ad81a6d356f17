/// The help overlay (`?`): every key. Two columns from 80 columns on; scrolls with j/k when
/// it does not fit; any other key closes it.
public enum HelpText {
    /// Each key and what it does, in the order the README lists them.
    public static let entries: [(keys: String, action: String)] = [
        ("j k ↓ ↑", "move"),
        ("g G Home End", "first / last row"),
        ("PgUp PgDn", "page up / down"),
        ("^b ^f", "page up / down"),
        ("Tab S-Tab", "next / previous view"),
        ("1 … 6", "Unread … Snoozed, All"),
        ("7 8 9", "saved views (notty view)"),
        ("Enter", "open detail, mark read"),
        ("a", "activate (and mark read)"),
        ("o", "open the link, activate"),
        ("!", "actions (then a digit)"),
        ("d", "dismiss"),
        ("r", "toggle read / unread"),
        ("s", "snooze (asks how long)"),
        ("x", "delete (asks y/n)"),
        ("Space", "mark row for a d r s x"),
        ("M", "mark all read (asks y/n)"),
        ("u", "undo the last action"),
        ("n p", "next / previous unread"),
        ("=", "fold rows into groups"),
        ("/", "search; Esc clears"),
        ("", "\"a b\" -x app: group:"),
        ("", "team: priority: is: by:"),
        ("", "after: before: has:"),
        ("R", "sync now"),
        ("Q", "quiet for 1h / end it"),
        ("?", "this help"),
        ("Esc", "back, clear search/marks"),
        ("q", "close detail, else quit"),
    ]

    static let keyWidth = 13

    /// The help as lines of text at `width` columns.
    public static func lines(width: Int) -> [String] {
        let twoColumns = width >= 80
        let columnWidth = twoColumns ? width / 2 : width
        let cells = entries.map { entry in
            DisplayWidth.truncate(" " + DisplayWidth.pad(entry.keys, to: keyWidth) + entry.action, to: columnWidth - 1)
        }
        var lines = [" Keys", ""]
        if twoColumns {
            let half = (cells.count + 1) / 2
            for index in 0..<half {
                let left = DisplayWidth.pad(cells[index], to: columnWidth)
                lines.append(index + half < cells.count ? left + cells[index + half] : left)
            }
        } else {
            lines += cells
        }
        lines += ["", DisplayWidth.truncate(" In a detail page: j k scroll, Esc q Enter close", to: width)]
        return lines
    }

    static func draw(into screen: inout Screen, state: TUIState, in rect: Layout.Rect) {
        let all = lines(width: rect.width)
        let scroll = max(0, min(state.help?.scroll ?? 0, all.count - rect.height))
        for (offset, line) in all.dropFirst(scroll).prefix(rect.height).enumerated() {
            let style = offset == 0 && scroll == 0 ? CellStyle(bold: true) : .plain
            screen.put(line, column: rect.x, row: rect.y + offset, limit: rect.x + rect.width, style: style)
        }
    }
}
