import Foundation
import NottyCore
import Testing

@testable import NottyPaging
@testable import NottyRecords
@testable import NottyService

/// What each target is sent (PROTOCOL.md §11), built without sending.
@Suite("Escalation targets: what is sent")
struct EscalationSenderTests {
    let notification = UserNotification(
        id: "n/1", appNotificationId: "a", targetHostName: "mon.example.com", priority: .high,
        payload: NotificationPayload(visualContent: VisualContent(title: "Disk full", body: "/var at 99%")),
        expirationDateTime: Date(timeIntervalSince1970: 2e9),
        createdDateTime: Date(timeIntervalSince1970: 1.8e9), lastModifiedDateTime: Date(timeIntervalSince1970: 1.8e9),
        launchUrl: "https://mon.example/disk")

    func delivery(_ event: EscalationEvent, target: String) -> EscalationDelivery {
        EscalationDelivery(
            id: "d", userId: "u", notificationId: notification.id, ruleId: "r", ruleName: "night", target: target, event: event,
            notification: notification,
            handledBy: event == .handled ? HandledBy(device: "B", state: "read", at: Date(timeIntervalSince1970: 1.8e9)) : nil,
            firstAt: Date(), nextAt: Date())
    }

    @Test(
        "ntfy: JSON publish at the server's root with the topic, sequence_id, priority 5 and click; clear and delete by sequence id; credentials as headers, never in the URL"
    )
    func ntfy() throws {
        let url = "https://bob:s3cret@ntfy.example/sub/path/alerts?auth=abc"
        let publish = try #require(EscalationSender.ntfyRequest(url: url, delivery: delivery(.escalated, target: "ntfy:" + url)))
        #expect(publish.method == "POST" && publish.url == "https://ntfy.example/sub/path/?auth=abc")
        #expect(publish.headers.contains(OutboundHeader("Authorization", "Basic " + Data("bob:s3cret".utf8).base64EncodedString())))
        let sentBody = try #require(publish.body)
        let body = try #require(JSONParser.parse(sentBody))
        #expect(
            body
                == .object([
                    "topic": .string("alerts"), "title": .string("Disk full"), "message": .string("/var at 99%"), "priority": .number(5),
                    "sequence_id": .string("n/1"), "click": .string("https://mon.example/disk"), "tags": .array([.string("rotating_light")]),
                ]))
        let clear = try #require(EscalationSender.ntfyRequest(url: url, delivery: delivery(.handled, target: "ntfy:" + url)))
        #expect(clear.method == "PUT" && clear.url == "https://ntfy.example/sub/path/alerts/n%2F1/clear?auth=abc")
        let deleted = try #require(EscalationSender.ntfyRequest(url: "https://tk_abc@ntfy.sh/alerts", delivery: delivery(.deleted, target: "")))
        #expect(
            deleted.method == "DELETE" && deleted.url == "https://ntfy.sh/alerts/n%2F1"
                && deleted.headers == [OutboundHeader("Authorization", "Bearer tk_abc")])
        #expect(EscalationSender.ntfyRequest(url: "https://ntfy.sh/", delivery: delivery(.escalated, target: "")) == nil, "no topic")
    }

    @Test("webhook: the event, the rule, the notification (§1) and, when handled, who handled it")
    func webhook() throws {
        let request = EscalationSender.webhookRequest(url: "https://h.example/x", delivery: delivery(.handled, target: ""))
        let sentBody = try #require(request.body)
        let object = try #require(try JSONSerialization.jsonObject(with: sentBody) as? [String: Any])
        #expect(object["event"] as? String == "handled" && object["rule"] as? String == "night")
        #expect((object["notification"] as? [String: Any])?["id"] as? String == "n/1")
        #expect((object["handledBy"] as? [String: Any])?["device"] as? String == "B")
    }

    @Test("command: the notification only in NOTTY_* variables, with NOTTY_EVENT and NOTTY_RULE; run by /bin/sh, its failure in words")
    func command() async throws {
        let variables = EscalationSender.commandVariables(delivery(.handled, target: "command:ops"))
        #expect(variables["NOTTY_TITLE"] == "Disk full" && variables["NOTTY_EVENT"] == "handled" && variables["NOTTY_RULE"] == "night")
        #expect(variables["NOTTY_HANDLED_BY"] == "B" && variables["NOTTY_STATE"] == "read")
        let sender = EscalationSender(
            outbound: nil, commands: ["ok": "test \"$NOTTY_EVENT\" = escalated", "fails": "echo no route >&2; exit 3"],
            commandTimeout: .seconds(60))
        #expect(await sender.send(delivery(.escalated, target: "command:ok")) == nil)
        #expect(
            await sender.send(delivery(.escalated, target: "command:fails"))
                == EscalationSender.Failure(message: "the command exited with 3: no route", retryable: true))
        let impatient = EscalationSender(outbound: nil, commands: ["slow": "sleep 60"], commandTimeout: .seconds(1))
        #expect(await impatient.send(delivery(.escalated, target: "command:slow"))?.message.contains("stopped") == true)
        #expect(await sender.send(delivery(.escalated, target: "command:gone"))?.retryable == false)
    }
}
