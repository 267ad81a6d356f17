import Foundation
import Testing

@testable import NottyCore

@Suite("Wire formats")
struct WireTests {
    @Test("Graph's sample bodies parse; numeric-string TTL, case-insensitive enums")
    func graphSample() throws {
        let body =
            #"{"targetHostName":"graphnotifications.sample.windows.com","appNotificationId":"testDirectToastNotification","payload":{"visualContent":{"title":"Hello World!","body":"Notifications are Great!"}},"targetPolicy":{"platformTypes":["windows","ios","android"]},"priority":"high","groupName":"TestGroup","displayTimeToLive":"60"}"#
        let request = try PublishRequest(body: Data(body.utf8))
        #expect(request.displayTimeToLive == 60)
        #expect(request.priority == .high)
        #expect(request.payload.visualContent?.body == "Notifications are Great!")
        let again = try PublishRequest(body: request.jsonBody())
        #expect(again == request)
    }

    @Test(
        "Rejections say what to fix",
        arguments: [
            ("[]", "batches are not supported"),
            ("{", "not valid JSON"),
            (#"{"payload":{"rawContent":"x"}}"#, "appNotificationId is required"),
            (#"{"appNotificationId":"a","payload":{}}"#, "rawContent or visualContent"),
            (#"{"appNotificationId":"a","displayTimeToLive":"+5","payload":{"rawContent":"x"}}"#, "whole number"),
            (#"{"appNotificationId":"a","priority":"urgent","payload":{"rawContent":"x"}}"#, "None, High, Low"),
        ])
    func rejections(_ body: String, _ message: String) {
        #expect {
            _ = try PublishRequest(body: Data(body.utf8))
        } throws: { error in
            (error as? ValidationError)?.message.contains(message) == true
        }
    }

    @Test("Mutations: snoozedUntil implies Snoozed; clocks as ISO time or milliseconds")
    func mutations() throws {
        let snooze = try Mutation(fields: JSONFields(body: Data(#"{"snoozedUntil":"2030-01-01T00:00:00Z","changedAt":1700000000000}"#.utf8)), id: "x")
        #expect(snooze.change.userActionState == .snoozed)
        #expect(snooze.changedAt == 1_700_000_000_000)
        let iso = try Mutation(fields: JSONFields(body: Data(#"{"id":"y","readState":"READ","changedAt":"2023-11-14T22:13:20.000Z"}"#.utf8)), id: nil)
        #expect(iso.id == "y" && iso.change.readState == .read && iso.changedAt == 1_700_000_000_000)
        #expect(throws: ValidationError.self) { try Mutation(fields: JSONFields(body: Data(#"{"userActionState":"Snoozed"}"#.utf8)), id: "x") }
        let roundTrip = try Mutation(fields: JSONFields(value: iso.jsonObject(), what: "item"), id: nil)
        #expect(roundTrip == iso)
    }

    @Test("Notifications encode every field with Graph's names and ms times, and decode back")
    func notificationRoundTrip() throws {
        let date = ISOTime.date(millis: 1_700_000_000_123)
        let note = UserNotification(
            id: "1", appNotificationId: "a", targetHostName: "h", groupName: nil, priority: .low,
            payload: .init(rawContent: "r"), expirationDateTime: date, createdDateTime: date, lastModifiedDateTime: date)
        let text = String(decoding: try NottyJSON.encoder.encode(note), as: UTF8.self)
        #expect(text.contains(#""createdDateTime":"2023-11-14T22:13:20.123Z""#))
        #expect(text.contains(#""groupName":null"#) && text.contains(#""snoozedUntil":null"#))
        #expect(text.contains(#""userActionState":"NoInteraction""#))
        #expect(try NottyJSON.decoder.decode(UserNotification.self, from: Data(text.utf8)) == note)
    }

    @Test("Durations", arguments: [("90s", 90), ("15m", 900), ("4h", 14_400), ("7d", 604_800), ("2w", 1_209_600), ("30", 30)])
    func durations(_ text: String, _ seconds: Int) {
        #expect(DurationText.seconds(text) == seconds)
    }

    @Test("Bad durations", arguments: ["", "0s", "-5m", "soon", "5x", "100ms"])
    func badDurations(_ text: String) {
        #expect(DurationText.seconds(text) == nil)
    }
}

@Suite("JSON parsing and time formatting")
struct ParserTests {
    @Test(
        "The parser agrees with JSONSerialization on valid input",
        arguments: [
            #"{"a":[1,2.5,-3e2,true,false,null],"b":"x\"y\\z\n\u00e9\ud83d\ude00","c":{}}"#,
            #"  [ ]  "#, #""only a string""#, "0", "-0.5", #"{"title":"日本語のタイトル 🚀"}"#,
        ])
    func agrees(_ text: String) throws {
        let parsed = try #require(JSONValue(jsonText: text))
        let reference = try JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed])
        let again = try JSONSerialization.jsonObject(with: Data(parsed.jsonText.utf8), options: [.fragmentsAllowed])
        #expect(NSDictionary(dictionary: ["v": reference]) == NSDictionary(dictionary: ["v": again]))
    }

    @Test(
        "The parser rejects what is not JSON",
        arguments: [
            "", "{", "[1,]", "{\"a\":1,}", "01", "1.", "tru", "1e400", "[-1e999]", "{\"targetPolicy\":{\"x\":1e3004567890}}", "\"\u{01}\"", "\"\\x\"",
            "{\"a\" 1}", "[1] 2", String(repeating: "[", count: 100) + String(repeating: "]", count: 100),
        ])
    func rejects(_ text: String) {
        #expect(JSONValue(jsonText: text) == nil)
    }

    @Test("Times format as ISO 8601 UTC with milliseconds and parse back")
    func times() {
        let cases: [(Double, String)] = [
            (0, "1970-01-01T00:00:00.000Z"), (1_700_000_000.123, "2023-11-14T22:13:20.123Z"), (1_800_000_000.999, "2027-01-15T08:00:00.999Z"),
            (951_782_400.5, "2000-02-29T00:00:00.500Z"), (4_102_444_799.001, "2099-12-31T23:59:59.001Z"),
            (1_700_000_000.1239, "2023-11-14T22:13:20.123Z"),
        ]
        for (seconds, expected) in cases {
            let date = Date(timeIntervalSince1970: seconds)
            #expect(ISOTime.format(date) == expected)
            #expect(ISOTime.parse(expected) == ISOTime.truncated(date))
            #expect(ISOTime.format(ISOTime.parse(expected)!) == expected)
        }
    }

    @Test("Every millisecond survives writing and reading back, in far years too (the fuzzer found 2526 losing one a round)")
    func timesRoundTrip() {
        for year in ["1970", "2026", "2526", "4000", "9999"] {
            let start = ISOTime.parseUTC("\(year)-06-15T08:00:00.000Z")!
            for ms in Int64(0)..<1000 {
                let millis = start + ms * 1001  // a second apart and every millisecond of one
                let text = ISOTime.format(ISOTime.date(millis: millis))
                #expect(ISOTime.millis(ISOTime.date(millis: millis)) == millis, "\(text)")
                #expect(ISOTime.parse(text).map(ISOTime.millis) == millis, "\(text)")
                #expect(ISOTime.parse(text).map(ISOTime.format) == text, "\(text)")
            }
        }
    }

    @Test("Times outside the years 1…9999 are not times (the fuzzer found a year 202611 drifting a millisecond a round)")
    func timesOutOfRange() {
        #expect(ISOTime.parseUTC("0001-01-01T00:00:00.000Z") == ISOTime.firstMillis)
        #expect(ISOTime.parseUTC("9999-12-31T23:59:59.999Z") == ISOTime.lastMillis)
        #expect(ISOTime.parse("202611-2-4T08:00:00.008Z") == nil)
        #expect(ISOTime.parse("+10000-01-01T00:00:00Z") == nil)
        #expect(ISOTime.parse("9999-12-31T23:59:59Z") != nil)
    }

    @Test("The hand-written reader of notty's own spelling agrees with Foundation's ISO 8601 parser")
    func fastTimes() throws {
        var generator = SystemRandomNumberGenerator()
        let style = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
        for _ in 0..<2000 {
            let millis = Int64.random(in: -2_000_000_000_000...4_000_000_000_000, using: &generator)
            let text = ISOTime.format(ISOTime.date(millis: millis))
            let parsed = ISOTime.parseUTC(text)
            #expect(parsed == millis, "\(text)")
            #expect(parsed == ISOTime.millis(try style.parse(text)), "\(text)")
        }
        #expect(ISOTime.parseUTC("2026-11-21T09:40:18Z") == ISOTime.millis(try Date.ISO8601FormatStyle().parse("2026-11-21T09:40:18Z")))
        for bad in [
            "2023-02-29T00:00:00.000Z", "2024-13-01T00:00:00.000Z", "2024-04-31T00:00:00.000Z", "2024-01-01T24:00:00.000Z",
            "2024-01-01T00:60:00.000Z", "2024-01-01 00:00:00.000Z", "2024-01-01T00:00:00.000+01:00", "2024-01-01T00:00:00.0Z", "x",
        ] {
            #expect(ISOTime.parseUTC(bad) == nil, "\(bad)")
        }
        #expect(ISOTime.parse("2024-02-29T12:00:00.250Z") == Date(timeIntervalSince1970: 1_709_208_000.25))
    }
}

@Suite("Hand-written JSON")
struct JSONWriterTests {
    static let awkward =
        "quote \" backslash \\ slash / newline \n tab \t cr \r bell \u{07} nul \u{00} unit \u{1F} del \u{7F} csi \u{9B} 世界 🎉 \u{2028} é"

    static let samples: [UserNotification] = [
        UserNotification(
            id: "n1", appNotificationId: "a1", targetHostName: "ci.example.com", priority: .high,
            payload: NotificationPayload(visualContent: VisualContent(title: "Hello World!", body: "Notifications are Great!")),
            displayTimeToLive: 60, expirationDateTime: Date(timeIntervalSince1970: 1_800_000_060.5),
            createdDateTime: Date(timeIntervalSince1970: 1_800_000_000), lastModifiedDateTime: Date(timeIntervalSince1970: 1_800_000_000.123),
            targetPolicy: .object(["platformTypes": .array([.string("windows"), .string("ios"), .string("android")])])),
        UserNotification(
            id: "n2", appNotificationId: awkward, targetHostName: "h", groupName: awkward, priority: .low,
            payload: NotificationPayload(rawContent: awkward, visualContent: VisualContent(title: awkward)),
            expirationDateTime: Date(timeIntervalSince1970: 0), createdDateTime: Date(timeIntervalSince1970: -1.5),
            lastModifiedDateTime: Date(timeIntervalSince1970: 4_102_444_799.999), status: .deleted, readState: .read,
            userActionState: .snoozed, snoozedUntil: Date(timeIntervalSince1970: 1_900_000_000),
            targetPolicy: .object([
                "b": .number(1), "a": .number(-2.5), "c": .array([.null, .bool(true), .bool(false), .number(1e20), .number(0.1)]),
                awkward: .object(["z": .string(awkward), "y": .object([:])]),
            ]),
            fallbackPolicy: .array([])),
        UserNotification(
            id: "n3", appNotificationId: "a3", targetHostName: "h", priority: .none,
            payload: NotificationPayload(rawContent: "only raw"), expirationDateTime: Date(timeIntervalSince1970: 1),
            createdDateTime: Date(timeIntervalSince1970: 1), lastModifiedDateTime: Date(timeIntervalSince1970: 1),
            userActionState: .dismissed),
        UserNotification(
            id: "n4", appNotificationId: "a4", targetHostName: "h", priority: .none, payload: NotificationPayload(),
            expirationDateTime: Date(timeIntervalSince1970: 1), createdDateTime: Date(timeIntervalSince1970: 1),
            lastModifiedDateTime: Date(timeIntervalSince1970: 1), userActionState: .activated),
        // Escalated (PROTOCOL.md §11): sent once, and failed once with its error.
        UserNotification(
            id: "n5", appNotificationId: "a5", targetHostName: "h", priority: .high, payload: NotificationPayload(),
            expirationDateTime: Date(timeIntervalSince1970: 1), createdDateTime: Date(timeIntervalSince1970: 1),
            lastModifiedDateTime: Date(timeIntervalSince1970: 1),
            escalations: [
                EscalationRecord(target: "ntfy:https://…@ntfy.sh/a", rule: "night", at: Date(timeIntervalSince1970: 2), outcome: "sent"),
                EscalationRecord(target: "command:\(awkward)", rule: "r", at: Date(timeIntervalSince1970: 3), outcome: "failed", error: "exit \"3\""),
            ]),
        // Actions (PROTOCOL.md §12) as devices see them, and how two went.
        UserNotification(
            id: "n6", appNotificationId: "a6", targetHostName: "h", priority: .high, payload: NotificationPayload(),
            expirationDateTime: Date(timeIntervalSince1970: 1), createdDateTime: Date(timeIntervalSince1970: 1),
            lastModifiedDateTime: Date(timeIntervalSince1970: 1),
            actions: [
                NotificationAction(kind: .http, label: "Silence 1h", clear: true),
                NotificationAction(kind: .view, label: awkward, url: "https://example.com/\(awkward)"),
            ],
            actionResults: [
                ActionResult(action: 1, label: "Silence 1h", status: .done, httpStatus: 200, device: "laptop", at: Date(timeIntervalSince1970: 5)),
                ActionResult(action: 2, label: awkward, status: .failed, error: "unreachable: \(awkward)", at: Date(timeIntervalSince1970: 6)),
            ]),
    ]

    @Test("A notification and a page are the bytes JSONEncoder writes (DEL and C1 escaped), and decode back")
    func sameBytes() throws {
        for sample in Self.samples {
            #expect(String(decoding: sample.jsonBytes(), as: UTF8.self) == Self.encoded(sample))
            #expect(try NottyJSON.decoder.decode(UserNotification.self, from: Data(sample.jsonBytes())) == sample)
        }
        for page in [
            ChangesPage(changes: Self.samples, cursor: "42", hasMore: true), ChangesPage(changes: [], cursor: awkwardCursor, hasMore: false),
        ] {
            #expect(String(decoding: page.jsonBytes(), as: UTF8.self) == Self.encoded(page))
        }
    }

    @Test("A page with preferences (PROTOCOL.md §9) is the bytes JSONEncoder writes and reads back the same both ways, a null value included")
    func pageWithPreferences() throws {
        let preferences = [
            PreferenceEntry(
                key: "quiet", value: .object(["until": .string("2027-01-15T07:00:00.000Z"), "strict": .bool(false)]),
                changedAt: Date(timeIntervalSince1970: 1_800_000_000.25)),
            PreferenceEntry(key: "mute.app.\(Self.awkward)", value: .null, changedAt: Date(timeIntervalSince1970: 1_800_000_001)),
        ]
        let page = ChangesPage(changes: Array(Self.samples.prefix(1)), cursor: "7", hasMore: false, preferences: preferences)
        let bytes = page.jsonBytes()
        #expect(String(decoding: bytes, as: UTF8.self) == Self.encoded(page))
        #expect(try ChangesPage(wire: Data(bytes)) == page)
        #expect(try NottyJSON.decoder.decode(ChangesPage.self, from: Data(bytes)) == page)
        // A page without them leaves the member out, and an older reader's page has none.
        #expect(!String(decoding: ChangesPage(changes: [], cursor: "7", hasMore: false).jsonBytes(), as: UTF8.self).contains("preferences"))
        #expect(try ChangesPage(wire: Data(#"{"changes":[],"cursor":"7","hasMore":false}"#.utf8)).preferences == nil)
        #expect(throws: ValidationError.self) {
            try ChangesPage(wire: Data(#"{"changes":[],"cursor":"7","hasMore":false,"preferences":[{"value":1}]}"#.utf8))
        }
    }

    @Test("A change page reads back the same through the hand-written reader as through JSONDecoder, for every shape of notification")
    func pageReader() throws {
        var random = SystemRandomNumberGenerator()
        var changes = Self.samples
        for i in 0..<300 {
            func maybe<T>(_ value: @autoclosure () -> T) -> T? { Bool.random(using: &random) ? value() : nil }
            let time = { Date(timeIntervalSince1970: Double(Int64.random(in: -1_000_000_000_000...4_000_000_000_000, using: &random)) / 1000) }
            changes.append(
                UserNotification(
                    id: UUID().uuidString.lowercased(), appNotificationId: "a\(i)\(Self.awkward.prefix(i % 20))", targetHostName: "h\(i)",
                    groupName: maybe("g\(i)"), priority: Priority.allCases.randomElement(using: &random)!,
                    payload: NotificationPayload(
                        rawContent: maybe("raw \(i)"), visualContent: maybe(VisualContent(title: "t\(i)", body: maybe("b")))),
                    displayTimeToLive: maybe(Int.random(in: 0...2_147_483_647, using: &random)),
                    expirationDateTime: time(), createdDateTime: time(), lastModifiedDateTime: time(),
                    status: NotificationStatus.allCases.randomElement(using: &random)!, readState: ReadState.allCases.randomElement(using: &random)!,
                    userActionState: UserActionState.allCases.randomElement(using: &random)!, snoozedUntil: maybe(time()),
                    targetPolicy: maybe(.object(["k": .array([.number(Double(i)), .null])])), fallbackPolicy: maybe(.string("x")),
                    launchUrl: maybe("https://example.com/\(i)")))
        }
        let page = ChangesPage(changes: changes, cursor: awkwardCursor, hasMore: true)
        let body = Data(page.jsonBytes())
        let read = try ChangesPage(wire: body)
        #expect(read == page)
        #expect(read == (try NottyJSON.decoder.decode(ChangesPage.self, from: body)))
        // Graph's spellings in any case, as the Decodable conformance reads them.
        let lower = String(decoding: ChangesPage(changes: [Self.samples[0]], cursor: "1", hasMore: false).jsonBytes(), as: UTF8.self)
            .replacingOccurrences(of: "\"High\"", with: "\"high\"").replacingOccurrences(of: "\"NoInteraction\"", with: "\"nointeraction\"")
        #expect(try ChangesPage(wire: Data(lower.utf8)).changes == [Self.samples[0]])

        // A key given twice: the last one counts, as in JSONParser's objects (JSONDecoder keeps
        // the first; the service never sends either).
        let twice = Data(
            #"{"changes":[\#(String(decoding: Self.samples[2].jsonBytes(), as: UTF8.self))],"changes":[],"cursor":"1","hasMore":false}"#.utf8)
        #expect(try ChangesPage(wire: twice).changes.isEmpty)

        // What either reader refuses, this one refuses with a message naming the field.
        let one = String(decoding: Self.samples[2].jsonBytes(), as: UTF8.self)
        let broken: [(String, String)] = [
            ("[]", "must be a JSON object"), (#"{"changes":{},"cursor":"1","hasMore":true}"#, "changes of the page"),
            (#"{"changes":[],"cursor":1,"hasMore":true}"#, "cursor of the page must be a string"),
            (#"{"changes":[],"cursor":"1"}"#, "hasMore of the page is required"),
            (
                #"{"changes":[\#(one.replacingOccurrences(of: #""priority":"None""#, with: #""priority":"Urgent""#))],"cursor":"1","hasMore":true}"#,
                "priority of a notification"
            ),
            (
                #"{"changes":[\#(one.replacingOccurrences(of: #""id":"n3","#, with: ""))],"cursor":"1","hasMore":true}"#,
                "id of a notification is required"
            ),
            (
                #"{"changes":[\#(one.replacingOccurrences(of: #""createdDateTime":""#, with: #""createdDateTime":"yesterday"#))],"cursor":"1","hasMore":true}"#,
                "createdDateTime"
            ),
            (
                #"{"changes":[\#(one.replacingOccurrences(of: #""payload":{"#, with: #""payload":{"visualContent":{"body":"no title"},"#))],"cursor":"1","hasMore":true}"#,
                "title of visualContent of payload of a notification is required"
            ),
            (#"{"changes":[1],"cursor":"1","hasMore":true}"#, "a notification must be a JSON object"), ("{", "not valid JSON"),
        ]
        for (text, message) in broken {
            #expect(throws: (any Error).self, "\(text)") { try NottyJSON.decoder.decode(ChangesPage.self, from: Data(text.utf8)) }
            do {
                _ = try ChangesPage(wire: Data(text.utf8))
                Issue.record("read \(text)")
            } catch {
                #expect(error.message.contains(message), "\(error.message)")
            }
        }
    }

    /// What JSONEncoder writes, with DEL and the C1 controls as `\u` escapes, as JSONWriter
    /// writes them (JSONEncoder leaves them raw; inside a JSON string they only occur there).
    static func encoded(_ value: some Encodable) -> String {
        let text = String(decoding: (try? NottyJSON.encoder.encode(value)) ?? Data(), as: UTF8.self)
        return String(
            text.unicodeScalars.map { scalar in
                (0x7F..<0xA0).contains(scalar.value) ? String(format: "\\u%04x", scalar.value) : String(scalar)
            }.joined())
    }

    let awkwardCursor = "c\"/\\"
}

@Suite("launchUrl (links)")
struct LaunchURLTests {
    static func body(_ url: String) -> Data {
        Data(#"{"appNotificationId":"a","payload":{"rawContent":"x"},"launchUrl":\#(url)}"#.utf8)
    }

    @Test(
        "an absolute http(s) URL up to 2,048 characters is kept; null is none",
        arguments: [
            "https://ci.example.com/acme/web/actions/runs/42", "http://127.0.0.1:8787/x?y=1#z", "HTTPS://EXAMPLE.COM",
        ])
    func accepted(_ url: String) throws {
        let request = try PublishRequest(body: Self.body("\"\(url)\""))
        #expect(request.launchUrl == url)
        #expect(try PublishRequest(body: Self.body("null")).launchUrl == nil)
    }

    @Test(
        "any other scheme, a relative or malformed URL, spaces, controls or more than 2,048 characters is a 400",
        arguments: [
            "\"ftp://example.com/x\"", "\"javascript:alert(1)\"", "\"file:///etc/passwd\"", "\"/relative/path\"", "\"https://\"",
            "\"https://exa mple.com\"", "\"https://example.com/\\u001b]0;x\\u0007\"", "42",
            "\"https://example.com/\(String(repeating: "a", count: 2048))\"",
        ])
    func refused(_ json: String) {
        #expect(throws: ValidationError.self) { try PublishRequest(body: Self.body(json)) }
    }

    @Test("carried in a notification's JSON when set, absent when not, the same bytes JSONEncoder writes")
    func wire() throws {
        var n = JSONWriterTests.samples[0]
        #expect(!String(decoding: n.jsonBytes(), as: UTF8.self).contains("launchUrl"))
        n.launchUrl = "https://ci.example.com/1"
        let text = String(decoding: n.jsonBytes(), as: UTF8.self)
        #expect(text.contains(#""launchUrl":"https://ci.example.com/1""#))
        #expect(text == String(decoding: try NottyJSON.encoder.encode(n), as: UTF8.self))
        #expect(try NottyJSON.decoder.decode(UserNotification.self, from: Data(text.utf8)).launchUrl == n.launchUrl)
    }
}

@Suite("HTTPURL: the one parse of a URL given to notty")
struct HTTPURLTests {
    @Test(
        "its parts, authority and origin: the scheme's own port left out of the origin, an IPv6 host bracketed, credentials noticed",
        arguments: [
            ("https://Push.Example.com/sub/1", "push.example.com", 443, nil, "/sub/1", false, "push.example.com", "https://push.example.com"),
            ("https://push.example.com:443/", "push.example.com", 443, 443, "/", false, "push.example.com:443", "https://push.example.com"),
            ("http://127.0.0.1:8787/x?y=1", "127.0.0.1", 8787, 8787, "/x", false, "127.0.0.1:8787", "http://127.0.0.1:8787"),
            ("http://[::1]:9/", "::1", 9, 9, "/", false, "[::1]:9", "http://[::1]:9"),
            ("https://u:p@10.0.0.5", "10.0.0.5", 443, nil, "", true, "10.0.0.5", "https://10.0.0.5"),
        ] as [(String, String, Int, Int?, String, Bool, String, String)])
    func parts(_ text: String, host: String, port: Int, written: Int?, path: String, credentials: Bool, authority: String, origin: String)
        throws
    {
        let url = try #require(HTTPURL(text))
        #expect(url.host == host && url.port == port && url.writtenPort == written && url.path == path && url.hasCredentials == credentials)
        #expect(url.authority == authority && url.origin == origin)
    }

    @Test("not http(s) or no host: nil", arguments: ["ftp://example.com/", "mailto:a@example.com", "null", "https://", "/relative"])
    func refused(_ text: String) {
        #expect(HTTPURL(text) == nil)
    }
}
