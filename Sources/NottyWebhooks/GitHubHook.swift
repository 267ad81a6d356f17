import Foundation
import NottyCore

/// GitHub repository and organisation webhooks (`X-GitHub-Event`), content type
/// `application/json`. With a secret, GitHub signs the raw body: `X-Hub-Signature-256:
/// sha256=<hex HMAC-SHA256>`.
public enum GitHubHook: WebhookKind {
    public static let name = "github"

    public static func recognises(_ request: WebhookRequest) -> Bool {
        request.header("X-GitHub-Event") != nil
    }

    public static func credential(_ request: WebhookRequest) -> WebhookCredential {
        guard let signature = request.header("X-Hub-Signature-256"), signature.hasPrefix("sha256=") else { return .hmacSHA256(hex: nil) }
        return .hmacSHA256(hex: String(signature.dropFirst(7)).lowercased())
    }

    public static func notifications(_ request: WebhookRequest) throws(WebhookError) -> [WebhookNotification] {
        let event = request.header("X-GitHub-Event") ?? ""
        if event == "ping" { return [] }
        guard !request.body.isEmpty else { throw WebhookError("GitHub \(event): the body is empty") }
        if request.header("Content-Type")?.lowercased().hasPrefix("application/x-www-form-urlencoded") == true {
            throw WebhookError("GitHub sent a form: set the webhook's content type to application/json")
        }
        let json = try request.object("GitHub \(event)")
        let repository = json.text("repository.full_name") ?? json.text("organization.login") ?? "GitHub"
        let actor = json.text("sender.login") ?? "someone"
        let action = json.text("action")
        // A redelivery of the same delivery updates its notification instead of adding one.
        let delivery = request.header("X-GitHub-Delivery").map { "github-\(Text.digest([$0]))" }
        func line(_ kind: String, _ path: String) throws(WebhookError) -> WebhookNotification {
            guard let number = json.text("\(path).number"), let title = json.text("\(path).title") else {
                throw WebhookError("GitHub \(event): \(path).number and \(path).title are required")
            }
            return WebhookNotification(
                appNotificationId: delivery, title: "\(repository): \(actor) \(action ?? "changed") \(kind) #\(number): \(title)",
                groupName: repository, launchUrl: json.link("\(path).html_url"))
        }
        switch event {
        case "workflow_run":
            guard action == "completed" else { return [] }  // requested and in_progress: the run is not over
            return [try workflowRun(json, repository: repository)]
        case "pull_request":
            return [try line("pull request", "pull_request")]
        case "issues":
            return [try line("issue", "issue")]
        case "issue_comment":
            guard let number = json.text("issue.number") else { throw WebhookError("GitHub issue_comment: issue.number is required") }
            let title = json.text("issue.title").map { ": \($0)" } ?? ""
            return [
                WebhookNotification(
                    appNotificationId: delivery, title: "\(repository): \(actor) commented on #\(number)\(title)",
                    body: json.text("comment.body"), groupName: repository,
                    launchUrl: json.link("comment.html_url") ?? json.link("issue.html_url"))
            ]
        case "release":
            let release = json.text("release.name") ?? json.text("release.tag_name") ?? "a release"
            return [
                WebhookNotification(
                    appNotificationId: delivery, title: "\(repository): \(actor) \(action ?? "changed") release \(release)",
                    body: json.text("release.body"), groupName: repository, launchUrl: json.link("release.html_url"))
            ]
        default:
            return [
                WebhookNotification(
                    appNotificationId: delivery, title: "\(repository): \(event)\(action.map { " \($0)" } ?? "")",
                    priority: .low, groupName: repository,
                    launchUrl: json.link("compare") ?? json.link("repository.html_url") ?? json.link("organization.html_url"))
            ]
        }
    }

    /// A finished run: one notification per repository + workflow + branch, so the next run's
    /// result updates the last one; a success after a failure resolves it.
    private static func workflowRun(_ json: JSONValue, repository: String) throws(WebhookError) -> WebhookNotification {
        guard let conclusion = json.text("workflow_run.conclusion") else {
            throw WebhookError("GitHub workflow_run: workflow_run.conclusion is required when completed")
        }
        let workflow = json.text("workflow_run.name") ?? json.text("workflow.name") ?? json.text("workflow_run.path") ?? "workflow"
        let branch = json.text("workflow_run.head_branch") ?? "?"
        let id = "github-run-\(Text.digest([repository, json.text("workflow_run.workflow_id") ?? workflow, branch]))"
        let place = "\(workflow) on \(repository)@\(branch)"
        let run = json.text("workflow_run.run_number").map { "Run #\($0)" }
        let body = [
            run, json.text("workflow_run.display_title") ?? json.text("workflow_run.head_commit.message"),
            json.text("workflow_run.actor.login").map { "by \($0)" },
        ]
        .compactMap { $0 }.joined(separator: "\n")
        let url = json.link("workflow_run.html_url")
        let said = conclusion.replacingOccurrences(of: "_", with: " ")
        return switch conclusion {
        case "success":
            WebhookNotification(appNotificationId: id, title: "✓ \(place)", body: body, groupName: repository, launchUrl: url, resolved: true)
        case "failure", "timed_out", "startup_failure":
            WebhookNotification(
                appNotificationId: id, title: "✗ \(place) (\(said))", body: body,
                priority: .high, groupName: repository, launchUrl: url)
        default:  // cancelled, skipped, neutral, action_required, stale: news, not an alarm
            WebhookNotification(
                appNotificationId: id, title: "– \(place) (\(said))", body: body,
                priority: .low, groupName: repository, launchUrl: url)
        }
    }
}
