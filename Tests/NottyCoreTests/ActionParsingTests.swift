import Foundation
import NottyCore
import Testing

@Suite("Actions as publishers send them (PROTOCOL.md §12)")
struct ActionParsingTests {
    @Test("ntfy's simple form: positional and named values, quotes keeping , and ;, headers.NAME, clear, the default method")
    func simpleForm() throws {
        let actions = try NotificationAction.parse(
            header:
                #"view, Open portal, https://home.nest.com/, clear=true; http, "Turn down, please", https://api.nest.com/, method=put, headers.Authorization=Bearer zAzsx1sk.., headers.X-Id=7, body='{"temperature": 65; "a": "b,c"}'; action=http, label=Ping, url=https://x.example/?a=b&c=d"#
        )
        #expect(actions.count == 3)
        #expect(actions[0] == NotificationAction(kind: .view, label: "Open portal", url: "https://home.nest.com/", clear: true))
        #expect(
            actions[1]
                == NotificationAction(
                    kind: .http, label: "Turn down, please", url: "https://api.nest.com/", method: "PUT",
                    headers: ["Authorization": "Bearer zAzsx1sk..", "X-Id": "7"], body: #"{"temperature": 65; "a": "b,c"}"#))
        #expect(actions[2] == NotificationAction(kind: .http, label: "Ping", url: "https://x.example/?a=b&c=d", method: "POST"))
    }

    @Test(
        "ntfy's JSON form, as a header or a member",
        arguments: [
            #"[{"action":"http","label":"Close door","url":"https://api.example.com/door","method":"PUT","headers":{"A":"b"},"body":"x","clear":"true"}]"#
        ])
    func jsonForm(text: String) throws {
        let actions = try NotificationAction.parse(header: text)
        #expect(
            actions == [
                NotificationAction(
                    kind: .http, label: "Close door", url: "https://api.example.com/door", method: "PUT", headers: ["A": "b"], body: "x", clear: true)
            ])
        #expect(try NotificationAction.parse(json: try #require(JSONValue(jsonText: text))) == actions)
    }

    @Test(
        "what is wrong is said",
        arguments: [
            ("view, a, https://a; view, b, https://b; view, c, https://c; view, d, https://d", "at most 3"),
            ("broadcast, Take picture", "broadcast"),
            ("dance, Now, https://a.example", "unknown action dance"),
            ("http, Go, ftp://a.example", "http or https"),
            ("http, Go", "needs a url"),
            ("http, , https://a.example", "needs a label"),
            ("http, Go, https://a.example, headers.=x", "header name"),
            ("http, Go, https://a.example, headers.Bad Name=x", "header name"),
            ("http, Go, https://a.example, method=PO ST", "method"),
            ("http, Go, https://a.example, clear=maybe", "clear"),
            ("http, Go, https://a.example, colour=red", "unknown parameter colour"),
            ("http, Go, https://a.example, extra", "too many values"),
            ("view, Go, https://a.example, body=x", "a view action"),
            ("http, 'Go, https://a.example", "unclosed quote"),
            (#"[{"action":"http","label":"x","url":"https://a","headers":{"A":1}}]"#, "must be a string"),
            (#"[1]"#, "must be a JSON object"),
            (#"[{"action":"http"#, "not valid JSON"),
        ])
    func refusals(text: String, says: String) {
        do {
            let parsed = try NotificationAction.parse(header: text)
            Issue.record("\(text) was accepted: \(parsed)")
        } catch {
            #expect(error.message.contains(says), "\(text): \(error.message)")
        }
    }

    @Test("devices are sent an http action's label and clear only; the service keeps the whole action")
    func secretsStay() throws {
        let action = NotificationAction(
            kind: .http, label: "Silence", url: "https://am.example/api/v2/silences?token=s3cret", method: "POST",
            headers: ["Authorization": "Bearer s3cret"], body: "s3cret body", clear: true)
        let written = String(decoding: action.jsonBytes(), as: UTF8.self)
        let encoded = String(decoding: try NottyJSON.encoder.encode(action), as: UTF8.self)
        #expect(written == encoded)
        #expect(written == #"{"action":"http","clear":true,"label":"Silence"}"#)
        let stored = try #require(NotificationAction.storedText([action]))
        #expect(NotificationAction.list(JSONValue(jsonText: stored)) == [action])
        #expect(action.shown == NotificationAction(kind: .http, label: "Silence", clear: true))
    }
}
