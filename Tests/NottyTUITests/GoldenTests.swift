import Foundation
import NottyCore
import Testing

@testable import NottyTUI

@Suite("Golden screens")
struct GoldenTests {
    static let sizes = [Size(columns: 80, rows: 24), Size(columns: 120, rows: 40), Size(columns: 40, rows: 10)]

    static let viewsAndSizes: [(NotificationView, Size)] = NotificationView.allCases.flatMap { view in sizes.map { (view, $0) } }

    static func name(_ view: NotificationView, _ size: Size) -> String {
        "\(view.rawValue)-\(size.columns)x\(size.rows)"
    }

    @Test("each view at each size", arguments: viewsAndSizes)
    func views(_ view: NotificationView, _ size: Size) throws {
        let harness = Harness(size: size, view: view)
        try Golden.check(Self.name(view, size), render(harness.state))
    }

    @Test func selectionMovedAndRowsMarked() throws {
        var h = Harness(view: .all)
        h.keys(.ch("j"), .ch(" "), .ch(" "), .ch("j"))
        try Golden.check("all-marked-80x24", render(h.state))
    }

    @Test("detail as a page at 80×24", arguments: [1, 3])
    func detailPage(_ row: Int) throws {
        var h = Harness()
        for _ in 1..<row { h.keys(.ch("j")) }
        h.keys(.enter)
        try Golden.check("detail-page-\(row)-80x24", render(h.state))
    }

    @Test func detailPageScrolledAt40x10() throws {
        var h = Harness(size: Size(columns: 40, rows: 10))
        h.keys(.enter, .ch("j"), .ch("j"))
        try Golden.check("detail-page-scrolled-40x10", render(h.state))
    }

    /// A notification with actions (PROTOCOL.md §12): the detail lists them with how they went, the
    /// bottom line says `!`, and `!` asks which to run.
    static func withActions(_ h: Harness) -> [UserNotification] {
        var rows = Fixtures.notifications
        rows[0].actions = [
            NotificationAction(kind: .http, label: "Silence 1h", clear: true),
            NotificationAction(kind: .view, label: "Runbook", url: "https://wiki.acme.io/disk"),
        ]
        rows[0].actionResults = [
            ActionResult(action: 1, label: "Silence 1h", status: .failed, httpStatus: 503, error: "HTTP 503", device: "laptop", at: h.state.now - 120)
        ]
        return rows
    }

    /// A team's notification (PROTOCOL.md §13.1): the list shows its team before the app, and the
    /// detail which member handled it, on which device, when.
    @Test func teamNotification() throws {
        var h = Harness()
        var rows = Fixtures.notifications
        rows[0].team = "ops"
        rows[0].readState = .read
        rows[0].userActionState = .dismissed
        rows[0].changedBy = ChangedBy(user: "priya", device: "phone", at: h.state.now - 120)
        h = Harness(view: .all, notifications: rows)
        try Golden.check("team-list-80x24", render(h.state))
        h.keys(.enter)
        let text = render(h.state).lines().joined(separator: "\n")
        #expect(text.contains("Team      ops"))
        #expect(text.contains("State     Read · dismissed"))
        #expect(text.contains("Handled   dismissed by priya on phone, 2m ago"))
        try Golden.check("detail-team-80x24", render(h.state))
    }

    @Test func detailPageWithActions() throws {
        var h = Harness()
        h = Harness(notifications: Self.withActions(h))
        h.keys(.enter)
        try Golden.check("detail-page-actions-80x24", render(h.state))
        h.keys(.ch("!"))
        try Golden.check("action-prompt-80x24", render(h.state))
    }

    @Test func detailPaneRight() throws {
        var h = Harness(size: Size(columns: 120, rows: 40))
        h.keys(.ch("j"), .enter)
        try Golden.check("detail-pane-right-120x40", render(h.state))
    }

    @Test func detailPaneBottom() throws {
        var h = Harness(size: Size(columns: 90, rows: 34), view: .all)
        h.keys(.enter)
        try Golden.check("detail-pane-bottom-90x34", render(h.state))
    }

    @Test("group rows", arguments: [Size(columns: 80, rows: 24), Size(columns: 40, rows: 10)])
    func groupRows(_ size: Size) throws {
        var h = Harness(size: size, view: .all)
        h.keys(.ch("="), .ch("j"))
        h.state.message = nil
        try Golden.check("groups-all-\(size.columns)x\(size.rows)", render(h.state))
    }

    @Test func openGroup() throws {
        var h = Harness(view: .all)
        h.keys(.ch("="), .ch("G"), .ch("k"), .ch("k"), .ch("k"), .ch("k"), .ch("k"), .enter)
        try Golden.check("group-open-80x24", render(h.state))
    }

    @Test("help", arguments: [Size(columns: 80, rows: 24), Size(columns: 40, rows: 10)])
    func help(_ size: Size) throws {
        var h = Harness(size: size)
        h.keys(.ch("?"))
        try Golden.check("help-\(size.columns)x\(size.rows)", render(h.state))
    }

    @Test("snooze prompt", arguments: [Size(columns: 80, rows: 24), Size(columns: 40, rows: 10)])
    func snoozePrompt(_ size: Size) throws {
        var h = Harness(size: size)
        h.keys(.ch("s"))
        try Golden.check("snooze-prompt-\(size.columns)x\(size.rows)", render(h.state))
    }

    @Test func deleteConfirmation() throws {
        var h = Harness()
        h.keys(.ch(" "), .ch(" "), .ch("x"))
        try Golden.check("delete-confirm-80x24", render(h.state))
    }

    @Test func markAllReadConfirmation() throws {
        var h = Harness()
        h.keys(.ch("M"))
        try Golden.check("mark-all-confirm-80x24", render(h.state))
    }

    @Test func searchPromptAndResult() throws {
        var h = Harness(view: .all)
        h.keys(.ch("/"), .ch("b"), .ch("u"), .ch("i"), .ch("l"), .ch("d"))
        try Golden.check("search-prompt-80x24", render(h.state))
        h.keys(.enter)
        try Golden.check("search-result-80x24", render(h.state))
    }

    @Test("empty view", arguments: [Size(columns: 80, rows: 24), Size(columns: 40, rows: 10)])
    func emptyView(_ size: Size) throws {
        let h = Harness(size: size, notifications: Fixtures.notifications.filter { $0.readState == .read })
        try Golden.check("empty-unread-\(size.columns)x\(size.rows)", render(h.state))
    }

    @Test func offlineStatus() throws {
        var h = Harness()
        _ = h.send(
            .status(
                SyncStatus(
                    user: "alice", server: "https://notty.acme.io", connection: .offline(since: Fixtures.now.addingTimeInterval(-55 * 60)), outbox: 3,
                    lastSync: Fixtures.now.addingTimeInterval(-56 * 60))))
        try Golden.check("offline-80x24", render(h.state))
    }

    @Test func pollingStatusAt40() throws {
        var h = Harness(size: Size(columns: 40, rows: 10))
        _ = h.send(
            .status(SyncStatus(user: "alice", server: "http://127.0.0.1:8787", connection: .polling(every: 30), outbox: 0, lastSync: Fixtures.now)))
        try Golden.check("polling-40x10", render(h.state))
    }

    @Test func wideCharactersInDetail() throws {
        var h = Harness(size: Size(columns: 60, rows: 20))
        h.keys(.ch("j"), .ch("j"), .enter)
        try Golden.check("detail-cjk-60x20", render(h.state))
    }

    @Test("wide characters straddling the edge", arguments: [41, 42, 43])
    func cjkNarrow(_ columns: Int) throws {
        let h = Harness(size: Size(columns: columns, rows: 10))
        try Golden.check("cjk-\(columns)x10", render(h.state))
    }

    @Test("too small", arguments: [Size(columns: 39, rows: 10), Size(columns: 80, rows: 9), Size(columns: 12, rows: 3)])
    func tooSmall(_ size: Size) throws {
        let h = Harness(size: size)
        try Golden.check("too-small-\(size.columns)x\(size.rows)", render(h.state))
    }
}
