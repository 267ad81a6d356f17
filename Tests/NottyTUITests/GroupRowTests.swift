import Foundation
import NottyCore
import Testing

@testable import NottyTUI

@Suite("Group rows: = Enter Esc d r a u")
struct GroupRowTests {
    /// The All view folded into group rows.
    static func folded() -> Harness {
        var h = Harness(view: .all)
        h.keys(.ch("="))
        return h
    }

    @Test func equalsFoldsTheViewIntoGroupsWithCountAndNewestTime() {
        let h = Self.folded()
        #expect(h.state.showingGroups)
        let groups = h.state.currentGroups ?? []
        #expect(
            groups.map(\.key) == [
                "main", "production", "cn-north", "#ops", "notty", "reminders", "eu-west", "@carol", "release-2.0", "#general", "staging",
            ])
        let reminders = groups.first { $0.key == "reminders" }
        #expect(reminders?.count == 3)
        #expect(reminders?.unread == 2)
        #expect(h.state.total == groups.count)
        let screen = render(h.state).lines().joined(separator: "\n")
        #expect(screen.contains("calendar.acme.io/reminders"))
        #expect(screen.contains("3 notifications, 2 unread"))
        #expect(screen.contains(" 2h "), "the newest one's age")
    }

    @Test func enterOpensAGroupAndEscGoesBackToIt() {
        var h = Self.folded()
        h.keys(.ch("j"), .ch("j"), .ch("j"), .ch("j"), .ch("j"))
        #expect(h.state.selectedGroup?.key == "reminders")
        h.keys(.enter)
        #expect(!h.state.showingGroups)
        #expect(h.state.query == "groupkey:reminders")
        #expect(h.titles == ["Standup in 15 minutes", "Renew TLS certificate for api.acme.io", "Pay the Hetzner invoice"])
        #expect(render(h.state).lines().last?.hasPrefix("Group reminders · 3 notifications · Esc back to the groups") == true)
        h.keys(.escape)
        #expect(h.state.showingGroups)
        #expect(h.state.selectedGroup?.key == "reminders", "back on the group left")
    }

    @Test func dOnAGroupRowDismissesExactlyThatGroupAsOneStepThatUUndoes() {
        var h = Self.folded()
        h.keys(.ch("G"))
        h.keys(.ch("k"), .ch("k"), .ch("k"), .ch("k"), .ch("k"))
        #expect(h.state.selectedGroup?.key == "reminders")
        let before = h.store.notifications
        let effects = h.keys(.ch("d"))
        let ids = Set(before.filter { $0.groupKey == "reminders" }.map(\.id))
        #expect(effects.count == 2, "one read of the group, one write")
        guard case .mutate(let changes)? = effects.last else {
            Issue.record("no write: \(effects)")
            return
        }
        #expect(Set(changes.map(\.id)) == ids)
        #expect(h.state.message == "Dismissed 3 notifications")
        for row in h.store.notifications {
            if ids.contains(row.id) {
                #expect(row.userActionState == .dismissed)
            } else {
                #expect(before.contains(row), "nothing outside the group changed")
            }
        }
        h.keys(.ch("u"))
        #expect(h.store.notifications == before, "one undo brings the whole group back")
        #expect(h.state.message == "Undid dismiss of 3 notifications")
    }

    @Test func rOnAGroupRowMarksItAllReadThenAllUnread() {
        var h = Harness(view: .unread)
        h.keys(.ch("="))
        #expect(h.state.selectedGroup?.key == "main")
        h.keys(.ch("r"))
        #expect(h.store.notifications.first { $0.id == Fixtures.id(1) }?.readState == .read)
        #expect(h.state.currentGroups?.contains { $0.key == "main" } == false, "the group left Unread")
        #expect(h.state.selectedGroup?.key == "production", "the selection stays at its place")
    }

    @Test func equalsAgainUnfoldsAndClosesAnOpenGroup() {
        var h = Self.folded()
        h.keys(.enter)
        #expect(h.state.query == "groupkey:main")
        h.keys(.ch("="))
        #expect(!h.state.grouping)
        #expect(h.state.query == "")
        #expect(h.state.total == 17)
    }

    @Test func keysThatNeedOneNotificationSayWhatToDoOnAGroupRow() {
        var h = Self.folded()
        for key in ["s", "x", "o", " "] as [Character] {
            #expect(h.keys(.ch(key)) == [])
            #expect(h.state.message == "On a group row: Enter opens it, d r a act on all of it")
        }
    }

    @Test func aGroupOfOneIsItsNotificationAndTheKeysActOnIt() {
        var h = Self.folded()
        h.keys(.ch("j"))
        let production = h.state.selectedGroup
        #expect(production?.key == "production" && production?.count == 1)
        let lone = production?.lone
        #expect(lone?.displayTitle.hasPrefix("デプロイ完了") == true)
        #expect(h.state.selectedRow == lone, "the row is the notification")
        let screen = render(h.state).lines().joined(separator: "\n")
        #expect(!screen.contains("1 notification"), "no “1 notification” row:\n\(screen)")
        #expect(screen.contains("2 notifications, 1 unread · Build #4821"), "a group row shows its newest title:\n\(screen)")

        // Enter opens its detail (and marks it read), as on any row; Esc closes it, still folded.
        h.keys(.enter)
        #expect(h.state.detail?.notification.id == lone?.id)
        #expect(h.store.notifications.first { $0.id == lone?.id }?.readState == .read)
        h.keys(.escape)
        #expect(h.state.detail == nil && h.state.showingGroups)

        // d dismisses that notification alone; u brings it back.
        let before = h.store.notifications
        let effects = h.keys(.ch("d"))
        guard case .mutate(let changes)? = effects.first else {
            Issue.record("no write: \(effects)")
            return
        }
        #expect(changes.map(\.id) == [lone?.id], "one change, no read of a group first")
        #expect(h.state.message == "Dismissed 1 notification")
        h.keys(.ch("u"))
        #expect(h.store.notifications == before)

        // s and x ask about it (snooze for how long, delete?) instead of refusing.
        h.keys(.ch("j"), .ch("k"))
        h.keys(.ch("s"))
        #expect(h.state.message != "On a group row: Enter opens it, d r a act on all of it")
        #expect(h.state.prompt != nil, "s on a lone notification asks for how long")
    }

    @Test func aSearchFoldsItsMatchesOnly() {
        var h = Self.folded()
        h.keys(.ch("/"), .ch("a"), .ch("c"), .ch("m"), .ch("e"), .ch("."), .ch("i"), .ch("o"), .enter)
        #expect(h.state.showingGroups)
        h.keys(.escape)
        h.keys(.ch("/"), .ch("B"), .ch("u"), .ch("i"), .ch("l"), .ch("d"), .enter)
        #expect(h.state.currentGroups?.map(\.key) == ["main", "release-2.0"])
    }
}
