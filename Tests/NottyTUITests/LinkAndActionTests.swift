import Foundation
import NottyCore
import Testing

@testable import NottyTUI

@Suite("o: open the link")
struct OpenLinkTests {
    @Test("o opens the selected notification's link and activates it; without a link it says so and changes nothing")
    func openLink() {
        var rows = Fixtures.notifications
        rows[0].launchUrl = "https://ci.acme.io/runs/4812"
        var h = Harness(view: .all, notifications: rows)
        let effects = h.send(.key(.ch("o")))
        #expect(
            effects == [
                .mutate([IdChange(id: rows[0].id, change: StateChange(readState: .read, userActionState: .activated))]),
                .open(url: "https://ci.acme.io/runs/4812"),
            ])
        var plain = Harness(view: .all, notifications: Fixtures.notifications)
        #expect(plain.send(.key(.ch("o"))) == [])
        #expect(plain.state.message == "No link to open")
    }

    @Test("the detail shows the link")
    func detailShowsTheLink() {
        var rows = Fixtures.notifications
        rows[0].launchUrl = "https://ci.acme.io/runs/4812"
        var h = Harness(size: Size(columns: 120, rows: 40), view: .all, notifications: rows)
        h.keys(.enter)
        #expect(render(h.state).lines().contains { $0.contains("Link") && $0.contains("https://ci.acme.io/runs/4812") })
    }

    @Test("the detail shows where it was escalated (PROTOCOL.md §11): each target, when, by which rule, and a failure")
    func detailShowsEscalations() {
        var rows = Fixtures.notifications
        var h = Harness(size: Size(columns: 120, rows: 40), view: .all, notifications: rows)
        rows[0].escalations = [
            EscalationRecord(target: "ntfy:https://ntfy.sh/alerts", rule: "night", at: h.state.now - 120, outcome: "sent"),
            EscalationRecord(target: "command:sms", rule: "night", at: h.state.now - 60, outcome: "failed", error: "answered 503"),
        ]
        h = Harness(size: Size(columns: 120, rows: 40), view: .all, notifications: rows)
        h.keys(.enter)
        let lines = render(h.state).lines()
        #expect(lines.contains { $0.contains("Escalated ntfy:https://ntfy.sh/alerts 2m ago") }, "\(lines)")
        #expect(lines.contains { $0.contains("Escalated command:sms 1m ago (night): failed") }, "\(lines)")
        #expect(lines.contains { $0.contains("answered 503") }, "\(lines)")
    }
}

@Suite("!: a notification's actions (PROTOCOL.md §12)")
struct RunActionTests {
    static func rows(now: Date) -> [UserNotification] {
        var rows = Fixtures.notifications
        rows[0].actions = [
            NotificationAction(kind: .http, label: "Silence 1h", clear: true),
            NotificationAction(kind: .view, label: "Runbook", url: "https://wiki.acme.io/disk"),
        ]
        return rows
    }

    @Test(
        "! then a digit: an http action is the service's to run, a view action opens its link and activates; Esc or another key runs nothing; no actions: it says so"
    )
    func digits() {
        var h = Harness(view: .all)
        let rows = Self.rows(now: h.state.now)
        h = Harness(view: .all, notifications: rows)
        #expect(render(h.state).lines().last?.contains("! actions") == true)
        #expect(h.send(.key(.ch("!"))) == [])
        #expect(
            render(h.state).lines().last?.contains("Run: 1) Silence 1h  2) Runbook  Esc) cancel") == true, "\(render(h.state).lines().last ?? "")")
        #expect(h.send(.key(.ch("1"))) == [.runAction(id: rows[0].id, number: 1, label: "Silence 1h")])
        #expect(h.state.message == "Silence 1h: running…")
        _ = h.send(.key(.ch("!")))
        #expect(
            h.send(.key(.ch("2"))) == [
                .mutate([IdChange(id: rows[0].id, change: StateChange(readState: .read, userActionState: .activated))]),
                .open(url: "https://wiki.acme.io/disk"),
            ])
        _ = h.send(.key(.ch("!")))
        #expect(h.send(.key(.escape)) == [])
        #expect(h.state.message == "No action run")
        _ = h.send(.key(.ch("!")))
        #expect(h.send(.key(.ch("7"))) == [])
        #expect(h.state.message == "No action 7")
        var plain = Harness(view: .all, notifications: Fixtures.notifications)
        #expect(plain.send(.key(.ch("!"))) == [])
        #expect(plain.state.message == "No actions on this notification")
    }

    @Test("the detail lists the actions, numbered, with their outcome")
    func detailListsActions() {
        var h = Harness(view: .all)
        var rows = Self.rows(now: h.state.now)
        rows[0].actionResults = [
            ActionResult(action: 1, label: "Silence 1h", status: .done, httpStatus: 200, device: "laptop", at: h.state.now - 120)
        ]
        h = Harness(view: .all, notifications: rows)
        h.keys(.enter)
        let lines = render(h.state).lines()
        #expect(lines.contains { $0.contains("Action    1 Silence 1h (runs on the service, then dismisses) — done on laptop") }, "\(lines)")
        #expect(lines.contains { $0.contains("Action    2 Runbook (opens https://wiki.acme.io/disk)") }, "\(lines)")
    }
}
