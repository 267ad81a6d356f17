import Foundation
import NottyCore

/// `alice@http://127.0.0.1:8787 · live · outbox 3 · synced 2m ago`, reversed.
enum StatusLine {
    static func draw(into screen: inout Screen, state: TUIState, row: Int) {
        let bar = CellStyle(reverse: true)
        screen.fill(row: row, from: 0, to: state.size.columns, style: bar)
        screen.put(spans(state: state, width: state.size.columns - 1), column: 1, row: row)
    }

    /// The status line's spans: with the account when at least 16 cells are left for it,
    /// else without it, else in short forms (`polling 30s`, outbox only when not empty).
    static func spans(state: TUIState, width: Int) -> [Span] {
        let bar = CellStyle(reverse: true)
        guard let status = state.status else { return [Span("starting…", bar)] }
        let separator = Span(" · ", bar)
        let rest = facts(status, state: state, short: false)
        let room = width - rest.width - separator.text.count
        if room >= 16 {
            let account = "\(status.user)@\(status.server)"
            return [Span(DisplayWidth.truncate(account, to: room), bar), separator] + rest
        }
        if rest.width <= width { return rest }
        return facts(status, state: state, short: true)
    }

    /// Connection, outbox and last sync, joined by ` · `.
    private static func facts(_ status: SyncStatus, state: TUIState, short: Bool) -> [Span] {
        let bar = CellStyle(reverse: true)
        var parts: [Span] = []
        let words = status.connection.words(short: short) { TimeText.clock($0, in: state.timeZone, now: state.now) }
        let style =
            switch status.connection {
            case .live: CellStyle(reverse: true, color: .ok)
            case .polling: bar
            case .offline: CellStyle(bold: true, reverse: true, color: .warning)
            case .connecting: CellStyle(reverse: true, color: .muted)
            }
        parts.append(Span(words, style))
        if let until = status.quietUntil, status.isQuiet(at: state.now) {
            let time = TimeText.clock(until, in: state.timeZone, now: state.now)
            parts.append(Span(short ? "quiet" : "quiet until \(time)", CellStyle(reverse: true, color: .muted)))
        }
        for item in status.onCall where item.onCall && (item.until ?? .distantFuture) > state.now {
            let line = item.line(now: state.now, zone: state.timeZone) ?? ""
            parts.append(Span(short ? "on call" : line, CellStyle(bold: true, reverse: true, color: .warning)))
        }
        if status.mutes > 0 {
            parts.append(Span(short ? "\(status.mutes) muted" : "\(status.mutes) muted", CellStyle(reverse: true, color: .muted)))
        }
        if !short || status.outbox > 0 {
            parts.append(Span("outbox \(status.outbox)", status.outbox > 0 ? CellStyle(reverse: true, color: .warning) : bar))
        }
        if let last = status.lastSync {
            parts.append(Span("synced \(TimeText.relative(last, now: state.now, ago: !short))", bar))
        } else {
            parts.append(Span("never synced", bar))
        }
        var joined: [Span] = []
        for part in parts {
            if !joined.isEmpty { joined.append(Span(" · ", bar)) }
            joined.append(part)
        }
        return joined
    }
}
