import Foundation
import NottyCore
import Testing

@testable import NottyTUI

@Suite("Actions: a d r s x Space M u Enter")
struct ActionTests {
    static let first = Fixtures.id(1)
    static let second = Fixtures.id(2)

    // MARK: - Enter

    @Test func enterOpensTheDetailAndMarksAnUnreadRowRead() {
        var h = Harness()
        let effects = h.send(.key(.enter))
        #expect(effects == [.mutate([IdChange(id: Self.first, change: StateChange(readState: .read))])])
        #expect(h.state.detail?.notification.id == Self.first)
        #expect(h.state.detail?.notification.readState == .read)
    }

    @Test func enterOnAReadRowOnlyOpens() {
        var h = Harness(view: .read)
        #expect(h.send(.key(.enter)) == [])
        #expect(h.state.detail?.notification.id == Fixtures.id(10))
    }

    @Test("Esc, q and Enter close the detail page", arguments: [Key.escape, .ch("q"), .enter])
    func closingThePage(_ key: Key) {
        var h = Harness()
        h.keys(.enter)
        #expect(h.state.layout.isPage)
        #expect(h.send(.key(key)) == [], "closing is not quitting")
        #expect(h.state.detail == nil)
    }

    @Test func theDetailStaysOnTheOpenedNotificationAfterItLeavesUnread() {
        var h = Harness()
        h.keys(.enter)
        #expect(h.state.selectedId == Self.second, "the list moved on")
        #expect(h.state.detail?.notification.id == Self.first)
        let text = render(h.state).lines().joined(separator: "\n")
        #expect(text.contains("Build #4821 failed on main"))
        #expect(text.contains("State     Read\n") || text.contains("State     Read "))
    }

    @Test func detailPageScrolls() {
        var h = Harness(size: Size(columns: 40, rows: 10))
        h.keys(.enter)
        _ = h.send(.key(.ch("j")))
        #expect(h.state.detail?.scroll == 1)
        _ = h.send(.key(.ch("G")))
        let bottom = h.state.detail!.scroll
        #expect(bottom > 5)
        _ = h.send(.key(.down))
        #expect(h.state.detail?.scroll == bottom, "never past the end")
        _ = h.send(.key(.ch("g")))
        #expect(h.state.detail?.scroll == 0)
        #expect(render(h.state).lines()[1] == " Build #4821 failed on main             ")
    }

    @Test func actingInTheDetailPageActsOnTheShownNotificationAndCloses() {
        var h = Harness()
        h.keys(.enter)
        let effects = h.send(.key(.ch("d")))
        #expect(effects == [.mutate([IdChange(id: Self.first, change: StateChange(userActionState: .dismissed))])])
        #expect(h.state.detail == nil)
    }

    @Test func paneFollowsTheSelectionWithoutSkippingTheRowThatMovedUp() {
        var h = Harness(size: Size(columns: 120, rows: 40))
        h.keys(.enter)
        #expect(h.state.layout.placement == .right)
        #expect(h.state.detail?.notification.id == Self.first)
        h.keys(.ch("j"))
        #expect(h.state.detail?.notification.id == Self.second, "the row that took the opened one's place")
        h.keys(.ch("j"))
        #expect(h.state.detail?.notification.id == Fixtures.id(3))
        #expect(h.send(.key(.ch("q"))) == [], "q closes the pane first")
        #expect(h.state.detail == nil)
        #expect(h.send(.key(.ch("q"))) == [.quit])
    }

    @Test func paneShowsTheNeighbourAfterActingOnTheShownNotification() {
        var h = Harness(size: Size(columns: 120, rows: 40), view: .read)
        #expect(h.keys(.enter) == [], "already read")
        let effects = h.keys(.ch("d"))
        #expect(effects == [.mutate([IdChange(id: Fixtures.id(10), change: StateChange(userActionState: .dismissed))])])
        #expect(h.state.selectedId == Fixtures.id(13))
        #expect(h.state.detail?.notification.id == Fixtures.id(13))
    }

    @Test func rInThePaneKeepsShowingTheNotification() {
        var h = Harness(size: Size(columns: 120, rows: 40))
        h.keys(.enter)
        let effects = h.keys(.ch("r"))
        #expect(effects == [.mutate([IdChange(id: Self.first, change: StateChange(readState: .unread))])])
        #expect(h.state.detail?.notification.id == Self.first)
        #expect(h.state.detail?.notification.readState == .unread)
        #expect(h.state.selectedId == Self.second, "the selection stayed where it was while the row came back above it")
        #expect(h.state.selection == 1)
    }

    @Test func deleteInThePaneMovesOnToTheNeighbour() {
        var h = Harness(size: Size(columns: 120, rows: 40), view: .all)
        h.keys(.enter, .ch("x"))
        #expect(h.keys(.ch("y")) == [.delete([Self.first])])
        #expect(h.state.detail?.notification.id == Self.second)
    }

    // MARK: - Single-key state changes

    @Test func activate() {
        var h = Harness()
        #expect(h.send(.key(.ch("a"))) == [.mutate([IdChange(id: Self.first, change: StateChange(readState: .read, userActionState: .activated))])])
    }

    @Test func dismiss() {
        var h = Harness()
        #expect(h.send(.key(.ch("d"))) == [.mutate([IdChange(id: Self.first, change: StateChange(userActionState: .dismissed))])])
        #expect(h.state.message == "Dismissed 1 notification")
    }

    @Test func dismissMovesTheSelectionToTheNeighbour() {
        var h = Harness()
        h.keys(.ch("j"), .ch("d"))
        #expect(h.state.selection == 1)
        #expect(h.state.selectedId == Fixtures.id(3))
        #expect(h.state.counts.dismissed == 3)
        #expect(h.state.counts.unread == 6)
    }

    @Test func rTogglesReadAndUnread() {
        var h = Harness(view: .all)
        #expect(h.run(.key(.ch("r"))) == [.mutate([IdChange(id: Self.first, change: StateChange(readState: .read))])])
        #expect(h.state.selectedRow?.readState == .read)
        #expect(h.run(.key(.ch("r"))) == [.mutate([IdChange(id: Self.first, change: StateChange(readState: .unread))])])
        #expect(h.state.selectedRow?.readState == .unread)
    }

    static let snoozeChoices: [(Character, Date)] = [
        ("1", Fixtures.now.addingTimeInterval(15 * 60)),
        ("2", Fixtures.now.addingTimeInterval(3600)),
        ("3", Fixtures.now.addingTimeInterval(4 * 3600)),
        ("4", ISOTime.parse("2026-03-15T09:00:00Z")!),
    ]

    @Test("s then 1…4 snoozes", arguments: snoozeChoices)
    func snooze(_ key: Character, _ until: Date) {
        var h = Harness()
        #expect(h.send(.key(.ch("s"))) == [])
        #expect(h.state.prompt == .snooze([Fixtures.notifications[0]]))
        let effects = h.send(.key(.ch(key)))
        #expect(effects == [.mutate([IdChange(id: Self.first, change: StateChange(userActionState: .snoozed, snoozedUntil: until))])])
        #expect(h.state.prompt == nil)
    }

    @Test func tomorrowNineIsInTheStatesTimeZone() {
        var h = Harness()
        h.state.timeZone = TimeZone(identifier: "Asia/Tokyo")!  // 19:00 there
        _ = h.send(.key(.ch("s")))
        let effects = h.send(.key(.ch("4")))
        let until = ISOTime.parse("2026-03-15T00:00:00Z")!  // 09:00 in Tokyo
        #expect(effects == [.mutate([IdChange(id: Self.first, change: StateChange(userActionState: .snoozed, snoozedUntil: until))])])
    }

    @Test("s then Esc or another key does nothing", arguments: [Key.escape, .ch("9"), .ch("d")])
    func snoozeCancelled(_ key: Key) {
        var h = Harness()
        _ = h.send(.key(.ch("s")))
        #expect(h.send(.key(key)) == [])
        #expect(h.state.prompt == nil)
        #expect(h.state.message == "Not snoozed")
    }

    // MARK: - Delete

    @Test func deleteAsksThenDeletes() {
        var h = Harness()
        #expect(h.send(.key(.ch("x"))) == [])
        #expect(render(h.state).lines().last!.hasPrefix("Delete 1 notification? y/n"))
        #expect(h.run(.key(.ch("y"))) == [.delete([Self.first])])
        #expect(h.state.counts.all == 16)
        #expect(h.state.selectedId == Self.second)
    }

    @Test("x then n, Esc or another key keeps it", arguments: [Key.ch("n"), .escape, .ch("x")])
    func deleteDeclined(_ key: Key) {
        var h = Harness()
        _ = h.send(.key(.ch("x")))
        #expect(h.send(.key(key)) == [])
        #expect(h.state.prompt == nil)
        #expect(h.state.message == "Not deleted")
    }

    // MARK: - Marks

    @Test func spaceMarksAndMovesDown() {
        var h = Harness()
        #expect(h.send(.key(.ch(" "))) == [])
        #expect(h.state.marked == [Self.first])
        #expect(h.state.selection == 1)
        _ = h.send(.key(.ch("k")))
        _ = h.send(.key(.ch(" ")))
        #expect(h.state.marked.isEmpty, "Space again unmarks")
    }

    @Test func marksActTogetherThenClear() {
        var h = Harness()
        h.keys(.ch(" "), .ch(" "))
        let effects = h.send(.key(.ch("d")))
        #expect(
            effects == [
                .mutate([
                    IdChange(id: Self.first, change: StateChange(userActionState: .dismissed)),
                    IdChange(id: Self.second, change: StateChange(userActionState: .dismissed)),
                ])
            ])
        #expect(h.state.marked.isEmpty)
    }

    @Test("marks work for every action", arguments: ["a", "r", "s", "x"] as [Character])
    func marksForEveryAction(_ key: Character) {
        var h = Harness()
        h.keys(.ch(" "), .ch("j"), .ch(" "))
        var effects = h.send(.key(.ch(key)))
        if key == "s" { effects = h.send(.key(.ch("1"))) }
        if key == "x" { effects = h.send(.key(.ch("y"))) }
        let ids: [String] =
            switch effects.first {
            case .mutate(let changes): changes.map(\.id)
            case .delete(let ids): ids
            default: []
            }
        #expect(ids == [Self.first, Fixtures.id(3)])
        #expect(h.state.marked.isEmpty)
    }

    @Test func marksSurviveScrollingOutOfTheWindow() {
        var h = Harness(notifications: Fixtures.many(100))
        h.keys(.ch(" "))
        h.keys(.ch("G"))
        h.keys(.ch(" "))
        let effects = h.send(.key(.ch("d")))
        #expect(
            effects == [
                .mutate([
                    IdChange(id: Fixtures.id(1100), change: StateChange(userActionState: .dismissed)),
                    IdChange(id: Fixtures.id(1001), change: StateChange(userActionState: .dismissed)),
                ])
            ])
    }

    @Test func escClearsMarks() {
        var h = Harness()
        h.keys(.ch(" "), .ch(" "))
        #expect(h.send(.key(.escape)) == [])
        #expect(h.state.marked.isEmpty)
        #expect(h.send(.key(.ch("d"))) == [.mutate([IdChange(id: Fixtures.id(3), change: StateChange(userActionState: .dismissed))])])
    }

    // MARK: - Mark all read

    @Test func markAllReadAsksFirst() {
        var h = Harness()
        #expect(h.send(.key(.ch("M"))) == [])
        #expect(h.state.prompt == .confirmMarkAllRead(view: .unread, query: "", count: 7))
        #expect(h.run(.key(.ch("y"))) == [.markAllRead(view: .unread, query: "")])
        #expect(h.state.counts.unread == 0)
        #expect(h.state.counts.read == 11)
    }

    @Test func markAllReadDeclined() {
        var h = Harness()
        _ = h.send(.key(.ch("M")))
        #expect(h.send(.key(.ch("n"))) == [])
        #expect(h.state.prompt == nil)
    }

    @Test func markAllReadUsesTheSearch() {
        var h = Harness(view: .all)
        h.keys(.ch("/"), .ch("b"), .ch("u"), .ch("i"), .ch("l"), .ch("d"), .enter)
        _ = h.send(.key(.ch("M")))
        #expect(h.send(.key(.ch("y"))) == [.markAllRead(view: .all, query: "build")])
    }

    // MARK: - Undo

    @Test func undoRestoresTheReadState() {
        var h = Harness(view: .all)
        h.keys(.ch("r"))
        #expect(h.store.notifications[0].readState == .read)
        let effects = h.send(.key(.ch("u")))
        #expect(effects == [.mutate([IdChange(id: Self.first, change: StateChange(readState: .unread))])])
        #expect(h.state.message == "Undid mark read of 1 notification")
        #expect(h.send(.key(.ch("u"))) == [])
        #expect(h.state.message == "Nothing to undo")
    }

    @Test func undoRestoresOnlyWhatTheActionChanged() {
        var h = Harness(view: .all)
        // Row 9 (Renew TLS…) is Snoozed until tomorrow and Unread.
        h.keys(.ch("j"), .ch("j"), .ch("j"), .ch("j"), .ch("j"), .ch("j"), .ch("j"), .ch("j"), .ch("j"), .ch("j"))
        #expect(h.state.selectedId == Fixtures.id(9))
        h.keys(.ch("d"))
        let until = Fixtures.now.addingTimeInterval(23 * 3600)
        #expect(
            h.send(.key(.ch("u"))) == [.mutate([IdChange(id: Fixtures.id(9), change: StateChange(userActionState: .snoozed, snoozedUntil: until))])])
    }

    @Test func undoOfActivateRestoresBothFields() {
        var h = Harness()
        h.keys(.ch(" "), .ch(" "), .ch("a"))
        #expect(
            h.send(.key(.ch("u"))) == [
                .mutate([
                    IdChange(id: Self.first, change: StateChange(readState: .unread, userActionState: .noInteraction)),
                    IdChange(id: Self.second, change: StateChange(readState: .unread, userActionState: .noInteraction)),
                ])
            ])
    }

    @Test func undoOfEnterMarksUnreadAgain() {
        var h = Harness()
        h.keys(.enter, .escape)
        #expect(h.send(.key(.ch("u"))) == [.mutate([IdChange(id: Self.first, change: StateChange(readState: .unread))])])
    }

    @Test func deleteCannotBeUndone() {
        var h = Harness()
        h.keys(.ch("x"), .ch("y"))
        #expect(h.send(.key(.ch("u"))) == [])
        #expect(h.state.message == "Delete is final: it cannot be undone")
    }

    @Test("u undoes M as one step: the notifications that were Unread become Unread again, the others stay Read")
    func markAllReadIsUndoneAsOneStep() {
        var h = Harness(view: .all)
        let wereUnread = h.store.notifications.filter { $0.readState == .unread }.map(\.id)
        #expect(wereUnread.count > 1 && wereUnread.count < h.store.notifications.count)
        h.keys(.ch("M"), .ch("y"))
        #expect(h.store.notifications.allSatisfy { $0.readState == .read })
        let undo = h.run(.key(.ch("u")))
        #expect(undo.count == 1, "undo is one change, not one per notification")
        guard case .mutate(let changes)? = undo.first else { Issue.record("undo did not change state: \(undo)"); return }
        #expect(Set(changes.map(\.id)) == Set(wereUnread) && changes.allSatisfy { $0.change == StateChange(readState: .unread) })
        #expect(Set(h.store.notifications.filter { $0.readState == .unread }.map(\.id)) == Set(wereUnread))
        #expect(h.state.message == "Undid mark all read of \(wereUnread.count) notifications")
        #expect(h.send(.key(.ch("u"))) == [])
    }

    // MARK: - Empty views

    @Test("actions on an empty view do nothing", arguments: ["a", "d", "r", "s", "x", " ", "M"] as [Character])
    func emptyView(_ key: Character) {
        var h = Harness(notifications: [])
        #expect(h.send(.key(.ch(key))) == [])
        #expect(h.state.prompt == nil)
        #expect(h.state.message == "Nothing here to act on")
        #expect(h.send(.key(.enter)) == [])
        #expect(h.state.detail == nil)
    }

    // MARK: - Search, sync, help, quit

    @Test func searchTypesAppliesAndClears() {
        var h = Harness(view: .all)
        #expect(h.send(.key(.ch("/"))) == [])
        for c in "deployx" { _ = h.send(.key(.ch(c))) }
        _ = h.send(.key(.backspace))
        #expect(h.state.prompt == .search("deploy"))
        #expect(render(h.state).cursor?.column == 7)
        #expect(h.send(.key(.enter)) == [.load(WindowRequest(view: .all, query: "deploy", index: 0, span: 22))])
        h.run(.storeChanged)
        #expect(h.state.total == 3, "two from deploy.acme.io, one mentions a deploy")
        #expect(h.send(.key(.escape)) == [.load(WindowRequest(view: .all, query: "", index: 0, span: 42))])
        #expect(h.state.query == "")
    }

    @Test("a search answered before its matches are counted ends at the loaded rows, says it is counting, and takes the count on the next load")
    func searchBeforeCounting() {
        var h = Harness(view: .all)
        h.keys(.ch("/"), .ch("d"), .ch("e"), .ch("p"), .ch("l"), .ch("o"), .ch("y"), .enter)
        let matching = h.store.matching(.all, query: "deploy")
        #expect(matching.count == 3)
        let firstTwo = ViewWindow(view: .all, query: "deploy", total: 2, rows: Array(matching.prefix(2)), counted: false)
        h.run(.loaded(firstTwo, counts: h.store.counts, selection: 0))
        #expect(h.state.total == 2 && !h.state.window.isComplete)
        #expect(Golden.text(render(h.state)).contains("/deploy · 2+ matches (counting) · Esc clears"))
        _ = h.send(.key(.ch("G")))
        #expect(h.state.selection == 1, "the list ends at the loaded rows until counted")
        h.keys(.ch("M"))
        #expect(h.state.prompt == nil && h.state.message?.contains("Still counting") == true)
        h.state.message = nil
        h.run(.storeChanged)
        #expect(h.state.total == 3 && h.state.window.counted)
        #expect(Golden.text(render(h.state)).contains("/deploy · 3 matches · Esc clears"))
        #expect(h.state.selectedId == matching[1].id, "the selection stays on its row")
    }

    @Test func escInTheSearchLineCancelsAndClears() {
        var h = Harness(view: .all)
        h.keys(.ch("/"), .ch("c"), .ch("i"), .enter)
        #expect(h.state.query == "ci")
        h.keys(.ch("/"), .ch("x"))
        #expect(h.send(.key(.escape)) == [.load(WindowRequest(view: .all, query: "", index: 0, span: 42))])
        #expect(h.state.prompt == nil)
        // With no search applied, Esc only closes the line.
        h.keys(.ch("/"), .ch("x"))
        #expect(h.send(.key(.escape)) == [])
    }

    @Test func typingInTheSearchLineDoesNotTriggerKeys() {
        var h = Harness()
        _ = h.send(.key(.ch("/")))
        for c in "dxq" { #expect(h.send(.key(.ch(c))) == []) }
        #expect(h.state.prompt == .search("dxq"))
    }

    @Test("Q makes every device quiet for an hour; Q while quiet ends it")
    func quietToggle() {
        var h = Harness()
        #expect(h.send(.key(.ch("Q"))) == [.setQuiet(until: Fixtures.now.addingTimeInterval(3600))])
        #expect(h.state.message == "quiet for an hour on every device")
        var quiet = Fixtures.status
        quiet.quietUntil = Fixtures.now.addingTimeInterval(3600)
        _ = h.send(.status(quiet))
        #expect(h.send(.key(.ch("Q"))) == [.setQuiet(until: nil)])
        #expect(h.state.message == "quiet is off on every device")
        // A quiet period that has ended is not quiet: Q starts a new one.
        quiet.quietUntil = Fixtures.now.addingTimeInterval(-1)
        _ = h.send(.status(quiet))
        #expect(h.send(.key(.ch("Q"))) == [.setQuiet(until: Fixtures.now.addingTimeInterval(3600))])
    }

    @Test func syncNow() {
        var h = Harness()
        #expect(h.send(.key(.ch("R"))) == [.sync])
        #expect(h.state.message == "syncing…")
        #expect(render(h.state).lines().last!.hasPrefix("syncing…"))
        _ = h.send(.message("synced"))
        #expect(render(h.state).lines().last!.hasPrefix("synced"))
        _ = h.send(.key(.ch("j")))
        #expect(h.state.message == nil, "a key clears the message")
    }

    @Test func helpOpensAndAnyKeyClosesWithoutActing() {
        var h = Harness()
        _ = h.send(.key(.ch("?")))
        #expect(h.state.help != nil)
        #expect(render(h.state).lines().contains { $0.contains("undo the last action") })
        #expect(h.send(.key(.ch("d"))) == [])
        #expect(h.state.help == nil)
    }

    @Test func helpScrollsWhenItDoesNotFit() {
        var h = Harness(size: Size(columns: 40, rows: 10))
        _ = h.send(.key(.ch("?")))
        _ = h.send(.key(.ch("j")))
        #expect(h.state.help?.scroll == 1)
        #expect(!render(h.state).lines()[1].contains("Keys"))
        #expect(render(h.state).lines()[2].contains("move"))
        _ = h.send(.key(.ch("x")))
        #expect(h.state.help == nil)
    }

    @Test func quit() {
        var h = Harness()
        #expect(h.send(.key(.ch("q"))) == [.quit])
        _ = h.send(.key(.ch("x")))
        #expect(h.send(.key(.control("c"))) == [.quit], "Ctrl-c quits from anywhere")
    }
}
