import Foundation
import NottyCore

/// The detail of one notification, as a pane (right or bottom) or a full page.
enum DetailView {
    static func draw(into screen: inout Screen, state: TUIState, detail: DetailState, in rect: Layout.Rect, placement: Layout.Placement) {
        let line = CellStyle(dim: true)
        switch placement {
        case .right:
            for y in rect.y..<(rect.y + rect.height) { screen.put("│", column: rect.x - 1, row: y, style: line) }
        case .bottom:
            screen.fill(row: rect.y - 1, from: 0, to: screen.size.columns, "─", style: line)
        case .page, .none:
            break
        }
        let lines = DetailText.lines(for: detail.notification, width: rect.width - 2, state: state)
        let scroll = placement == .page ? max(0, min(detail.scroll, lines.count - rect.height)) : 0
        let visible = lines.dropFirst(scroll).prefix(rect.height)
        for (offset, spans) in visible.enumerated() {
            screen.put(spans, column: rect.x + 1, row: rect.y + offset, limit: rect.x + rect.width - 1)
        }
        if lines.count - scroll > rect.height {
            // More below: say so on the last line.
            let y = rect.y + rect.height - 1
            screen.fill(row: y, from: rect.x, to: rect.x + rect.width)
            screen.put(" ↓ more", column: rect.x, row: y, limit: rect.x + rect.width, style: CellStyle(dim: true))
        }
    }
}

/// The lines of a detail: title, body, then one labelled line per field.
enum DetailText {
    static let labelWidth = 10

    /// Every line of the detail of `notification` at `width` cells.
    static func lines(for notification: UserNotification, width: Int, state: TUIState) -> [[Span]] {
        guard width > 0 else { return [] }
        let n = notification
        var lines: [[Span]] = DisplayWidth.wrap(n.displayTitle, to: width).map { [Span($0, CellStyle(bold: true))] }
        if let body = n.payload.visualContent?.body, !body.isEmpty {
            lines.append([])
            lines += DisplayWidth.wrap(body, to: width).map { [Span($0)] }
        }
        lines.append([])
        let tz = state.timeZone
        func when(_ date: Date) -> String {
            "\(TimeText.dateTime(date, in: tz)) (\(TimeText.relative(date, now: state.now)))"
        }
        var fields: [(String, String, CellStyle)] = []
        if let team = n.team { fields.append(("Team", team, CellStyle(bold: true))) }
        fields.append(("App", n.targetHostName, .plain))
        fields.append(("Group", n.groupName ?? "—", .plain))
        if let link = n.launchUrl { fields.append(("Link", link + "  (o opens)", CellStyle(color: .muted))) }
        fields.append(("Priority", n.priority.rawValue, n.priority == .high ? CellStyle(bold: true, color: .high) : .plain))
        fields.append(("Created", when(n.createdDateTime), .plain))
        fields.append(("Expires", when(n.expirationDateTime), .plain))
        if let until = n.snoozedUntil { fields.append(("Snoozed", "until " + when(until), .plain)) }
        fields += [
            ("State", n.stateWords, CellStyle(bold: n.readState == .unread))
        ]
        if let line = n.changedByLine(now: state.now) { fields.append(("Handled", line, .plain)) }
        fields.append(("Id", n.id, CellStyle(dim: true)))
        // Where it was escalated (PROTOCOL.md §11), oldest first.
        for record in n.escalations ?? [] {
            fields.append(("Escalated", record.line(now: state.now), record.outcome == "sent" ? .plain : CellStyle(color: .high)))
        }
        // Its actions (PROTOCOL.md §12), numbered, with how each went.
        for line in n.actionLines(now: state.now) {
            let failed = line.contains(" — failed")
            fields.append(("Action", line, failed ? CellStyle(color: .high) : .plain))
        }
        if let raw = n.payload.rawContent, !raw.isEmpty { fields.append(("Raw", raw, .plain)) }
        for (label, value, style) in fields {
            lines += labelled(label, value, width: width, style: style)
        }
        return lines
    }

    /// `Label     value`, the value wrapped under itself.
    private static func labelled(_ label: String, _ value: String, width: Int, style: CellStyle) -> [[Span]] {
        let valueWidth = max(1, width - labelWidth)
        let wrapped = DisplayWidth.wrap(value, to: valueWidth)
        return wrapped.enumerated().map { index, part in
            let head = index == 0 ? DisplayWidth.pad(label, to: labelWidth) : String(repeating: " ", count: labelWidth)
            return [Span(head, CellStyle(color: .muted)), Span(part, style)]
        }
    }
}
