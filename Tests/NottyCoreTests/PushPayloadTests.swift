import Foundation
import NottyCore
import Testing

@Suite("Push payloads (notty push)")
struct PushPayloadTests {
    static let own = #"{"notty":{"v":1,"server":"http://127.0.0.1:8787","user":"alice","type":"changed","cursor":"42"}}"#
    static var ownString: String {
        String(decoding: try! JSONSerialization.data(withJSONObject: [own], options: []), as: UTF8.self).dropFirst().dropLast().description
    }

    @Test(
        "every form of PROTOCOL.md §3 is read",
        arguments: [
            own,
            #"{"type":"changed","cursor":"42"}"#,
            #"{"aps":{"content-available":1},"notty":{"v":1,"server":"http://127.0.0.1:8787","user":"alice","type":"changed","cursor":"42"}}"#,
            #"{"data":{"notty":\#(ownString)}}"#,
            #"{"message":{"token":"x","data":{"notty":\#(ownString)}}}"#,
            #"{"id":"abc","time":1,"event":"message","topic":"t","message":\#(ownString)}"#,
            #"{"data":{"notty":"{\"v\":1,\"type\":\"changed\",\"cursor\":\"42\"}"}}"#,
        ])
    func forms(payload: String) throws {
        let parsed = try PushPayload.parse(Data(payload.utf8))
        #expect(parsed.frame == .changed(cursor: "42"))
    }

    @Test("a full payload carries its changes and previous cursor")
    func full() throws {
        let change =
            #"{"id":"n1","appNotificationId":"a","targetHostName":"ci.example.com","priority":"High","payload":{"rawContent":"x"},"expirationDateTime":"2030-01-01T00:00:00.000Z","createdDateTime":"2026-01-01T00:00:00.000Z","lastModifiedDateTime":"2026-01-01T00:00:00.000Z","status":"Active","readState":"Unread","userActionState":"NoInteraction"}"#
        let parsed = try PushPayload.parse(
            Data(#"{"notty":{"v":1,"type":"changes","previousCursor":"41","cursor":"42","changes":[\#(change)]}}"#.utf8))
        #expect(parsed.frame.previousCursor == "41" && parsed.frame.changes?.first?.id == "n1")
    }

    @Test(
        "garbage, truncated, huge and foreign input is refused without trapping",
        arguments: [
            "", "not json", "[1,2]", "{", String(own.dropLast(3)), #"{"notty":5}"#, #"{"notty":{"v":2,"type":"changed","cursor":"1"}}"#,
            #"{"aps":{"alert":"hi"}}"#, #"{"event":"open","id":"x"}"#, #"{"type":"changed"}"#, #"{"type":"other","cursor":"1"}"#,
            #"{"notty":{"type":"changes","cursor":"2","previousCursor":"1","changes":[{"id":1}]}}"#,
            #"{"data":{"notty":"{not json"}}"#, String(repeating: "[", count: 100_000), "\u{FEFF}\u{0}\u{1}",
            #"{"type":"changed","cursor":"\#(String(repeating: "9", count: 1000))"}"#,
        ])
    func refused(payload: String) {
        #expect(throws: PushPayload.Rejection.self) { try PushPayload.parse(Data(payload.utf8)) }
    }

    @Test("the server of a payload is compared by scheme, host and port")
    func sameServer() {
        #expect(PushPayload.sameServer("http://127.0.0.1:8787/", "HTTP://127.0.0.1:8787"))
        #expect(PushPayload.sameServer("https://notty.example.com", "https://NOTTY.example.com:443"))
        #expect(!PushPayload.sameServer("http://127.0.0.1:8787", "http://127.0.0.1:8788"))
        #expect(!PushPayload.sameServer("https://a.example.com", "https://b.example.com"))
    }
}
