import Foundation
import NottyCore
import Testing

@testable import NottyHTTP
@testable import NottyService
@testable import NottyServicePostgres
@testable import NottyServiceSQLite

/// `GET /v1/me/notifications?search=TEXT` (PROTOCOL.md §14, the web inbox's `/`): the view's
/// notifications whose title, body, app or group holds TEXT, on both backends.
@Suite("Searching the inbox on the service", .timeLimit(.minutes(5)))
struct SearchTests {
    @Test(
        "search matches title, body, app and group, either case, within the view, newest first, paged; % _ and \\ are themselves; too long is a 400",
        arguments: Backend.available)
    func search(backend: Backend) async throws {
        let harness = try await ServiceHarness(backend)
        try await harness.router { client in
            let world = try await harness.world(client)
            func publish(_ id: String, _ title: String, body: String = "nothing", group: String? = nil) async throws -> String {
                let grouping = group.map { #","groupName":"\#($0)""# } ?? ""
                let reply = try await world.publish(
                    client, #"{"appNotificationId":"\#(id)","payload":{"visualContent":{"title":"\#(title)","body":"\#(body)"}}\#(grouping)}"#)
                return try #require(reply.string("id"), "\(reply.text)")
            }
            let deploy = try await publish("deploy", "Deploy API")
            let disk = try await publish("disk", "Disk 90% full")
            let build = try await publish("build", "build_42 failed", body: "see C:\\\\logs")
            let slow = try await publish("slow", "Latency", body: "the database is SLOW")
            let grouped = try await publish("grouped", "Nightly", group: "deploys")
            func found(_ text: String, view: String = "all", top: Int = 100, skip: Int = 0) async throws -> [String] {
                let query = text.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
                let reply = try await client.call(
                    .get, "/v1/me/notifications?view=\(view)&search=\(query)&top=\(top)&skip=\(skip)", token: world.userToken)
                #expect(reply.status == .ok, "\(reply.text)")
                return try reply.decode(NotificationList.self).value.map(\.id)
            }
            #expect(try await found("deploy") == [grouped, deploy], "the title either case, and the group; newest first")
            #expect(try await found("slow") == [slow], "the body")
            #expect(try await found("%") == [disk], "% is itself")
            #expect(try await found("_") == [build], "_ is itself")
            #expect(try await found("c:\\logs") == [build], "\\ is itself")
            #expect(try await found("sample.WINDOWS").count == 5, "the app")
            #expect(try await found("deploy", top: 1, skip: 1) == [deploy], "paged")
            #expect(try await found("  ").count == 5, "blank: the whole view")
            let read = try await client.call(.patch, "/v1/me/notifications/\(deploy)", token: world.userToken, json: #"{"readState":"Read"}"#)
            #expect(read.status == .ok)
            #expect(try await found("deploy", view: "unread") == [grouped], "within the view")
            #expect(try await found("nowhere").isEmpty)
            let long = try await client.call(
                .get, "/v1/me/notifications?search=\(String(repeating: "x", count: NotificationSearch.maxLength + 1))", token: world.userToken)
            #expect(long.status == .badRequest && long.text.contains("at most 200"), "\(long.text)")
            let nul = try await client.call(.get, "/v1/me/notifications?search=a%00b", token: world.userToken)
            #expect(nul.status == .badRequest, "\(nul.text)")
        }
    }
}
