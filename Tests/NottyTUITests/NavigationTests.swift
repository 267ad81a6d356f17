import Foundation
import NottyCore
import Testing

@testable import NottyTUI

@Suite("Moving, switching views and loading windows")
struct NavigationTests {
    @Test("A state made for another view (config.toml's view) asks for and shows that view first")
    func startsOnTheGivenView() {
        var state = TUIState(size: Size(columns: 80, rows: 24), now: Fixtures.now, timeZone: Fixtures.utc, view: .dismissed)
        #expect(state.view == .dismissed)
        let effects = update(&state, .storeChanged)
        guard case .load(let request)? = effects.first else { Issue.record("no load: \(effects)"); return }
        #expect(request.view == .dismissed)
    }

    // MARK: - Moving within the window

    @Test(
        "the windows read ahead are the ones Tab, Shift-Tab, G and g would ask for, and Enter's for the search being typed (three characters or more); no other search's"
    )
    func readAheadRequests() {
        var h = Harness(size: Size(columns: 80, rows: 24), notifications: Fixtures.many(300))
        let ahead = h.state.readAheadRequests
        var asked: [WindowRequest] = []
        for key in TUIState.readAheadKeys {
            var copy = h.state
            for case .load(let request) in update(&copy, .key(key)) where !asked.contains(request) { asked.append(request) }
        }
        #expect(!ahead.isEmpty && ahead == asked)
        #expect(ahead.map(\.view).contains(.read) && ahead.map(\.view).contains(.all))
        #expect(h.state.readAheadRequests == ahead, "reading ahead changes nothing")
        h.run(.key(.character("/")))
        h.run(.key(.character("d")))
        h.run(.key(.character("e")))
        #expect(h.state.readAheadRequests.isEmpty, "two characters: too short for the search index")
        for character in "ploy" { h.run(.key(.character(character))) }
        var entered = h.state
        let enterLoads = update(&entered, .key(.enter)).compactMap { effect -> WindowRequest? in
            if case .load(let request) = effect { request } else { nil }
        }
        #expect(
            enterLoads.count == 1 && h.state.readAheadRequests == enterLoads && enterLoads.first?.query == "deploy",
            "the search being typed: Enter's window")
        h.run(.key(.enter))
        #expect(h.state.query == "deploy" && h.state.readAheadRequests.isEmpty, "other searches are not read ahead")
    }

    @Test func jkAndArrowsMoveTheSelection() {
        var h = Harness(view: .all)
        #expect(h.send(.key(.ch("j"))) == [])
        #expect(h.state.selection == 1)
        #expect(h.state.selectedId == Fixtures.id(2))
        #expect(h.send(.key(.down)) == [])
        #expect(h.state.selection == 2)
        #expect(h.send(.key(.ch("k"))) == [])
        #expect(h.send(.key(.up)) == [])
        #expect(h.state.selection == 0)
        #expect(h.send(.key(.up)) == [], "k at the top stays and does nothing")
        #expect(h.state.selection == 0)
        #expect(h.selectedTitle == "Build #4821 failed on main")
    }

    @Test func jumpKeys() {
        var h = Harness(view: .all)
        _ = h.send(.key(.ch("G")))
        #expect(h.state.selection == 16)
        #expect(h.selectedTitle == "Pay the Hetzner invoice")
        _ = h.send(.key(.ch("g")))
        #expect(h.state.selection == 0)
        _ = h.send(.key(.end))
        #expect(h.state.selection == 16)
        _ = h.send(.key(.home))
        #expect(h.state.selection == 0)
    }

    @Test func pagingMovesByAScreen() {
        var h = Harness(notifications: Fixtures.many(100))
        let page = h.state.layout.list.height
        #expect(page == 21)
        _ = h.send(.key(.pageDown))
        #expect(h.state.selection == page)
        _ = h.send(.key(.control("f")))
        #expect(h.state.selection == 2 * page)
        #expect(h.state.top == 2 * page - page + 1, "the selection is the last row on screen")
        _ = h.send(.key(.control("b")))
        #expect(h.state.selection == page)
        _ = h.send(.key(.pageUp))
        #expect(h.state.selection == 0)
        _ = h.send(.key(.pageUp))
        #expect(h.state.selection == 0)
    }

    @Test func movingPastTheWindowAsksForRows() throws {
        var h = Harness(notifications: Fixtures.many(100))
        #expect(h.state.window.range == 0..<63, "three screens are loaded")
        let effects = h.send(.key(.ch("G")))
        #expect(effects == [.load(WindowRequest(view: .unread, anchorId: nil, index: 99, span: 63))])
        #expect(h.state.selection == 99)
        #expect(h.state.selectedId == nil, "the row is not loaded yet")
        // Rendering meanwhile shows what it has and does not crash.
        let lines = render(h.state).lines()
        #expect(lines[21].hasPrefix("   …"))
        h.run(.storeChanged)
        #expect(h.state.window.range == 37..<100)
        #expect(h.selectedTitle == "Message 100")
    }

    @Test func movingNearTheWindowEdgeLoadsAhead() {
        var h = Harness(notifications: Fixtures.many(100))
        for _ in 0..<41 { #expect(h.send(.key(.ch("j"))) == []) }
        // Row 62 is the last loaded; with the selection at 42 the screen shows rows 22…42.
        _ = h.send(.key(.pageDown))
        #expect(h.state.selection == 62)
        let effects = h.send(.key(.ch("j")))
        #expect(effects == [.load(WindowRequest(view: .unread, anchorId: nil, index: 63, span: 63))])
    }

    // MARK: - Views

    @Test func tabAndShiftTabWrap() {
        var h = Harness(view: .all)
        #expect(h.send(.key(.tab)) == [.load(WindowRequest(view: .unread, index: 0, span: 42))])
        #expect(h.state.view == .unread)
        #expect(h.send(.key(.backTab)) == [.load(WindowRequest(view: .all, index: 0, span: 42))])
        #expect(h.state.view == .all)
        _ = h.send(.key(.backTab))
        #expect(h.state.view == .snoozed)
    }

    @Test("1…6 switch views", arguments: Array(NotificationView.allCases.enumerated()))
    func digitsSwitchViews(_ index: Int, _ view: NotificationView) {
        var h = Harness(view: view == .unread ? .all : .unread)
        _ = h.send(.key(.ch("j")))
        let effects = h.send(.key(.ch(Character(String(index + 1)))))
        #expect(effects == [.load(WindowRequest(view: view, anchorId: nil, index: 0, span: 42))])
        #expect(h.state.view == view)
        #expect(h.state.selection == 0)
        h.run(.storeChanged)
        #expect(h.state.total == h.store.counts[view])
    }

    @Test func switchingViewsShowsLoadingUntilAnswered() {
        var h = Harness()
        _ = h.send(.key(.ch("2")))
        #expect(render(h.state).lines().contains { $0.contains("Loading…") })
        #expect(h.send(.key(.ch("d"))) == [], "no row to act on yet")
    }

    @Test func answersForAViewAlreadyLeftAreIgnored() {
        var h = Harness()
        let unreadAnswer = h.store.answer(WindowRequest(view: .unread, span: 63))
        _ = h.send(.key(.ch("6")))
        _ = h.send(unreadAnswer)
        #expect(!h.state.isWindowCurrent, "the Unread rows are not shown under the All tab")
    }

    // MARK: - The store changes under the list

    @Test func storeChangedReloadsAnchoredOnTheSelection() {
        var h = Harness(view: .all)
        _ = h.send(.key(.ch("j")))
        _ = h.send(.key(.ch("j")))
        #expect(h.send(.storeChanged) == [.load(WindowRequest(view: .all, anchorId: Fixtures.id(3), index: 2, span: 63))])
    }

    @Test func selectionStaysOnTheSameNotificationWhenRowsArriveAbove() {
        var h = Harness(view: .all)
        _ = h.send(.key(.ch("j")))
        let selected = h.state.selectedId
        h.store.notifications.append(Fixtures.note(99, "ci.acme.io", "main", "Build #4822 started", ago: 0))
        h.run(.storeChanged)
        #expect(h.state.selectedId == selected)
        #expect(h.state.selection == 2)
        #expect(h.state.counts.all == 18)
    }

    @Test func aNotificationThatLeavesMovesTheSelectionToItsNeighbour() {
        var h = Harness()
        _ = h.send(.key(.ch("j")))
        // Dismissed on another device.
        let i = h.store.notifications.firstIndex { $0.id == Fixtures.id(2) }!
        h.store.notifications[i].userActionState = .dismissed
        h.run(.storeChanged)
        #expect(h.state.selection == 1)
        #expect(h.state.selectedId == Fixtures.id(3))
    }

    @Test func fewerRowsClampTheSelection() {
        var h = Harness(view: .all)
        _ = h.send(.key(.ch("G")))
        let window = ViewWindow(view: .all, total: 3, rows: Array(Fixtures.notifications.prefix(3)))
        #expect(h.send(.loaded(window, counts: ViewCounts(), selection: 16)) == [])
        #expect(h.state.selection == 2)
        #expect(h.state.selectedId == Fixtures.id(3))
        let empty = ViewWindow(view: .all, total: 0, rows: [])
        _ = h.send(.loaded(empty, counts: ViewCounts(), selection: 2))
        #expect(h.state.selection == 0)
        #expect(h.state.selectedId == nil)
        #expect(render(h.state).lines().contains { $0.contains("No notifications yet.") })
    }

    @Test func ticksReloadWhenASnoozeEnds() {
        var h = Harness(view: .snoozed)
        #expect(h.send(.tick(Fixtures.now.addingTimeInterval(60))) == [])
        let later = Fixtures.now.addingTimeInterval(3601)
        let effects = h.send(.tick(later))
        #expect(effects == [.load(WindowRequest(view: .snoozed, anchorId: Fixtures.id(8), index: 0, span: 63))])
        #expect(h.send(.tick(later.addingTimeInterval(1))) == [], "one reload at a time")
        h.store.now = later
        _ = h.send(h.store.answer(WindowRequest(view: .snoozed, span: 63)))
        #expect(h.state.total == 1)
        #expect(h.state.counts.unread == 8, "the ended snooze is back in Unread")
    }

    @Test func ticksUpdateAges() {
        var h = Harness()
        #expect(render(h.state).lines()[1].contains(" 2m "))
        _ = h.send(.tick(Fixtures.now.addingTimeInterval(3600)))
        #expect(render(h.state).lines()[1].contains(" 1h "))
    }

    // MARK: - n and p

    @Test func nextAndPreviousUnread() {
        var h = Harness(view: .all)
        _ = h.send(.key(.ch("G")))
        _ = h.send(.key(.ch("p")))
        #expect(h.selectedTitle == "Recovered: 服务器告警 resolved")
        _ = h.send(.key(.ch("p")))
        #expect(h.selectedTitle == "Renew TLS certificate for api.acme.io")
        _ = h.send(.key(.ch("n")))
        #expect(h.selectedTitle == "Recovered: 服务器告警 resolved")
        #expect(h.send(.key(.ch("n"))) == [])
        #expect(h.state.message == "No unread below")
    }

    @Test("n and p look in the whole view, past the loaded rows, and say so when there is none")
    func nextUnreadBeyondTheLoadedRows() {
        var rows = Fixtures.many(500)
        for i in rows.indices where i != 420 && i != 7 { rows[i].readState = .read }
        var h = Harness(view: .all, notifications: rows)
        #expect(!h.state.window.range.contains(420), "the test needs row 420 outside the first window")
        h.keys(.ch("j"), .ch("j"), .ch("j"), .ch("j"), .ch("j"), .ch("j"), .ch("j"), .ch("j"))
        #expect(h.state.selection == 8)
        #expect(h.send(.key(.ch("n"))).first.map { if case .findUnread = $0 { true } else { false } } == true)
        h.keys(.ch("n"))
        #expect(h.selectedTitle == "Message 421" && h.state.selection == 420)
        #expect(h.state.window.range.contains(420))
        h.keys(.ch("n"))
        #expect(h.state.message == "No unread below" && h.state.selection == 420)
        h.keys(.ch("G"))
        h.keys(.ch("p"))
        #expect(h.selectedTitle == "Message 421")
        h.keys(.ch("p"))
        #expect(h.selectedTitle == "Message 8" && h.state.selection == 7)
        h.keys(.ch("p"))
        #expect(h.state.message == "No unread above" && h.state.selection == 7)
    }

    // MARK: - Resizing

    @Test func resizeKeepsTheSelectionVisible() {
        var h = Harness(view: .all)
        _ = h.send(.key(.ch("G")))
        _ = h.send(.resize(Size(columns: 40, rows: 10)))
        #expect(h.state.top == 16 - 7 + 1)
        #expect(render(h.state).lines()[7].contains("Pay the Hetzner"))
        _ = h.send(.resize(Size(columns: 30, rows: 8)))
        #expect(render(h.state).lines()[0] == "terminal too small (need 40×1…")
        _ = h.send(.resize(Size(columns: 80, rows: 24)))
        #expect(h.state.top == 0)
    }

    // MARK: - The shell's side of a request

    @Test func windowRequestAnswer() {
        let rows = Fixtures.many(100)
        let anchored = WindowRequest(view: .unread, anchorId: Fixtures.id(1050), index: 3, span: 20).answer(from: rows)
        #expect(anchored.selection == 49)
        #expect(anchored.window.range == 39..<59)
        let gone = WindowRequest(view: .unread, anchorId: "gone", index: 120, span: 20).answer(from: rows)
        #expect(gone.selection == 99)
        #expect(gone.window.range == 80..<100)
        let none = WindowRequest(view: .unread, index: 5, span: 20).answer(from: [])
        #expect(none.selection == 0)
        #expect(none.window.total == 0)
    }
}

@Suite("Saved views as tabs (PROTOCOL.md §17)")
struct SavedViewTabTests {
    static let tabs = [
        SavedViewTab(name: "builds", query: "app:ci.example.com", count: 12), SavedViewTab(name: "db", query: "disk -replica", count: nil),
    ]

    @Test("7 and 8 open the saved views (All with their search), 9 without one says how to make one; Tab goes through them and wraps to Unread")
    func keysAndTab() {
        var h = Harness(view: .unread)
        h.run(.savedViews(Self.tabs))
        #expect(h.send(.key(.ch("7"))) == [.load(WindowRequest(view: .all, query: "app:ci.example.com", index: 0, span: 22))])
        #expect(h.state.savedTab == 0 && h.state.view == .all)
        _ = h.send(.key(.tab))
        #expect(h.state.savedTab == 1 && h.state.query == "disk -replica")
        _ = h.send(.key(.tab))
        #expect(h.state.savedTab == nil && h.state.view == .unread && h.state.query == "", "wraps to the first view, leaving the search")
        _ = h.send(.key(.backTab))
        #expect(h.state.savedTab == 1)
        #expect(h.send(.key(.ch("9"))) == [] && h.state.message?.contains("notty view add") == true)
        _ = h.send(.key(.ch("3")))
        #expect(h.state.savedTab == nil && h.state.view == .activated && h.state.query == "")
    }

    @Test("the tab bar shows the saved views with their counts after All, the current one reversed; a narrow terminal shortens them")
    func tabBar() {
        var h = Harness(view: .unread)
        h.run(.savedViews(Self.tabs))
        _ = h.send(.key(.ch("8")))
        let bar = render(h.state).lines()[0]
        #expect(bar.contains("builds 12") && bar.contains("db …"), "\(bar)")
        let spans = TabBar.spans(counts: ViewCounts(), current: nil, saved: Self.tabs, savedTab: 1, width: 200)
        #expect(spans.last?.text == " db … " && spans.last?.style.reverse == true)
        #expect(TabBar.spans(counts: ViewCounts(), current: .all, saved: Self.tabs, width: 40).width <= 40)
    }

    @Test("a saved view changed elsewhere reloads its tab with the new search; removed, its tab leaves for All; a search of one's own leaves the tab")
    func followsTheStore() {
        var h = Harness(view: .unread)
        h.run(.savedViews(Self.tabs))
        _ = h.send(.key(.ch("7")))
        var changed = Self.tabs
        changed[0].query = "app:ci.example.com is:unread"
        #expect(h.send(.savedViews(changed)) == [.load(WindowRequest(view: .all, query: "app:ci.example.com is:unread", index: 0, span: 22))])
        #expect(h.send(.savedViews(changed)) == [], "the same again: nothing to load")
        _ = h.send(.savedViews([changed[1]]))
        #expect(h.state.savedTab == nil && h.state.view == .all && h.state.query == "")
        _ = h.send(.key(.ch("7")))
        h.run(.key(.ch("/")))
        for character in " build" { h.run(.key(.ch(character))) }
        h.run(.key(.enter))
        #expect(h.state.savedTab == nil && h.state.query == "disk -replica build")
    }

    @Test("Enter on a search the query language cannot read keeps it open and says what to write")
    func refusedSearch() {
        var h = Harness(view: .unread)
        h.run(.key(.ch("/")))
        for character in "colour:red" { h.run(.key(.ch(character))) }
        #expect(h.send(.key(.enter)) == [])
        #expect(h.state.prompt == .search("colour:red") && h.state.message?.hasPrefix("search: no field colour:") == true)
        #expect(render(h.state).lines().last?.contains("no field colour:") == true)
    }
}
