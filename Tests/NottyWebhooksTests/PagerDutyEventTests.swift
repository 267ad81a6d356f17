import Foundation
import NottyCore
import Testing

@testable import NottyWebhooks

@Suite("PagerDuty's Events API v2, parsed (PROTOCOL.md §16.1)")
struct PagerDutyEventTests {
    static func alert(_ json: String) throws(PagerDutyRefusal) -> PagerDutyEvent { try PagerDutyEvent.alert(Data(json.utf8)) }

    @Test(
        "each severity's priority: critical and error High, warning None, info Low (any case)",
        arguments: [("critical", Priority.high), ("error", .high), ("WARNING", Priority.none), ("info", .low)])
    func severities(_ severity: String, _ priority: Priority) throws {
        let event = try Self.alert(
            #"{"routing_key":"k","event_action":"trigger","payload":{"summary":"s","source":"x","severity":"\#(severity)"}}"#)
        #expect(event.action == .trigger && event.dedupKey == nil && event.notification?.priority == priority)
    }

    @Test("acknowledge and resolve carry a key and no notification; the client is who handled it")
    func followUps() throws {
        for action in [PagerDutyEvent.Action.acknowledge, .resolve] {
            let event = try Self.alert(#"{"routing_key":"k","event_action":"\#(action.rawValue)","dedup_key":"d","client":"Zabbix"}"#)
            #expect(event.action == action && event.dedupKey == "d" && event.notification == nil && event.client == "Zabbix")
        }
    }

    @Test("a summary past PagerDuty's 1,024 characters is cut; custom details that are not an object are one line; numbers are kept")
    func shapes() throws {
        let long = String(repeating: "x", count: 2000)
        let event = try Self.alert(
            #"{"routing_key":"k","event_action":"trigger","payload":{"summary":"\#(long)","source":42,"severity":"info","custom_details":"see the runbook"}}"#
        )
        #expect(event.notification?.title.count == 1024)
        #expect(event.notification?.body == "source: 42\nsee the runbook")
    }

    @Test("an array, a number or nothing is refused as not an object; a change event needs a summary")
    func refused() {
        for body in ["[]", "42", ""] {
            #expect(throws: PagerDutyRefusal(errors: ["the body is not a JSON object"])) {
                try PagerDutyEvent.alert(Data(body.utf8))
            }
        }
        #expect(throws: PagerDutyRefusal(errors: ["'payload.summary' is missing or blank"])) {
            try PagerDutyEvent.change(Data(#"{"routing_key":"k","payload":{"source":"ci"}}"#.utf8))
        }
    }
}
