import Foundation
import NottyCore

/// GitLab project and group webhooks (`X-Gitlab-Event`). With a secret token, GitLab sends it
/// as `X-Gitlab-Token`.
public enum GitLabHook: WebhookKind {
    public static let name = "gitlab"

    public static func recognises(_ request: WebhookRequest) -> Bool {
        request.header("X-Gitlab-Event") != nil
    }

    public static func credential(_ request: WebhookRequest) -> WebhookCredential {
        .token(request.header("X-Gitlab-Token"))
    }

    public static func notifications(_ request: WebhookRequest) throws(WebhookError) -> [WebhookNotification] {
        let event = request.header("X-Gitlab-Event") ?? ""
        let json = try request.object("GitLab \(event)")
        let project = json.text("project.path_with_namespace") ?? json.text("project.name") ?? "GitLab"
        let actor = json.text("user.name") ?? json.text("user.username") ?? json.text("user_name") ?? "someone"
        let url = json.link("object_attributes.url")
        let action = json.text("object_attributes.action").map { Self.pastTense($0) }
        switch json.text("object_kind") {
        case "pipeline":
            return try pipeline(json, project: project).map { [$0] } ?? []
        case "merge_request":
            let (iid, title) = try numbered(json, "merge request")
            return [
                WebhookNotification(
                    appNotificationId: nil, title: "\(project): \(actor) \(action ?? "updated") merge request !\(iid): \(title)",
                    groupName: project, launchUrl: url)
            ]
        case "issue", "work_item":
            let (iid, title) = try numbered(json, "issue")
            return [
                WebhookNotification(
                    appNotificationId: nil, title: "\(project): \(actor) \(action ?? "updated") issue #\(iid): \(title)",
                    groupName: project, launchUrl: url)
            ]
        case "note":
            let on =
                switch json.text("object_attributes.noteable_type") {
                case "MergeRequest": json.text("merge_request.iid").map { " on merge request !\($0)" }
                case "Issue": json.text("issue.iid").map { " on issue #\($0)" }
                case "Commit": json.text("commit.id").map { " on commit \($0.prefix(8))" }
                default: nil as String?
                }
            return [
                WebhookNotification(
                    appNotificationId: nil, title: "\(project): \(actor) commented\(on ?? "")",
                    body: json.text("object_attributes.note"), groupName: project, launchUrl: url)
            ]
        default:
            let kind = json.text("object_kind") ?? json.text("event_name") ?? event
            let ref = json.text("ref").map { " \($0)" } ?? ""
            return [
                WebhookNotification(
                    appNotificationId: nil, title: "\(project): \(kind)\(ref)", priority: .low, groupName: project,
                    launchUrl: url ?? json.link("project.web_url"))
            ]
        }
    }

    /// A finished pipeline: one notification per project + ref, so the next pipeline's result
    /// updates the last one; a success after a failure resolves it. Pipelines still running
    /// (created, pending, running, …) are not news yet: nil.
    private static func pipeline(_ json: JSONValue, project: String) throws(WebhookError) -> WebhookNotification? {
        guard let status = json.text("object_attributes.status") else { throw WebhookError("GitLab pipeline: object_attributes.status is required") }
        let ref = json.text("object_attributes.ref") ?? "?"
        let id = "gitlab-pipeline-\(Text.digest([project, ref]))"
        let url =
            json.link("object_attributes.url")
            ?? json.text("object_attributes.id").flatMap { pipeline in json.link("project.web_url").map { "\($0)/-/pipelines/\(pipeline)" } }
        let failedJobs = (json["builds"]?.arrayValue ?? [])
            .filter { $0.text("status") == "failed" }.compactMap { $0.text("name") }
        let body = [
            json.text("object_attributes.id").map { "Pipeline #\($0)" }, json.text("commit.title") ?? json.text("commit.message"),
            failedJobs.isEmpty ? nil : "Failed: \(failedJobs.joined(separator: ", "))",
        ].compactMap { $0 }.joined(separator: "\n")
        let place = "pipeline on \(project)@\(ref)"
        switch status {
        case "success":
            return WebhookNotification(appNotificationId: id, title: "✓ \(place)", body: body, groupName: project, launchUrl: url, resolved: true)
        case "failed":
            return WebhookNotification(
                appNotificationId: id, title: "✗ \(place) failed", body: body, priority: .high, groupName: project, launchUrl: url)
        case "canceled", "skipped", "manual", "blocked":
            return WebhookNotification(
                appNotificationId: id, title: "– \(place) \(status)", body: body, priority: .low, groupName: project, launchUrl: url)
        default:
            return nil
        }
    }

    private static func numbered(_ json: JSONValue, _ what: String) throws(WebhookError) -> (String, String) {
        guard let iid = json.text("object_attributes.iid"), let title = json.text("object_attributes.title") else {
            throw WebhookError("GitLab \(what): object_attributes.iid and object_attributes.title are required")
        }
        return (iid, title)
    }

    /// GitLab's actions (`open`, `close`, `reopen`, `update`, `merge`, `approved`, …) as verbs.
    private static func pastTense(_ action: String) -> String {
        switch action {
        case "open": "opened"
        case "close": "closed"
        case "reopen": "reopened"
        case "update": "updated"
        case "merge": "merged"
        case "approve": "approved"
        case "unapprove": "unapproved"
        case "create": "created"
        default: action
        }
    }
}
