import Foundation
import NottyCore
import Testing

@testable import NottyTUI

@Suite("Styles and layout")
struct RenderTests {
    /// The cells of a row whose character is `c`.
    func cells(_ screen: Screen, row: Int) -> [Cell] {
        (0..<screen.size.columns).map { screen[$0, row] }
    }

    @Test func unreadRowsAreBoldAndReadRowsAreNot() throws {
        let screen = render(Harness(view: .all).state)
        // Where a title starts (no wide characters precede titles in these rows).
        func titleCell(_ title: String) throws -> Cell {
            let row = try #require(screen.lines().firstIndex { $0.contains(title) })
            let line = screen.lines()[row]
            let column = line.distance(from: line.startIndex, to: try #require(line.range(of: title)).lowerBound)
            return screen[column, row]
        }
        #expect(try titleCell("Build #4821").style.bold, "Unread")
        #expect(try !titleCell("Build #4817").style.bold, "Read")
    }

    @Test func theSelectedRowIsReversedAcrossTheList() {
        var h = Harness(view: .all)
        _ = h.send(.key(.ch("j")))
        let screen = render(h.state)
        #expect(cells(screen, row: 2).allSatisfy { $0.style.reverse })
        #expect(!cells(screen, row: 1).contains { $0.style.reverse })
        #expect(!cells(screen, row: 3).contains { $0.style.reverse })
    }

    @Test func currentTabIsReversed() {
        let screen = render(Harness(view: .read).state)
        let line = screen.lines()[0]
        let read = line.distance(from: line.startIndex, to: line.range(of: "Read 4")!.lowerBound)
        #expect(screen[read, 0].style.reverse)
        #expect(!screen[2, 0].style.reverse, "Unread is not current")
    }

    @Test func highPriorityIsColouredAndMarked() {
        let screen = render(Harness().state)
        #expect(screen[2, 1].character == "!")
        #expect(screen[2, 1].style.color == .high)
        #expect(screen[2, 5].character == "↓")
        #expect(screen[2, 5].style.color == .low)
    }

    @Test("no colour at all when colour is off", arguments: [false, true])
    func noColor(_ useColor: Bool) {
        var h = Harness(useColor: useColor)
        _ = h.send(.status(SyncStatus(user: "alice", server: "s", connection: .offline(since: Fixtures.now), outbox: 2)))
        for screen in [
            render(h.state),
            {
                var s = h; _ = s.send(.key(.enter)); return render(s.state)
            }(),
        ] {
            let colours = screen.cells.compactMap(\.style.color)
            #expect(colours.isEmpty == !useColor)
        }
        // Bold and reverse stay: they carry meaning without colour.
        #expect(render(h.state).cells.contains { $0.style.bold })
    }

    @Test func wideTitlesUseContinuationCells() {
        let screen = render(Harness().state)
        let row = 2  // デプロイ完了 ✅
        let continuations = cells(screen, row: row).filter(\.isContinuation).count
        #expect(continuations == 7, "six katakana and one emoji")
    }

    @Test func statusLineSaysOfflineAndOutbox() {
        var h = Harness()
        _ = h.send(
            .status(
                SyncStatus(
                    user: "alice", server: "http://127.0.0.1:8787", connection: .offline(since: Fixtures.now.addingTimeInterval(-3 * 3600)),
                    outbox: 3, lastSync: nil)))
        #expect(
            render(h.state).lines()[22].trimmingTrailingSpaces() == " alice@http://127.0.0.1:8787 · offline since 07:00 · outbox 3 · never synced")
        _ = h.send(.status(SyncStatus(user: "alice", server: "http://127.0.0.1:8787", connection: .connecting)))
        #expect(render(h.state).lines()[22].contains("connecting…"))
        _ = h.send(.status(SyncStatus(user: "alice", server: "x", connection: .offline(since: Fixtures.now.addingTimeInterval(-86_400)))))
        #expect(render(h.state).lines()[22].contains("offline since 2026-03-13 10:00"))
    }

    @Test("the status line says quiet until when, and how many are muted; an ended quiet period is not shown")
    func statusLineSaysQuietAndMutes() {
        var h = Harness()
        var status = Fixtures.status
        status.quietUntil = Fixtures.now.addingTimeInterval(3 * 3600)
        status.mutes = 2
        _ = h.send(.status(status))
        // At 80 columns the account gives way (it is shown when 16 cells are left for it).
        #expect(render(h.state).lines()[22].trimmingTrailingSpaces() == " live · quiet until 13:00 · 2 muted · outbox 0 · synced 2m ago")
        status.quietUntil = Fixtures.now.addingTimeInterval(-60)
        status.mutes = 0
        _ = h.send(.status(status))
        #expect(!render(h.state).lines()[22].contains("quiet"))
        #expect(!render(h.state).lines()[22].contains("muted"))
    }

    @Test func layoutPlacesTheDetail() {
        #expect(Layout(size: Size(columns: 80, rows: 24), detailOpen: true).placement == .page)
        #expect(Layout(size: Size(columns: 100, rows: 24), detailOpen: true).placement == .right)
        #expect(Layout(size: Size(columns: 80, rows: 30), detailOpen: true).placement == .bottom)
        #expect(Layout(size: Size(columns: 40, rows: 10), detailOpen: true).placement == .page)
        #expect(Layout(size: Size(columns: 120, rows: 40), detailOpen: false).placement == .none)
        #expect(Layout(size: Size(columns: 39, rows: 10), detailOpen: false).isTooSmall)
    }

    @Test func relativeAges() {
        let now = Fixtures.now
        let cases: [(TimeInterval, String)] = [
            (0, "now"), (59, "now"), (60, "1m"), (3599, "59m"), (3600, "1h"), (86_399, "23h"),
            (86_400, "1d"), (6 * 86_400, "6d"), (7 * 86_400, "1w"), (400 * 86_400, "1y"), (-30, "now"),
        ]
        for (ago, text) in cases {
            #expect(TimeText.age(of: now.addingTimeInterval(-ago), now: now) == text)
        }
    }

    @Test func everySizeFromTheMinimumRendersWithinBounds() {
        for columns in [40, 41, 55, 57, 58, 79, 99, 100, 200] {
            for rows in [10, 11, 29, 30, 60] {
                for view in NotificationView.allCases {
                    var h = Harness(size: Size(columns: columns, rows: rows), view: view)
                    for keys in [[], [Key.enter], [.ch("?")], [.ch("s")], [.ch("/"), .ch("日")]] {
                        var k = h
                        for key in keys { k.run(.key(key)) }
                        let screen = render(k.state)
                        #expect(screen.lines().count == rows)
                        for line in screen.lines() { #expect(DisplayWidth.width(of: line) == columns) }
                    }
                    h.run(.key(.ch("G")))
                    #expect(render(h.state).lines().count == rows)
                }
            }
        }
    }
}
