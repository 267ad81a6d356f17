import Foundation
import NottyCore
import NottyPaging
import NottyRecords
import NottyService
import Testing

/// PROTOCOL.md §11's "unhandled" as pure functions on a clock the test sets: when a rule's clock
/// starts, restarts and stops, what is taken back, what a due track sends.
@Suite("Escalation planner (pure, on a manual clock)")
struct EscalationPlannerTests {
    let t0 = Date(timeIntervalSince1970: 1_800_000_000)
    let rule = EscalationRule(
        id: "r1", name: "night", afterSeconds: 600, targets: ["ntfy:https://ntfy.sh/a", "webhook:https://h.example/x"],
        createdDateTime: Date(timeIntervalSince1970: 1_700_000_000))

    func notification(
        _ id: String = "n1", priority: Priority = .high, created: Date? = nil, modified: Date? = nil, read: ReadState = .unread,
        action: UserActionState = .noInteraction, snoozedUntil: Date? = nil, deleted: Bool = false, group: String? = nil
    ) -> UserNotification {
        UserNotification(
            id: id, appNotificationId: id, targetHostName: "mon.example.com", groupName: group, priority: priority,
            payload: NotificationPayload(visualContent: VisualContent(title: "Disk full")), expirationDateTime: t0 + 86_400,
            createdDateTime: created ?? t0, lastModifiedDateTime: modified ?? created ?? t0,
            status: deleted ? .deleted : .active, readState: read, userActionState: action, snoozedUntil: snoozedUntil)
    }

    func plan(
        _ changed: [UserNotification], tracks: [EscalationTrack] = [], sent: [EscalationSent] = [], pending: [PendingDelivery] = [],
        rules: [EscalationRule]? = nil, now: Date, devices: [String: String] = [:]
    ) -> EscalationPlan {
        var n = 0
        return EscalationPlanner.plan(
            EscalationPlanInput(userId: "u", changed: changed, rules: rules ?? [rule], tracks: tracks, sent: sent, pending: pending, now: now),
            devices: devices
        ) {
            n += 1; return "d\(n)"
        }
    }

    @Test("unhandled means in Unread; a snooze holds it until it ends; read, activated, dismissed, deleted and expired are handled")
    func standing() {
        #expect(EscalationPlanner.standing(of: notification(), now: t0) == .unhandled)
        #expect(EscalationPlanner.standing(of: notification(read: .read), now: t0) == .handled("read"))
        #expect(EscalationPlanner.standing(of: notification(action: .activated), now: t0) == .handled("activated"))
        #expect(EscalationPlanner.standing(of: notification(action: .dismissed), now: t0) == .handled("dismissed"))
        #expect(EscalationPlanner.standing(of: notification(action: .snoozed, snoozedUntil: t0 + 60), now: t0) == .snoozed(until: t0 + 60))
        #expect(EscalationPlanner.standing(of: notification(action: .snoozed, snoozedUntil: t0 + 60), now: t0 + 61) == .unhandled, "the snooze ended")
        #expect(EscalationPlanner.standing(of: notification(deleted: true), now: t0) == .gone)
        #expect(EscalationPlanner.standing(of: notification(), now: t0 + 86_401) == .gone, "expired")
    }

    @Test("a new High notification starts the clock of each rule that covers it; Low and other apps' do not")
    func clockStarts() {
        let planned = plan([notification(), notification("low", priority: .low)], now: t0 + 1)
        #expect(planned.saveTracks == [EscalationTrack(notificationId: "n1", ruleId: "r1", userId: "u", since: t0, dueAt: t0 + 600)])
        var all = rule
        all.priority = "all"
        all.app = "other.example.com"
        #expect(plan([notification()], rules: [all], now: t0).saveTracks.isEmpty)
        all.app = nil
        #expect(plan([notification("low", priority: .low)], rules: [all], now: t0).saveTracks.count == 1)
    }

    @Test("a change that leaves it unhandled keeps the clock; a re-publish (created again) restarts it")
    func republishRestarts() {
        let track = EscalationTrack(notificationId: "n1", ruleId: "r1", userId: "u", since: t0, dueAt: t0 + 600, sent: 1)
        #expect(plan([notification(modified: t0 + 30)], tracks: [track], now: t0 + 30).isEmpty)
        let again = plan([notification(created: t0 + 300)], tracks: [track], now: t0 + 300)
        #expect(again.saveTracks == [EscalationTrack(notificationId: "n1", ruleId: "r1", userId: "u", since: t0 + 300, dueAt: t0 + 900)])
    }

    @Test("handled before the due time: the clock stops and nothing is sent, ever; not yet begun deliveries are called back")
    func handledInTime() {
        let track = EscalationTrack(notificationId: "n1", ruleId: "r1", userId: "u", since: t0, dueAt: t0 + 600)
        let planned = plan([notification(modified: t0 + 60, read: .read)], tracks: [track], now: t0 + 60)
        #expect(planned.dropTracks.map(\.ruleId) == ["r1"] && planned.deliveries.isEmpty && planned.saveTracks.isEmpty)
        let waiting = PendingDelivery(
            id: "p1", notificationId: "n1", ruleId: "r1", ruleName: "night", target: "ntfy:https://ntfy.sh/a", event: .escalated, inFlight: false)
        let calledBack = plan([notification(modified: t0 + 601, action: .dismissed)], tracks: [track], pending: [waiting], now: t0 + 601)
        #expect(calledBack.cancel == ["p1"] && calledBack.deliveries.isEmpty)
    }

    @Test(
        "handled after it was sent: each target told once (handled, with the device and state); deleted: each told deleted; an escalation being sent now is followed"
    )
    func takenBack() {
        let sent = [
            EscalationSent(
                notificationId: "n1", userId: "u", target: "ntfy:https://ntfy.sh/a", ruleId: "r1", ruleName: "night", lastEvent: .escalated)
        ]
        let flying = PendingDelivery(
            id: "p1", notificationId: "n1", ruleId: "r1", ruleName: "night", target: "webhook:https://h.example/x", event: .escalated, inFlight: true)
        let handled = plan(
            [notification(modified: t0 + 700, action: .dismissed)], sent: sent, pending: [flying], now: t0 + 700, devices: ["n1": "laptop"])
        #expect(
            handled.deliveries.map { "\($0.event.rawValue) \($0.target)" } == [
                "handled ntfy:https://ntfy.sh/a", "handled webhook:https://h.example/x",
            ])
        #expect(handled.deliveries.first?.handledBy == HandledBy(device: "laptop", state: "dismissed", at: t0 + 700))
        #expect(handled.saveSent.map(\.lastEvent) == [.handled])
        #expect(handled.cancel.isEmpty, "one being sent cannot be called back: it is followed")

        // Handled again (read after dismissed): nothing more; deleted: each target once.
        let told = [
            EscalationSent(notificationId: "n1", userId: "u", target: "ntfy:https://ntfy.sh/a", ruleId: "r1", ruleName: "night", lastEvent: .handled)
        ]
        #expect(plan([notification(modified: t0 + 800, read: .read, action: .dismissed)], sent: told, now: t0 + 800).deliveries.isEmpty)
        // Changed again while the page is still in flight and its retraction waits: nothing more,
        // whichever of the two pending deliveries comes first (the order used to plan a second).
        let waiting = PendingDelivery(
            id: "p2", notificationId: "n1", ruleId: "r1", ruleName: "night", target: "webhook:https://h.example/x", event: .handled, inFlight: false)
        for pending in [[waiting, flying], [flying, waiting]] {
            let again = plan([notification(modified: t0 + 850, read: .read, action: .dismissed)], sent: told, pending: pending, now: t0 + 850)
            #expect(again.deliveries.isEmpty, "\(again.deliveries.map { "\($0.event.rawValue) \($0.target)" })")
        }
        let deleted = plan([notification(modified: t0 + 900, deleted: true)], sent: told, now: t0 + 900)
        #expect(deleted.deliveries.map(\.event) == [.deleted] && deleted.saveSent.map(\.lastEvent) == [.deleted])
    }

    @Test("snoozed: handled now (taken back), and the clock starts again when the snooze ends")
    func snoozeRestarts() {
        let sent = [
            EscalationSent(
                notificationId: "n1", userId: "u", target: "ntfy:https://ntfy.sh/a", ruleId: "r1", ruleName: "night", lastEvent: .escalated)
        ]
        let snoozed = plan([notification(modified: t0 + 700, action: .snoozed, snoozedUntil: t0 + 4300)], sent: sent, now: t0 + 700)
        #expect(snoozed.saveTracks == [EscalationTrack(notificationId: "n1", ruleId: "r1", userId: "u", since: t0 + 4300, dueAt: t0 + 4900)])
        #expect(snoozed.deliveries.map(\.event) == [.handled] && snoozed.deliveries.first?.handledBy?.state == "snoozed")
    }

    @Test(
        "a due track sends to every target and comes due again after --repeat; muted, never; quiet hours do not hold it back; handled or snoozed meanwhile, nothing"
    )
    func fire() {
        let track = EscalationTrack(notificationId: "n1", ruleId: "r1", userId: "u", since: t0, dueAt: t0 + 600)
        var n = 0
        func fire(_ notification: UserNotification?, rule: EscalationRule?, preferences: [PreferenceEntry] = [], at now: Date) -> EscalationFiring {
            EscalationPlanner.fire(EscalationDue(track: track, notification: notification, rule: rule, preferences: preferences), now: now) {
                n += 1; return "d\(n)"
            }
        }
        let sent = fire(notification(), rule: rule, at: t0 + 601)
        #expect(sent.deliveries.map(\.target) == rule.targets && sent.deliveries.allSatisfy { $0.event == .escalated })
        #expect(sent.track?.dueAt == nil && sent.track?.sent == 1, "no --repeat: once")
        var repeating = rule
        repeating.repeatSeconds = 1800
        #expect(fire(notification(), rule: repeating, at: t0 + 601).track?.dueAt == t0 + 2401)

        let muted = [PreferenceEntry(key: "mute.app.mon.example.com", value: Interruptions.muteValue(until: nil), changedAt: t0)]
        let quiet = [PreferenceEntry(key: "quiet", value: Interruptions.quietValue(until: t0 + 7200, strict: true), changedAt: t0)]
        #expect(fire(notification(), rule: rule, preferences: muted, at: t0 + 601).deliveries.isEmpty)
        // A maintenance window (PROTOCOL.md §16.4): held back inside it, not before it.
        let window = [
            PreferenceEntry(key: "mute.app.mon.example.com", value: Interruptions.muteValue(until: t0 + 3600, from: t0 + 300), changedAt: t0)
        ]
        #expect(fire(notification(), rule: rule, preferences: window, at: t0 + 601).deliveries.isEmpty)
        #expect(fire(notification(), rule: rule, preferences: window, at: t0 + 3601).deliveries.count == 2)
        #expect(fire(notification(), rule: rule, preferences: quiet, at: t0 + 601).deliveries.count == 2)
        #expect(fire(notification(read: .read), rule: rule, at: t0 + 601) == EscalationFiring(deliveries: [], track: nil))
        #expect(fire(notification(), rule: nil, at: t0 + 601) == EscalationFiring(deliveries: [], track: nil), "the rule was removed")
        let later = fire(notification(action: .snoozed, snoozedUntil: t0 + 3600), rule: rule, at: t0 + 601)
        #expect(later.deliveries.isEmpty && later.track?.dueAt == t0 + 4200)
    }

    @Test("a failed delivery is retried after 5 s, 10 s, 20 s … at most an hour apart, for a day; one not worth retrying ends at once")
    func backoff() {
        let delivery = EscalationDelivery(
            id: "d", userId: "u", notificationId: "n1", ruleId: "r1", ruleName: "night", target: "ntfy:https://ntfy.sh/a",
            event: .escalated, notification: notification(), firstAt: t0, nextAt: t0)
        #expect(EscalationPlanner.afterFailure(delivery, attempts: 1, error: "e", retryable: true, now: t0) == .retry(at: t0 + 5, error: "e"))
        #expect(EscalationPlanner.afterFailure(delivery, attempts: 3, error: "e", retryable: true, now: t0) == .retry(at: t0 + 20, error: "e"))
        #expect(EscalationPlanner.afterFailure(delivery, attempts: 30, error: "e", retryable: true, now: t0) == .retry(at: t0 + 3600, error: "e"))
        #expect(EscalationPlanner.afterFailure(delivery, attempts: 40, error: "e", retryable: true, now: t0 + 86_400) == .failed(error: "e"))
        #expect(EscalationPlanner.afterFailure(delivery, attempts: 1, error: "e", retryable: false, now: t0) == .failed(error: "e"))
    }
}
