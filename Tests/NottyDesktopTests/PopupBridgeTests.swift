import Foundation
import NottyCore
import NottyDesktop
import NottyTestSupport
import Testing

/// The popup state machine, like the TUI's update tests: events in, effects out.
@Suite("Desktop popups: the pure bridge")
struct PopupBridgeTests {
    static func note(_ id: String, title: String = "Build failed", body: String? = "3 <tests> & more", priority: Priority = .high) -> UserNotification
    {
        .fixture(id: id, priority: priority, title: title, body: body, expires: Date(timeIntervalSince1970: 2_000_000_000))
    }

    /// A bridge with popup 7 open for notification "n1".
    static func showing() -> PopupBridge {
        var bridge = PopupBridge()
        _ = bridge.handle(.arrived(note("n1"), view: .unread))
        _ = bridge.handle(.shown(id: "n1", popupId: 7))
        return bridge
    }

    @Test("a notification that arrives in Unread pops up: title, escaped body, urgency by priority, Open and Dismiss")
    func arrivesInUnread() {
        var bridge = PopupBridge()
        let effects = bridge.handle(.arrived(Self.note("n1", priority: .low), view: .unread))
        guard case .show(let id, let content, let replacing)? = effects.first, effects.count == 1 else { Issue.record("\(effects)"); return }
        #expect(id == "n1" && replacing == 0)
        #expect(content.appName == "notty" && content.summary == "Build failed" && content.body == "3 &lt;tests&gt; &amp; more")
        #expect(content.urgency == .low && content.actions.map(\.key) == ["default", "dismiss"] && content.actions.last?.label == "Dismiss")
        var linked = Self.note("n3")
        linked.launchUrl = "https://ci.example.com/1"
        #expect(PopupContent(linked).actions.map(\.key) == ["default", "open", "dismiss"])
        #expect(PopupContent(Self.note("n2", priority: .high)).urgency == .normal)
        #expect(bridge.handle(.shown(id: "n1", popupId: 7)) == [])
        #expect(bridge.entries["n1"] == PopupBridge.Entry(popupId: 7, view: .unread))
    }

    @Test("the publisher's actions are buttons act-1…act-3 (PROTOCOL.md §12); pressing one runs it and closes the popup; an unknown key does nothing")
    func actionButtons() {
        var acting = Self.note("n1")
        acting.actions = [
            NotificationAction(kind: .http, label: "Silence 1h", clear: true),
            NotificationAction(kind: .view, label: "Runbook", url: "https://wiki.example.com"),
        ]
        let content = PopupContent(acting)
        #expect(content.actions.map(\.key) == ["default", "dismiss", "act-1", "act-2"])
        #expect(content.actions.suffix(2).map(\.label) == ["Silence 1h", "Runbook"])
        var bridge = PopupBridge()
        _ = bridge.handle(.arrived(acting, view: .unread))
        _ = bridge.handle(.shown(id: "n1", popupId: 9))
        #expect(bridge.handle(.action(popupId: 9, key: "act-9")) == [])
        var pressed = PopupBridge()
        _ = pressed.handle(.arrived(acting, view: .unread))
        _ = pressed.handle(.shown(id: "n1", popupId: 9))
        #expect(pressed.handle(.action(popupId: 9, key: "act-2")) == [.runAction(id: "n1", number: 2), .close(popupId: 9)])
        #expect(pressed.entries["n1"] == nil)
    }

    @Test(
        "one already read, dismissed, activated, snoozed or deleted elsewhere when it arrives never pops up",
        arguments: [NotificationView.read, .dismissed, .activated, .snoozed, nil] as [NotificationView?])
    func handledBeforeItArrives(_ view: NotificationView?) {
        var bridge = PopupBridge()
        #expect(bridge.handle(.arrived(Self.note("n1"), view: view)) == [])
        #expect(bridge.entries.isEmpty)
    }

    @Test("leaving Unread anywhere closes the popup", arguments: [NotificationView.read, .dismissed, .activated, nil] as [NotificationView?])
    func leavesUnread(_ view: NotificationView?) {
        var bridge = Self.showing()
        #expect(bridge.handle(.moved(id: "n1", view == nil ? nil : Self.note("n1"), view: view)) == [.close(popupId: 7)])
        #expect(bridge.entries.isEmpty)
        #expect(bridge.handle(.closed(popupId: 7, reason: 3)) == [], "our own close changes nothing")
    }

    @Test("the user closing a popup dismisses it everywhere; one that expires by itself changes nothing")
    func closedByTheUser() {
        var bridge = Self.showing()
        #expect(bridge.handle(.closed(popupId: 7, reason: 2)) == [.dismiss(id: "n1")])
        #expect(bridge.entries.isEmpty)
        var expired = Self.showing()
        #expect(expired.handle(.closed(popupId: 7, reason: 1)) == [])
        #expect(expired.handle(.closed(popupId: 99, reason: 2)) == [], "a popup that is not ours")
    }

    @Test("a click or Open activates; Dismiss dismisses; the close the daemon sends after an action does not dismiss")
    func actions() {
        var click = Self.showing()
        #expect(click.handle(.action(popupId: 7, key: "default")) == [.activate(id: "n1"), .close(popupId: 7)])
        #expect(click.handle(.closed(popupId: 7, reason: 2)) == [])
        var dismiss = Self.showing()
        #expect(dismiss.handle(.action(popupId: 7, key: "dismiss")) == [.dismiss(id: "n1"), .close(popupId: 7)])
        var other = Self.showing()
        #expect(other.handle(.action(popupId: 7, key: "snooze")) == [])
    }

    @Test("a re-publish replaces the popup in place")
    func republish() {
        var bridge = Self.showing()
        let effects = bridge.handle(.arrived(Self.note("n1", title: "Build fixed"), view: .unread))
        guard case .show("n1", let content, replacing: 7)? = effects.first else { Issue.record("\(effects)"); return }
        #expect(content.summary == "Build fixed")
        #expect(bridge.handle(.shown(id: "n1", popupId: 7)) == [] && bridge.entries["n1"]?.popupId == 7)
    }

    @Test("snoozed: the popup closes; when the snooze ends it pops up again, once")
    func snoozeEnds() {
        var bridge = Self.showing()
        #expect(bridge.handle(.moved(id: "n1", Self.note("n1"), view: .snoozed)) == [.close(popupId: 7)])
        #expect(bridge.entries["n1"] == PopupBridge.Entry(popupId: nil, view: .snoozed))
        #expect(bridge.handle(.moved(id: "n1", Self.note("n1"), view: .snoozed)) == [])
        let again = bridge.handle(.moved(id: "n1", Self.note("n1"), view: .unread))
        #expect(again.count == 1 && { if case .show("n1", _, replacing: 0) = again[0] { true } else { false } }())
        #expect(bridge.handle(.moved(id: "n1", Self.note("n1"), view: .unread)) == [], "no second popup while the first is coming")
    }

    @Test("restarted from the saved mapping: popups of notifications handled meanwhile close; the others stay; nothing pops twice")
    func restart() {
        let saved = PopupBridge(entries: ["n1": .init(popupId: 7, view: .unread), "n2": .init(popupId: 8, view: .unread)])
        var bridge = saved
        #expect(bridge.trackedIds == ["n1", "n2"])
        #expect(bridge.handle(.moved(id: "n1", Self.note("n1"), view: .dismissed)) == [.close(popupId: 7)])
        #expect(bridge.handle(.moved(id: "n2", Self.note("n2"), view: .unread)) == [])
        #expect(bridge.entries == ["n2": .init(popupId: 8, view: .unread)])
    }

    @Test("a popup shown for a notification handled while the daemon answered is closed at once")
    func handledWhileShowing() {
        var bridge = PopupBridge()
        _ = bridge.handle(.arrived(Self.note("n1"), view: .unread))
        #expect(bridge.handle(.moved(id: "n1", Self.note("n1"), view: .read)) == [])
        #expect(bridge.handle(.shown(id: "n1", popupId: 9)) == [.close(popupId: 9)])
    }

    // MARK: - Storms (PROTOCOL.md §9)

    static func alert(_ n: Int, group: String? = "HighCPU") -> UserNotification {
        .fixture(id: "a\(n)", app: "alerts.example.com", group: group, priority: .high, title: "CPU \(n)")
    }

    @Test("more than the limit of one app and group within 60 s fold into one popup, updated in place with the count")
    func stormFolds() {
        var bridge = PopupBridge(stormLimit: 3)
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        for n in 0..<3 {
            #expect(
                bridge.handle(.arrived(Self.alert(n), view: .unread, at: start + Double(n))) == [
                    .show(id: "a\(n)", PopupContent(Self.alert(n)), replacing: 0)
                ])
            _ = bridge.handle(.shown(id: "a\(n)", popupId: UInt32(10 + n)))
        }
        // The fourth within the minute: the three close and one popup stands for all four.
        let fold = bridge.handle(.arrived(Self.alert(3), view: .unread, at: start + 3))
        #expect(fold.filter { if case .close = $0 { true } else { false } }.count == 3)
        guard case .show(let stormId, let content, let replacing)? = fold.last else { Issue.record("no storm popup: \(fold)"); return }
        #expect(content.summary == "HighCPU ×4")
        #expect(content.body == "CPU 3")
        #expect(replacing == 0)
        #expect(bridge.handle(.shown(id: stormId, popupId: 20)) == [])
        // More arrive: the same popup, replaced in place.
        guard case .show(_, let more, let replacingMore)? = bridge.handle(.arrived(Self.alert(4), view: .unread, at: start + 4)).last else {
            Issue.record("no update"); return
        }
        #expect(more.summary == "HighCPU ×5")
        #expect(replacingMore == 20)
        // Another group is not in the storm.
        #expect(
            bridge.handle(.arrived(Self.alert(9, group: "Disk"), view: .unread, at: start + 5)) == [
                .show(id: "a9", PopupContent(Self.alert(9, group: "Disk")), replacing: 0)
            ])
        // One read elsewhere: the count goes down.
        guard case .show(_, let fewer, _)? = bridge.handle(.moved(id: "a0", Self.alert(0), view: .read)).first else {
            Issue.record("no update"); return
        }
        #expect(fewer.summary == "HighCPU ×4")
        // The user closes the storm's popup: every notification it stands for is dismissed.
        #expect(bridge.handle(.closed(popupId: 20, reason: 2)) == ["a1", "a2", "a3", "a4"].map { .dismiss(id: $0) })
        #expect(bridge.entries.keys.sorted() == ["a9"])
    }

    @Test(
        "a storm that arrives in one batch, before the daemon answers any popup, is one popup: singles asked for and not shown are not asked for at all; a late answer for one closes it"
    )
    func stormInOneBatch() {
        var bridge = PopupBridge(stormLimit: 5)
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        let effects = (0..<1000).flatMap { n in bridge.handle(.arrived(Self.alert(n), view: .unread, at: start + Double(n) / 100)) }
        let shows = bridge.coalesced(effects).compactMap { effect -> PopupContent? in
            if case .show(_, let content, _) = effect { content } else { nil }
        }
        #expect(shows.map(\.summary) == ["HighCPU ×1000"])
        // A few alone, the way the daemon sees them one by one: five singles, then the storm.
        var calm = PopupBridge(stormLimit: 5)
        let few = (0..<3).flatMap { n in calm.handle(.arrived(Self.alert(n), view: .unread, at: start)) }
        #expect(calm.coalesced(few).count == 3)
        // A single whose Notify was already sent when its storm began: its answer closes it.
        var racing = PopupBridge(stormLimit: 1)
        _ = racing.handle(.arrived(Self.alert(0), view: .unread, at: start))
        _ = racing.handle(.arrived(Self.alert(1), view: .unread, at: start + 1))
        #expect(racing.handle(.shown(id: "a0", popupId: 30)) == [.close(popupId: 30)])
    }

    @Test("arrivals spread over more than a minute are no storm; a storm's popup goes with its last notification; its action dismisses all")
    func stormEnds() {
        var bridge = PopupBridge(stormLimit: 2)
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        for n in 0..<4 {
            let effects = bridge.handle(.arrived(Self.alert(n), view: .unread, at: start + Double(n) * 61))
            #expect(effects == [.show(id: "a\(n)", PopupContent(Self.alert(n)), replacing: 0)], "arrival \(n): \(effects)")
        }
        var storm = PopupBridge(stormLimit: 1)
        _ = storm.handle(.arrived(Self.alert(0), view: .unread, at: start))
        _ = storm.handle(.shown(id: "a0", popupId: 1))
        guard case .show(let id, _, _)? = storm.handle(.arrived(Self.alert(1), view: .unread, at: start + 1)).last else {
            Issue.record("no storm"); return
        }
        _ = storm.handle(.shown(id: id, popupId: 2))
        #expect(storm.handle(.action(popupId: 2, key: "default")) == [.dismiss(id: "a0"), .dismiss(id: "a1"), .close(popupId: 2)])
        #expect(storm.entries.isEmpty)
        // A storm whose notifications are all handled elsewhere closes its popup.
        _ = storm.handle(.arrived(Self.alert(2), view: .unread, at: start + 2))
        _ = storm.handle(.shown(id: "a2", popupId: 3))
        guard case .show(let again, _, _)? = storm.handle(.arrived(Self.alert(3), view: .unread, at: start + 3)).last else {
            Issue.record("no storm"); return
        }
        _ = storm.handle(.shown(id: again, popupId: 4))
        _ = storm.handle(.moved(id: "a2", Self.alert(2), view: .dismissed))
        #expect(storm.handle(.moved(id: "a3", Self.alert(3), view: .dismissed)) == [.close(popupId: 4)])
    }
}
