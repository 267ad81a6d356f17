import Foundation
import HTTPTypes
import NottyCore
import NottyDialects
import NottyTestSupport
import Testing

@testable import NottyHTTP
@testable import NottyService
@testable import NottyServicePostgres
@testable import NottyServiceSQLite

@Suite("The user's preferences (PROTOCOL.md §9)", .timeLimit(.minutes(5)))
struct PreferencesTests {
    static func patch(_ entries: [(key: String, value: String, changedAt: Date?)]) -> String {
        let items = entries.map { entry in
            #"{"key":\#(JSONValue.string(entry.key).jsonText),"value":\#(entry.value)"#
                + (entry.changedAt.map { #","changedAt":"\#(ISOTime.format($0))""# } ?? "") + "}"
        }
        return #"{"preferences":[\#(items.joined(separator: ","))]}"#
    }

    @Test(
        "Last writer wins per key by changedAt; a tie goes to the later write; a clock ahead of the service's counts as now; null unsets and is kept; the same write again moves nothing",
        arguments: Backend.available)
    func lastWriterWins(backend: Backend) async throws {
        let clock = ManualClock()
        let harness = try await ServiceHarness(backend, clock: clock)
        try await harness.router { client in
            let world = try await harness.world(client)
            let now = clock.now()
            func preferences() async throws -> [PreferenceEntry] {
                try await client.call(.get, "/v1/me/preferences", token: world.userToken).decode(PreferenceList.self).preferences
            }
            #expect(try await preferences().isEmpty)
            let first = try await client.call(
                .patch, "/v1/me/preferences", token: world.userToken,
                json: Self.patch([
                    ("quiet", #"{"until":"2027-01-15T07:00:00.000Z"}"#, now - 60), ("mute.app.ci.example.com", "true", now - 60),
                ]))
            #expect(first.status == .ok, "\(first.text)")
            #expect(try first.decode(PreferenceList.self).preferences.map(\.key) == ["mute.app.ci.example.com", "quiet"])
            // Older: loses. The same clock: the later write wins.
            _ = try await client.call(.patch, "/v1/me/preferences", token: world.userToken, json: Self.patch([("quiet", #""older""#, now - 120)]))
            #expect(try await preferences().first { $0.key == "quiet" }?.value == .object(["until": .string("2027-01-15T07:00:00.000Z")]))
            _ = try await client.call(.patch, "/v1/me/preferences", token: world.userToken, json: Self.patch([("quiet", #""tie""#, now - 60)]))
            #expect(try await preferences().first { $0.key == "quiet" }?.value == .string("tie"))
            // Ahead of the service's clock: counted as now. null: unset, and kept.
            _ = try await client.call(
                .patch, "/v1/me/preferences", token: world.userToken, json: Self.patch([("mute.app.ci.example.com", "null", now + 3600)]))
            let unset = try #require(try await preferences().first { $0.key == "mute.app.ci.example.com" })
            #expect(unset.value == .null)
            #expect(unset.changedAt == now)
            // A device that set it to true an hour ago, offline, cannot bring it back.
            _ = try await client.call(
                .patch, "/v1/me/preferences", token: world.userToken, json: Self.patch([("mute.app.ci.example.com", "true", now - 3600)]))
            #expect(try await preferences().first { $0.key == "mute.app.ci.example.com" }?.value == .null)
            // The same write again changes nothing: the feed does not move (a conditional poll gets 304).
            let cursor = try await client.call(.get, "/v1/me/notifications/changes", token: world.userToken).decode(ChangesPage.self).cursor
            _ = try await client.call(.patch, "/v1/me/preferences", token: world.userToken, json: Self.patch([("quiet", #""tie""#, now - 60)]))
            let again = try await client.call(
                .get, "/v1/me/notifications/changes?since=\(cursor)", token: world.userToken, headers: ["If-None-Match": "\"\(cursor)\""])
            #expect(again.status == .notModified)
            // A change does: the poll gets it, with the preference in the page.
            _ = try await client.call(.patch, "/v1/me/preferences", token: world.userToken, json: Self.patch([("quiet", #""off""#, nil)]))
            let changed = try await client.call(
                .get, "/v1/me/notifications/changes?since=\(cursor)", token: world.userToken, headers: ["If-None-Match": "\"\(cursor)\""])
            #expect(changed.status == .ok)
            let page = try changed.decode(ChangesPage.self)
            #expect(page.changes.isEmpty)
            #expect(page.preferences == [PreferenceEntry(key: "quiet", value: .string("off"), changedAt: now)])
            #expect(page.cursor != cursor)
        }
    }

    @Test(
        "The change feed carries preferences in its order: each page those up to its cursor, the last page the rest; none, no member",
        arguments: Backend.available)
    func inTheFeed(backend: Backend) async throws {
        let harness = try await ServiceHarness(backend)
        try await harness.router { client in
            let world = try await harness.world(client)
            let setup = try await client.call(.get, "/v1/me/notifications/changes", token: world.userToken).decode(ChangesPage.self).cursor
            let n0 = try #require(try await world.publish(client, id: "n0").string("id"))
            _ = try await client.call(.patch, "/v1/me/preferences", token: world.userToken, json: Self.patch([("a", "1", nil)]))
            let n1 = try #require(try await world.publish(client, id: "n1").string("id"))
            let n2 = try #require(try await world.publish(client, id: "n2").string("id"))
            _ = try await client.call(.patch, "/v1/me/preferences", token: world.userToken, json: Self.patch([("b", "2", nil)]))
            let page1 = try await client.call(.get, "/v1/me/notifications/changes?since=\(setup)&limit=2", token: world.userToken).decode(
                ChangesPage.self)
            #expect(page1.changes.map(\.id) == [n0, n1])
            #expect(page1.hasMore)
            #expect(page1.preferences?.map(\.key) == ["a"])
            let page2 = try await client.call(.get, "/v1/me/notifications/changes?since=\(page1.cursor)&limit=2", token: world.userToken).decode(
                ChangesPage.self)
            #expect(page2.changes.map(\.id) == [n2])
            #expect(!page2.hasMore)
            #expect(page2.preferences?.map(\.key) == ["b"])
            let last = try await client.call(.get, "/v1/me/notifications/changes?since=\(page2.cursor)", token: world.userToken)
            #expect(!last.text.contains("preferences"), "\(last.text)")
            #expect(try last.decode(ChangesPage.self).cursor == page2.cursor)
            // From the start: every preference, once.
            let all = try await client.call(.get, "/v1/me/notifications/changes", token: world.userToken).decode(ChangesPage.self)
            #expect(all.preferences?.map(\.key) == ["a", "b"])
        }
    }

    @Test("Refusals say what to fix and write nothing", arguments: Backend.available)
    func refusals(backend: Backend) async throws {
        let harness = try await ServiceHarness(backend)
        try await harness.router { client in
            let world = try await harness.world(client)
            let many = "[" + (0...PreferenceRules.maxPerWrite).map { #"{"key":"k\#($0)","value":1}"# }.joined(separator: ",") + "]"
            let cases: [(String, String)] = [
                ("{", "not valid JSON"),
                (#"{"quiet":true}"#, "preferences is required"),
                (#"{"preferences":{}}"#, "must be a JSON array"),
                (#"{"preferences":[{"value":1}]}"#, "key is required"),
                (#"{"preferences":[{"key":"","value":1}]}"#, "key must not be empty"),
                (#"{"preferences":[{"key":"\#(String(repeating: "k", count: 257))","value":1}]}"#, "longer than 256"),
                (#"{"preferences":[{"key":"a\u0007b","value":1}]}"#, "control character"),
                (
                    #"{"preferences":[{"key":"big","value":"\#(String(repeating: "x", count: PreferenceRules.maxValueBytes))"}]}"#,
                    "longer than 4096 bytes"
                ),
                (#"{"preferences":[{"key":"q","value":1,"changedAt":"yesterday"}]}"#, "changedAt"),
                (#"{"preferences":\#(many)}"#, "at most \(PreferenceRules.maxPerWrite)"),
            ]
            for (body, message) in cases {
                let reply = try await client.call(.patch, "/v1/me/preferences", token: world.userToken, json: body)
                #expect(reply.status == .badRequest, "\(body.prefix(80)): \(reply.status)")
                #expect(reply.text.contains(message), "\(body.prefix(80)): \(reply.text)")
            }
            #expect(try await client.call(.get, "/v1/me/preferences", token: world.userToken).decode(PreferenceList.self).preferences.isEmpty)
            #expect(try await client.call(.get, "/v1/me/preferences").status == .unauthorized)
        }
    }

    @Test("an ntfy topic's messages come at priority 1 while quiet or muted; High comes through quiet unless strict", arguments: Backend.available)
    func quietOnThePhone(backend: Backend) async throws {
        let clock = ManualClock()
        let harness = try await ServiceHarness(backend, clock: clock)
        try await harness.router { client in
            let world = try await harness.world(client)
            let (topic, _) = try await world.ntfyTopic(client)
            let userId = try await harness.service.auth.authenticateUser(bearer: world.userToken)
            _ = try await world.publish(client, id: "normal", extra: #","priority":"None""#)
            clock.advance(by: 1)  // replayed oldest first
            _ = try await world.publish(client, id: "high", extra: #","priority":"High""#)
            func priorities() async throws -> [Int?] {
                try await NtfyFollower(inbox: harness.service.inbox, userId: userId, topic: topic, baseURL: "http://127.0.0.1").start(replay: .all)
                    .map(\.priority)
            }
            let plain = try await priorities()
            #expect(plain == [nil, 4], "\(plain)")  // ntfy leaves out its default, 3
            let until = ISOTime.format(clock.now() + 3600)
            _ = try await client.call(
                .patch, "/v1/me/preferences", token: world.userToken, json: Self.patch([("quiet", #"{"until":"\#(until)","strict":false}"#, nil)]))
            #expect(try await priorities() == [1, 4])
            clock.advance(by: 1)
            _ = try await client.call(
                .patch, "/v1/me/preferences", token: world.userToken, json: Self.patch([("quiet", #"{"until":"\#(until)","strict":true}"#, nil)]))
            #expect(try await priorities() == [1, 1])
            clock.advance(by: 1)
            _ = try await client.call(
                .patch, "/v1/me/preferences", token: world.userToken,
                json: Self.patch([
                    ("quiet", "null", nil), ("mute.app.\(world.host)", #"{"until":null}"#, nil),
                ]))
            #expect(try await priorities() == [1, 1], "a muted app's High is held back too")
        }
    }
}
