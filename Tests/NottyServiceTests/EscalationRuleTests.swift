import Foundation
import HTTPTypes
import NottyCore
import NottyOutbound
import NottyTestSupport
import Testing

@testable import NottyHTTP
@testable import NottyService
@testable import NottyServicePostgres
@testable import NottyServiceSQLite

@Suite("Escalation rules (PROTOCOL.md §11)", .timeLimit(.minutes(5)))
struct EscalationRuleTests {
    @Test("a rule is added, listed with what was given, kept per user and removed; durations as seconds or text", arguments: Backend.available)
    func addListRemove(backend: Backend) async throws {
        let harness = try await ServiceHarness(backend) { $0.escalationCommands = ["ops": "apprise -b \"$NOTTY_TITLE\" tgram://x/y"] }
        try await harness.router { client in
            let alice = try await harness.world(client)
            let bob = try await harness.world(client, user: "bob", host: "mon.example.com")
            func rules(_ world: World) async throws -> [EscalationRule] {
                try await client.call(.get, "/v1/me/escalations", token: world.userToken).decode(EscalationRuleList.self).value
            }
            #expect(try await rules(alice).isEmpty)
            let added = try await client.call(
                .post, "/v1/me/escalations", token: alice.userToken,
                json: """
                    {"name":"night","after":"10m","repeat":1800,"targets":["ntfy:https://alice:pw@ntfy.example/alerts","webhook:https://hooks.example/oncall","command:ops"],
                     "priority":"ALL","app":"mon.example.com","group":"disks"}
                    """)
            #expect(added.status == .created, "\(added.text)")
            let rule = try added.decode(EscalationRule.self)
            #expect(rule.name == "night")
            #expect(rule.afterSeconds == 600)
            #expect(rule.repeatSeconds == 1800)
            #expect(rule.priority == "all")
            #expect(rule.targets == ["ntfy:https://alice:pw@ntfy.example/alerts", "webhook:https://hooks.example/oncall", "command:ops"])
            #expect(rule.app == "mon.example.com" && rule.group == "disks")
            #expect(
                rule.summary
                    == "night: after 10m, every 30m again, any priority, app mon.example.com, group disks → ntfy:https://…@ntfy.example/alerts, webhook:https://hooks.example/oncall, command:ops"
            )
            // A second rule without a name gets one; defaults: High only, sent once.
            let second = try await client.call(
                .post, "/v1/me/escalations", token: alice.userToken, json: #"{"after":5,"targets":["ntfy:http://127.0.0.1:9/x"]}"#)
            #expect(second.status == .created, "\(second.text)")
            let unnamed = try second.decode(EscalationRule.self)
            #expect(unnamed.name.hasPrefix("rule-"))
            #expect(unnamed.priority == "high" && unnamed.repeatSeconds == nil)
            #expect(try await rules(alice) == [rule, unnamed], "oldest first, as stored")
            #expect(try await rules(bob).isEmpty, "another user's rules are not his")
            // Bob cannot remove Alice's rule; Alice can, once.
            #expect(try await client.call(.delete, "/v1/me/escalations/\(rule.id)", token: bob.userToken).status == .notFound)
            #expect(try await client.call(.delete, "/v1/me/escalations/\(rule.id)", token: alice.userToken).status == .noContent)
            #expect(try await client.call(.delete, "/v1/me/escalations/\(rule.id)", token: alice.userToken).status == .notFound)
            #expect(try await rules(alice) == [unnamed])
            // The name is free again.
            let again = try await client.call(
                .post, "/v1/me/escalations", token: bob.userToken, json: #"{"name":"night","after":"1h","targets":["command:ops"]}"#)
            #expect(again.status == .created, "\(again.text)")
            #expect(try await client.call(.get, "/v1/me/escalations").status == .unauthorized)
        }
    }

    @Test("what is wrong with a rule is a 400 that says so, and nothing is stored", arguments: Backend.available)
    func refused(backend: Backend) async throws {
        let harness = try await ServiceHarness(backend) { $0.escalationCommands = ["ops": "true"] }
        try await harness.router { client in
            let world = try await harness.world(client)
            let cases: [(body: String, says: String)] = [
                (#"{"targets":["ntfy:https://ntfy.sh/x"]}"#, "after is required"),
                (#"{"after":"4s","targets":["ntfy:https://ntfy.sh/x"]}"#, "from 5s"),
                (#"{"after":4.5,"targets":["ntfy:https://ntfy.sh/x"]}"#, "whole seconds"),
                (#"{"after":"soon","targets":["ntfy:https://ntfy.sh/x"]}"#, "a duration such as"),
                (#"{"after":"31d","targets":["ntfy:https://ntfy.sh/x"]}"#, "to 30d"),
                (#"{"after":"10m"}"#, "targets is required"),
                (#"{"after":"10m","targets":[]}"#, "at least one target"),
                (#"{"after":"10m","targets":["mailto:me@example.com"]}"#, "unknown kind"),
                (#"{"after":"10m","targets":["ntfy:ftp://ntfy.sh/x"]}"#, "absolute http(s) URL"),
                (#"{"after":"10m","targets":["webhook:/relative"]}"#, "absolute http(s) URL"),
                (#"{"after":"10m","targets":["command:sms"]}"#, "no command named sms on this service: there are ops"),
                (#"{"after":"10m","targets":["command:$(touch /tmp/x)"]}"#, "letters, digits"),
                (#"{"after":"10m","targets":[42]}"#, "must be a string"),
                (#"{"after":"10m","targets":["ntfy:https://ntfy.sh/x"],"priority":"urgent"}"#, "priority must be high or all"),
                (#"{"after":"10m","targets":["ntfy:https://ntfy.sh/x"],"name":"two words"}"#, "one word"),
                (#"{"after":"10m","repeat":"2s","targets":["ntfy:https://ntfy.sh/x"]}"#, "repeat must be from 5s"),
                ("[1]", "object"),
                ("{", "not valid JSON"),
            ]
            for (body, says) in cases {
                let answer = try await client.call(.post, "/v1/me/escalations", token: world.userToken, json: body)
                #expect(answer.status == .badRequest, "\(body): \(answer.status) \(answer.text)")
                #expect(answer.text.contains(says), "\(body): \(answer.text)")
            }
            let eleven = (0...10).map { #""ntfy:https://ntfy.sh/t\#($0)""# }.joined(separator: ",")
            let many = try await client.call(.post, "/v1/me/escalations", token: world.userToken, json: #"{"after":"10m","targets":[\#(eleven)]}"#)
            #expect(many.status == .badRequest && many.text.contains("at most 10"), "\(many.text)")
            // A name twice.
            let first = try await client.call(
                .post, "/v1/me/escalations", token: world.userToken, json: #"{"name":"a","after":"10m","targets":["command:ops"]}"#)
            #expect(first.status == .created)
            let twice = try await client.call(
                .post, "/v1/me/escalations", token: world.userToken, json: #"{"name":"a","after":"1h","targets":["command:ops"]}"#)
            #expect(twice.status == .badRequest && twice.text.contains("already an escalation rule named a"), "\(twice.text)")
            let listed = try await client.call(.get, "/v1/me/escalations", token: world.userToken).decode(EscalationRuleList.self).value
            #expect(listed.map(\.name) == ["a"] && listed.first?.afterSeconds == 600)
        }
    }

    @Test(
        "the outbound policy: a target at a refused literal address is a 400 when the rule is made; a name that resolves to one fails at delivery with 'not allowed', nothing sent"
    )
    func outboundPolicy() async throws {
        let policy = try OutboundPolicy(
            listeners: [.init(host: "127.0.0.1", port: 8787)],
            resolver: { $0 == "metadata.test" ? [[169, 254, 169, 254]] : $0 == "receiver.test" ? [[127, 0, 0, 1]] : [] })
        let outbound = RecordingOutbound(policy: policy)
        let harness = try await ServiceHarness(.sqlite, outbound: outbound)
        try await harness.router { client in
            let world = try await harness.world(client)
            for target in [
                "webhook:http://169.254.169.254/latest/meta-data/", "ntfy:http://169.254.169.254/alerts", "webhook:http://[::ffff:169.254.169.254]/",
                "webhook:http://[fe80::1]/", "webhook:http://0.0.0.0:9000/x", "webhook:http://127.0.0.1:8787/v1/me", "ntfy:http://[ff02::1]/t",
            ] {
                let answer = try await client.call(
                    .post, "/v1/me/escalations", token: world.userToken, json: #"{"after":"5s","targets":["\#(target)"]}"#)
                #expect(answer.status == .badRequest, "\(target): \(answer.text)")
                #expect(answer.text.contains("is not allowed: "), "\(target): \(answer.text)")
            }
            #expect(try await client.call(.get, "/v1/me/escalations", token: world.userToken).decode(EscalationRuleList.self).value.isEmpty)
            // A name is checked when a delivery is sent: the test says why, and nothing went out.
            let added = try await client.call(
                .post, "/v1/me/escalations", token: world.userToken,
                json: #"{"name":"m","after":"5s","targets":["webhook:http://metadata.test/latest/","webhook:http://receiver.test:9000/hook"]}"#)
            #expect(added.status == .created, "\(added.text)")
            let id = try #require(added.string("id"))
            let tested = try await client.call(.post, "/v1/me/escalations/\(id)/test", token: world.userToken)
            #expect(tested.text.contains("not allowed: metadata.test is a link-local address (169.254.169.254)"), "\(tested.text)")
            #expect(!tested.text.contains("unreachable"), "\(tested.text)")
            #expect(outbound.requests.map(\.url) == ["http://receiver.test:9000/hook"])
        }
    }

    @Test("a user has at most 20 rules, also when two instances add at once", arguments: Backend.available)
    func limit(backend: Backend) async throws {
        let harness = try await ServiceHarness(backend)
        try await harness.router { client in
            let world = try await harness.world(client)
            let user = try #require(try await harness.service.storage.user(name: "alice"))
            let storage = harness.service.storage
            // 30 inserts at once, straight into the storage (as several instances would). Each is
            // a transaction of five round trips behind the user's row lock, so the last waits for
            // all the others: at the peak of a full run 60 of them took over the storage's minute.
            let stored = try await withThrowingTaskGroup(of: Bool.self) { group in
                for n in 0..<30 {
                    group.addTask {
                        try await storage.insertEscalationRule(
                            EscalationRule(
                                id: "r\(n)", name: "r\(n)", afterSeconds: 60, targets: ["ntfy:https://ntfy.sh/x"], createdDateTime: Date()),
                            userId: user.id, limit: EscalationRule.maxRulesPerUser)
                    }
                }
                return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
            }
            #expect(stored == 20)
            let over = try await client.call(
                .post, "/v1/me/escalations", token: world.userToken, json: #"{"after":"10m","targets":["ntfy:https://ntfy.sh/x"]}"#)
            #expect(over.status == .badRequest && over.text.contains("at most 20 escalation rules"), "\(over.text)")
        }
    }

    @Test("targets: each kind parsed, shown without credentials; a rule covers notifications by priority, app and group")
    func targetsAndCoverage() throws {
        #expect(try EscalationTarget(parsing: "NTFY:https://ntfy.sh/a") == .ntfy("https://ntfy.sh/a"))
        #expect(try EscalationTarget(parsing: "ntfy:https://u:p@ntfy.example/a?auth=x").shown == "ntfy:https://…@ntfy.example/a?auth=x")
        #expect(try EscalationTarget(parsing: "webhook:http://h.example/x").description == "webhook:http://h.example/x")
        #expect(try EscalationTarget(parsing: "command:ops-2.night_shift") == .command("ops-2.night_shift"))
        #expect(throws: ValidationError.self) { try EscalationTarget(parsing: "ntfy:https://ntfy.sh/a b") }
        #expect(throws: ValidationError.self) { try EscalationTarget(parsing: "command:") }
        #expect(throws: ValidationError.self) { try EscalationTarget(parsing: "just-a-word") }
        let high = UserNotification.fixture(id: "1", app: "Mon.Example.com", group: "disks", priority: .high)
        let normal = UserNotification.fixture(id: "2", app: "mon.example.com", group: "disks", priority: .none)
        let rule = EscalationRule(id: "r", name: "r", afterSeconds: 60, targets: [], app: "mon.example.com", group: "disks", createdDateTime: Date())
        #expect(rule.covers(high))
        #expect(!rule.covers(normal), "High only by default")
        var all = rule
        all.priority = "all"
        #expect(all.covers(normal))
        all.group = "cpu"
        #expect(!all.covers(normal))
        #expect(
            DurationText.words(90) == "90s" && DurationText.words(600) == "10m" && DurationText.words(7200) == "2h"
                && DurationText.words(1_209_600) == "2w")
    }
}
