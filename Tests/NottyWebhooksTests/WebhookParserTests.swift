import Foundation
import NottyCore
import Testing

@testable import NottyWebhooks

/// The example payloads under Fixtures/ (see its README for where each comes from).
func fixture(_ name: String) throws -> Data {
    try Data(contentsOf: URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/\(name)"))
}

func parse(_ body: Data, _ headers: [String: String] = [:], query: [String: String] = [:]) throws(WebhookError) -> [WebhookNotification] {
    try Webhooks.parse(WebhookRequest(body: body, headers: headers, query: query))
}

func parse(_ text: String, _ headers: [String: String] = [:], query: [String: String] = [:]) throws(WebhookError) -> [WebhookNotification] {
    try parse(Data(text.utf8), headers, query: query)
}

@Suite("Webhook kinds: recognised in order")
struct WebhookRecognitionTests {
    @Test("GitHub, GitLab, alerts, JSON, text: the first that claims a request parses it")
    func order() throws {
        func kind(_ body: String, _ headers: [String: String] = [:]) -> String {
            Webhooks.kind(of: WebhookRequest(body: Data(body.utf8), headers: headers)).name
        }
        let alerts = #"{"status":"firing","alerts":[]}"#
        #expect(kind(alerts, ["X-GitHub-Event": "push"]) == "github")
        #expect(kind(alerts, ["x-gitlab-event": "Push Hook"]) == "gitlab")
        #expect(kind(alerts) == "alertmanager")
        #expect(kind(#"{"alerts":[]}"#) == "json")  // no status: not an alert group
        #expect(kind(#"{"title":"x"}"#) == "json")
        #expect(kind(#"["x"]"#) == "text")
        #expect(kind("Backup failed") == "text")
    }
}

@Suite("GitHub webhooks")
struct GitHubHookTests {
    let headers = ["X-GitHub-Event": "workflow_run", "Content-Type": "application/json", "X-GitHub-Delivery": "72d3162e-cc78-11e3-81ab-4c9367dc0958"]

    func github(_ event: String, _ file: String) throws -> [WebhookNotification] {
        try parse(try fixture(file), headers.merging(["X-GitHub-Event": event]) { $1 })
    }

    @Test("ping is nothing; a failed run is High with the run's link; the success after it has the same id and resolves it")
    func workflowRuns() throws {
        #expect(try github("ping", "github-ping.json").isEmpty)
        let failed = try #require(try github("workflow_run", "github-workflow_run-completed-failure.json").first)
        #expect(failed.title == "✗ test on octo-org/octo-repo@master (failure)")
        #expect(failed.priority == .high && !failed.resolved && failed.groupName == "octo-org/octo-repo")
        #expect(failed.launchUrl == "https://github.com/octo-org/octo-repo/actions/runs/289782451")
        #expect(failed.body?.contains("Run #163") == true && failed.body?.contains("update actions/setup-node") == true)
        let passed = try #require(try github("workflow_run", "github-workflow_run-completed-success.json").first)
        #expect(passed.title == "✓ test on octo-org/octo-repo@master" && passed.resolved)
        #expect(passed.appNotificationId == failed.appNotificationId && passed.appNotificationId?.hasPrefix("github-run-") == true)
        // Another branch is another notification; a run not yet completed is not news.
        var other = String(decoding: try fixture("github-workflow_run-completed-failure.json"), as: UTF8.self)
        other = other.replacingOccurrences(of: #""head_branch": "master""#, with: #""head_branch": "dev""#)
        #expect(try parse(other, headers).first?.appNotificationId != failed.appNotificationId)
        let running = other.replacingOccurrences(of: #""action": "completed""#, with: #""action": "in_progress""#)
        #expect(try parse(running, headers).isEmpty)
    }

    @Test("pull_request, issues, issue_comment, release: one line with the actor and the title, linked; any other event is Low")
    func events() throws {
        let pr = try #require(try github("pull_request", "github-pull_request-opened.json").first)
        #expect(pr.title == "Codertocat/Hello-World: Codertocat opened pull request #2: Update the README with new information.")
        #expect(pr.launchUrl == "https://github.com/Codertocat/Hello-World/pull/2" && pr.priority == .none)
        let issue = try #require(try github("issues", "github-issues-opened.json").first)
        #expect(issue.title == "Codertocat/Hello-World: Codertocat opened issue #1: Spelling error in the README file")
        let comment = try #require(try github("issue_comment", "github-issue_comment-created.json").first)
        #expect(comment.title == "Codertocat/Hello-World: Codertocat commented on #1: Spelling error in the README file")
        #expect(comment.launchUrl == "https://github.com/Codertocat/Hello-World/issues/1#issuecomment-492700400" && comment.body != nil)
        let release = try #require(try github("release", "github-release-published.json").first)
        #expect(release.title == "Codertocat/Hello-World: Codertocat published release 0.0.1")
        #expect(release.launchUrl == "https://github.com/Codertocat/Hello-World/releases/tag/0.0.1")
        let push = try #require(try github("push", "github-push.json").first)  // an event the parser does not know
        #expect(push.title == "Codertocat/Hello-World: push" && push.priority == .low)
        #expect(push.launchUrl?.hasPrefix("https://github.com/Codertocat/Hello-World") == true)
        // The same delivery again (GitHub's "Redeliver") updates the same notification.
        #expect(pr.appNotificationId == (try github("pull_request", "github-pull_request-opened.json").first?.appNotificationId))
    }

    @Test("the signature is the sha256= header, lowercased; none without it")
    func credential() {
        let signed = WebhookRequest(body: Data(), headers: ["X-GitHub-Event": "ping", "X-Hub-Signature-256": "sha256=ABCdef"])
        #expect(GitHubHook.credential(signed) == .hmacSHA256(hex: "abcdef"))
        #expect(
            GitHubHook.credential(WebhookRequest(body: Data(), headers: ["X-GitHub-Event": "ping", "X-Hub-Signature": "sha1=ab"]))
                == .hmacSHA256(hex: nil))
        #expect(
            GitLabHook.credential(WebhookRequest(body: Data(), headers: ["X-Gitlab-Event": "Push Hook", "X-Gitlab-Token": "s3"])) == .token("s3"))
        #expect(TextHook.credential(WebhookRequest(body: Data(), headers: ["Authorization": "Bearer s3"])) == .token("s3"))
    }
}

@Suite("GitLab webhooks")
struct GitLabHookTests {
    func gitlab(_ event: String, _ file: String) throws -> [WebhookNotification] {
        try parse(try fixture(file), ["X-Gitlab-Event": event, "Content-Type": "application/json"])
    }

    @Test("a pipeline per project and ref: failed is High, success resolves it in place; running is not news")
    func pipelines() throws {
        let success = try #require(try gitlab("Pipeline Hook", "gitlab-pipeline.json").first)
        #expect(success.title == "✓ pipeline on gitlab-org/gitlab-test@master" && success.resolved)
        #expect(success.launchUrl == "http://example.com/gitlab-org/gitlab-test/-/pipelines/31")
        let text = String(decoding: try fixture("gitlab-pipeline.json"), as: UTF8.self)
        let failedText = text.replacingOccurrences(of: #""status": "success""#, with: #""status": "failed""#)
        #expect(failedText != text)
        let failed = try #require(try parse(failedText, ["X-Gitlab-Event": "Pipeline Hook"]).first)
        #expect(failed.title == "✗ pipeline on gitlab-org/gitlab-test@master failed" && failed.priority == .high && !failed.resolved)
        #expect(failed.appNotificationId == success.appNotificationId)
        #expect(failed.body?.contains("Failed: ") == true && failed.body?.contains("test-build") == true, "\(failed.body ?? "")")
        let running = text.replacingOccurrences(of: #""status": "success""#, with: #""status": "running""#)
        #expect(try parse(running, ["X-Gitlab-Event": "Pipeline Hook"]).isEmpty)
    }

    @Test("merge requests, comments and issues are one line each, linked; any other event is Low")
    func events() throws {
        let mr = try #require(try gitlab("Merge Request Hook", "gitlab-merge_request.json").first)
        #expect(mr.title == "gitlabhq/gitlab-test: Administrator opened merge request !1: MS-Viewport")
        #expect(mr.launchUrl == "http://example.com/diaspora/merge_requests/1")
        let note = try #require(try gitlab("Note Hook", "gitlab-note.json").first)
        #expect(note.title == "gitlab-org/gitlab-test: Administrator commented on merge request !1" && note.body == "This MR needs work.")
        let issue = try #require(try gitlab("Issue Hook", "gitlab-issue.json").first)
        #expect(issue.title == "gitlabhq/gitlab-test: Administrator opened issue #23: New API: create/update/delete file")
        let push = try #require(try gitlab("Push Hook", "gitlab-push.json").first)
        #expect(push.title == "mike/diaspora: push refs/heads/master" && push.priority == .low)
    }
}

@Suite("Alertmanager and Grafana alerting webhooks")
struct AlertHookTests {
    @Test("one notification per alert, keyed by fingerprint, titled by alertname and summary, priority by severity, grouped by alertname")
    func alertmanager() throws {
        let alerts = try parse(try fixture("alertmanager-firing.json"), ["Content-Type": "application/json"])
        #expect(alerts.count == 2)
        let cpu = alerts[0], disk = alerts[1]
        #expect(cpu.appNotificationId == "alert-3b1a8e2f4c5d6e7f" && disk.appNotificationId == "alert-9f8e7d6c5b4a3021")
        #expect(cpu.title == "HighCPUUsage: High CPU usage on web-1.example.com:9100")
        #expect(cpu.priority == .high && disk.priority == .none && cpu.groupName == "HighCPUUsage")
        #expect(cpu.body?.hasPrefix("CPU usage on web-1.example.com:9100 has been above 90%") == true)
        #expect(cpu.body?.contains("instance=web-1.example.com:9100") == true && cpu.body?.contains("alertname=") == false)
        #expect(cpu.launchUrl?.hasPrefix("http://prometheus.example.com:9090/graph?") == true)
        #expect(!cpu.resolved)
        // Resolved: same id, marked, resolves.
        let resolved = String(decoding: try fixture("alertmanager-firing.json"), as: UTF8.self).replacingOccurrences(
            of: #""firing""#, with: #""resolved""#)
        let again = try parse(resolved)
        #expect(again.map(\.appNotificationId) == alerts.map(\.appNotificationId) && again.allSatisfy(\.resolved))
        #expect(again[0].title == "✓ Resolved: HighCPUUsage: High CPU usage on web-1.example.com:9100")
        // Without a fingerprint the labels make one: the same labels, the same id.
        let bare = #"{"status":"firing","alerts":[{"labels":{"alertname":"Up","job":"a","severity":"info"}}]}"#
        let first = try #require(try parse(bare).first)
        #expect(first.appNotificationId == (try parse(bare).first?.appNotificationId) && first.appNotificationId?.hasPrefix("alert-") == true)
        #expect(first.priority == .low && first.title == "Up")
    }

    @Test("Grafana: the panel, then the dashboard, then the rule is the link; both payload versions")
    func grafana() throws {
        for file in ["grafana-firing.json", "grafana-firing-values.json"] {
            let alerts = try parse(try fixture(file))
            #expect(alerts.count == 2)
            #expect(alerts[0].title == "High memory usage: This alert was triggered for zone us-1")
            #expect(alerts[0].appNotificationId == "alert-c6eadffa33fcdf37")
            #expect(alerts[0].launchUrl == "https://play.grafana.org/alerting/1afz29v7z/edit")  // panel and dashboard URLs are empty
        }
        let panel =
            #"{"status":"firing","alerts":[{"labels":{"alertname":"A"},"panelURL":"https://g.example/d/x?viewPanel=2","dashboardURL":"https://g.example/d/x","generatorURL":"https://g.example/alerting/1"}]}"#
        #expect(try parse(panel).first?.launchUrl == "https://g.example/d/x?viewPanel=2")
    }
}

@Suite("Generic JSON and text webhooks")
struct SimpleHookTests {
    @Test("JSON: title, body or message, priority in three spellings, group, id, url, expires")
    func json() throws {
        let n = try #require(
            try parse(
                #"{"title":"Backup failed","message":"disk full","priority":5,"group":"backups","id":"nightly","url":"https://nas.example/logs","expires":3600}"#
            ).first)
        #expect(
            n
                == WebhookNotification(
                    appNotificationId: "nightly", title: "Backup failed", body: "disk full", priority: .high, groupName: "backups",
                    launchUrl: "https://nas.example/logs", expiration: .after(seconds: 3600)))
        #expect(try parse(#"{"message":"Backup failed\nsee the log"}"#).first.map { [$0.title, $0.body] } == ["Backup failed", "see the log"])
        for (given, expected) in [("\"low\"", Priority.low), ("\"normal\"", .none), ("\"High\"", .high), ("1", .low), ("3", .none), ("\"4\"", .high)]
        {
            #expect(try parse(#"{"title":"t","priority":\#(given)}"#).first?.priority == expected, "\(given)")
        }
        #expect(try parse(#"{"title":"t","expires":"2030-01-01T00:00:00Z"}"#).first?.expiration == .at(ISOTime.parse("2030-01-01T00:00:00Z")!))
        #expect(try parse(#"{"title":"t"}"#).first?.appNotificationId == nil)
    }

    @Test("text: first line the title, the rest the body; the query sets title, priority, group, id and url")
    func text() throws {
        #expect(try parse("Backup failed").first == WebhookNotification(appNotificationId: nil, title: "Backup failed"))
        #expect(try parse("\n  Backup failed \nline 2\nline 3\n").first.map { [$0.title, $0.body] } == ["Backup failed", "line 2\nline 3"])
        let n = try #require(
            try parse("disk full", query: ["title": "Backup", "priority": "high", "group": "nas", "id": "b1", "url": "https://nas.example"]).first)
        #expect(
            n
                == WebhookNotification(
                    appNotificationId: "b1", title: "Backup", body: "disk full", priority: .high, groupName: "nas", launchUrl: "https://nas.example"))
        // Cut-short JSON is not JSON: it is text, published as written.
        #expect(try parse(#"{"title":"trunc"#).first?.title == #"{"title":"trunc"#)
        let long = String(repeating: "x", count: 5000)
        #expect(try parse(long).first?.title.count == Webhooks.maxTitle)
    }

    @Test(
        "what cannot be understood is a WebhookError naming what to fix, for every kind",
        arguments: [
            (#"{"title":5}"#, [String: String](), "title must be a string"),
            (#"{"group":"g"}"#, [:], "a JSON body needs a title"),
            (#"{"title":"t","priority":"urgent"}"#, [:], "priority must be"),
            (#"{"title":"t","priority":9}"#, [:], "priority must be"),
            (#"{"title":"t","url":"javascript:alert(1)"}"#, [:], "url must be an absolute http"),
            (#"{"title":"t","expires":"soon"}"#, [:], "expires must be"),
            (#"{"title":"t","expires":-5}"#, [:], "expires must be"),
            ("   \n\t ", [:], "the body is empty"),
            (#"{"status":"firing","alerts":[{"labels":{"alertname":"A"}}, 7]}"#, [:], "alerts[1] must be a JSON object"),
            (#"{"status":"firing","alerts":[{"labels":{"alertname":5}}]}"#, [:], "alerts[0].labels.alertname must be a string"),
            (#"{"status":"firing","alerts":[{"annotations":{}}]}"#, [:], "alerts[0].labels must be"),
            (#"{"status":"firing","alerts":[{"labels":{"a":"b"},"status":"weird"}]}"#, [:], "alerts[0].status must be firing or resolved"),
            (#"{"action":"opened"}"#, ["X-GitHub-Event": "pull_request"], "pull_request.number and pull_request.title are required"),
            (#"{"action":"completed","workflow_run":{}}"#, ["X-GitHub-Event": "workflow_run"], "workflow_run.conclusion is required"),
            ("not json", ["X-GitHub-Event": "push"], "the body is not a JSON object"),
            ("payload=%7B%7D", ["X-GitHub-Event": "push", "Content-Type": "application/x-www-form-urlencoded"], "content type to application/json"),
            (#"{"object_kind":"pipeline"}"#, ["X-Gitlab-Event": "Pipeline Hook"], "object_attributes.status is required"),
            (
                #"{"object_kind":"issue","object_attributes":{"iid":"x"}}"#, ["X-Gitlab-Event": "Issue Hook"],
                "object_attributes.iid and object_attributes.title"
            ),
        ])
    func refused(body: String, headers: [String: String], message: String) {
        #expect(throws: WebhookError.self) { try parse(body, headers) }
        do {
            _ = try parse(body, headers)
        } catch {
            #expect(error.message.contains(message), "\(error.message)")
        }
    }

    @Test("bytes that are not UTF-8 are refused by every kind that reads text")
    func notUTF8() {
        let bytes = Data([0x42, 0x61, 0x63, 0xFF, 0xFE, 0x6B])
        #expect(throws: WebhookError.self) { try parse(bytes) }
        #expect(throws: WebhookError.self) { try parse(bytes, ["X-Gitlab-Event": "Push Hook"]) }
        #expect(throws: WebhookError.self) { try parse(bytes, ["X-GitHub-Event": "push"]) }
    }

    @Test("every fixture cut short at any of 200 places parses or is refused with a WebhookError, nothing else")
    func truncated() throws {
        let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")
        for file in try FileManager.default.contentsOfDirectory(atPath: directory.path) where file.hasSuffix(".json") {
            let data = try fixture(file)
            let headers =
                file.hasPrefix("github-")
                ? ["X-GitHub-Event": String(file.dropFirst(7).prefix { $0 != "-" && $0 != "." })]
                : file.hasPrefix("gitlab-") ? ["X-Gitlab-Event": "Pipeline Hook"] : [:]
            for cut in stride(from: 0, to: data.count, by: max(1, data.count / 200)) {
                do { _ = try parse(data.prefix(cut), headers) } catch { #expect(!error.message.isEmpty) }
            }
        }
    }
}
