// libFuzzer targets for notty's parsers of untrusted input. Built and run by scripts/fuzz/run
// (swiftc -sanitize=fuzzer,address), not by SwiftPM: libFuzzer brings its own main.
// NOTTY_FUZZ_TARGET picks the target; each one also checks a property, so a wrong answer is a
// crash too, not only a trap.

import Foundation
import NottyCore
import NottyTUI
import NottyTerminal
import NottyWebhooks

enum Target: String, CaseIterable {
    /// The JSON parser: never traps; what it accepts is written back and parsed to the same value.
    case json
    /// Change pages (`ChangesPage(wire:)`, read member by member): never traps; what it reads is
    /// JSON, and once written back it reads to the same page again and again (the first writing
    /// may round times to milliseconds).
    case changes
    /// Push payloads (`notty push`): never traps; a payload is accepted or rejected.
    case push
    /// Request bodies the service parses: publish and device mutations.
    case requests
    /// The terminal key decoder: any code from `wget_wch` decodes or is ignored, never traps.
    case keys
    /// TerminalText: nothing it returns holds a control character.
    case terminalText = "terminal-text"
    /// Webhook bodies (`POST /v1/hooks/…`) of every kind: never traps; what a kind accepts has a
    /// one-line title within the limit and a valid link or none. The first byte picks the sender.
    case webhooks
    /// ntfy publishes (PROTOCOL.md §8.1): "Name: value" header lines, a blank line, the body; the
    /// first byte's low bit picks the JSON publish to `/`. Never traps; what is accepted has a
    /// priority of 1–5, a valid sequence id and link or none, and becomes a valid notification.
    case ntfy
    /// Gotify's `POST /message`: header lines, a blank line, the body (JSON, urlencoded or
    /// multipart, as its Content-Type says). Never traps; what is accepted has a message and
    /// a priority of 0–10.
    case gotify
    /// Form bodies (urlencoded and multipart with the boundary `x`, the first byte picks):
    /// never traps.
    case forms
    /// Escalation rules (`POST /v1/me/escalations`, PROTOCOL.md §11): never traps; what is accepted
    /// keeps the limits (durations of 5 s to 30 days, 1–10 targets each of a known kind and
    /// command, a one-word name, priority high or all), and each target shown hides credentials.
    case escalation
    /// Actions (`X-Actions` in both forms, PROTOCOL.md §12): never traps; what is accepted keeps
    /// ntfy's limit of 3, has a label and an http(s) URL, and what devices are sent of an
    /// http action holds none of its URL, headers or body.
    case actions
}

/// An input as "Name: value" header lines, a blank line and the body.
func headersAndBody(_ data: Data) -> WebhookRequest {
    let bytes = [UInt8](data)
    var end = bytes.count, bodyStart = bytes.count
    if let blank = (0..<max(0, bytes.count - 1)).first(where: { bytes[$0] == 10 && bytes[$0 + 1] == 10 }) { (end, bodyStart) = (blank, blank + 2) }
    var headers: [String: String] = [:], query: [String: String] = [:]
    for line in String(decoding: bytes[..<end], as: UTF8.self).split(separator: "\n") {
        let parts = line.split(separator: ":", maxSplits: 1)
        guard parts.count == 2 else { continue }
        let name = String(parts[0]), value = parts[1].trimmingCharacters(in: .whitespaces)
        if name.hasPrefix("?") { query[String(name.dropFirst()).lowercased()] = value } else { headers[name] = value }
    }
    return WebhookRequest(body: Data(bytes[bodyStart...]), headers: headers, query: query)
}

/// The checks every notification a parser makes must pass.
func checkNotification(_ n: WebhookNotification) {
    precondition(
        !n.title.isEmpty && n.title.count <= Webhooks.maxTitle && !n.title.contains(where: \.isNewline), "bad title: \(n.title.debugDescription)")
    precondition(n.launchUrl.map(LaunchURL.isValid) ?? true, "bad link: \(n.launchUrl ?? "")")
}

/// The senders a webhook input claims to come from (its first byte picks one).
let senders: [[String: String]] = [
    [:],
    ["X-GitHub-Event": "workflow_run"], ["X-GitHub-Event": "pull_request"], ["X-GitHub-Event": "issue_comment"],
    ["X-GitHub-Event": "release"], ["X-GitHub-Event": "push"], ["X-GitHub-Event": "ping"],
    ["X-Gitlab-Event": "Pipeline Hook"], ["X-Gitlab-Event": "Note Hook"],
]

let target: Target = {
    let name = ProcessInfo.processInfo.environment["NOTTY_FUZZ_TARGET"] ?? ""
    guard let target = Target(rawValue: name) else {
        FileHandle.standardError.write(Data("set NOTTY_FUZZ_TARGET to one of \(Target.allCases.map(\.rawValue).joined(separator: ", "))\n".utf8))
        exit(2)
    }
    return target
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    let data = Data(bytes: start, count: count)
    switch target {
    case .json:
        if let value = JSONParser.parse(data) {
            let again = JSONParser.parse(Data(value.jsonText.utf8))
            precondition(again == value, "JSON round trip changed the value: \(value) → \(String(describing: again))")
        }
    case .changes:
        if let page = try? ChangesPage(wire: data) {
            precondition(JSONParser.parse(data) != nil, "a change page read from text that is not JSON")
            guard let once = try? ChangesPage(wire: Data(page.jsonBytes())) else {
                preconditionFailure("a change page written back is unreadable: \(page)")
            }
            let twice = try? ChangesPage(wire: Data(once.jsonBytes()))
            precondition(twice == once, "a change page written back read differently: \(once) → \(String(describing: twice))")
        }
    case .push:
        _ = try? PushPayload.parse(data)
    case .requests:
        _ = try? PublishRequest(body: data, limits: FieldLimits())
        if let fields = try? JSONFields(body: data) { _ = try? Mutation(fields: fields, id: nil) }
    case .keys:
        var index = 0
        while index + 5 <= count {
            let value = UInt32(start[index + 1]) | UInt32(start[index + 2]) << 8 | UInt32(start[index + 3]) << 16 | UInt32(start[index + 4]) << 24
            let key = decodeKey(start[index] & 1 == 0 ? .character(value) : .keyCode(Int32(bitPattern: value)))
            if case .character(let c)? = key {
                precondition(
                    c.unicodeScalars.allSatisfy { $0.value >= 0x20 && !(0x7F..<0xA0).contains($0.value) }, "a control code decoded as text: \(value)")
            }
            index += 5
        }
    case .webhooks:
        guard let first = data.first else { break }
        let request = WebhookRequest(
            body: data.dropFirst(), headers: senders[Int(first) % senders.count],
            query: first & 0x80 == 0 ? [:] : ["title": "t", "priority": "3", "url": "https://example.com/x"])
        _ = Webhooks.kind(of: request).credential(request)
        if let notifications = try? Webhooks.parse(request) {
            notifications.forEach(checkNotification)
        }
    case .ntfy:
        guard let first = data.first else { break }
        let request = headersAndBody(data.dropFirst())
        let message = first & 1 == 0 ? (try? Ntfy.jsonMessage(request))?.message : try? Ntfy.message(request, withBody: first & 2 == 0)
        if let message {
            precondition((1...5).contains(message.priority), "priority \(message.priority)")
            precondition(message.sequenceId.map(Ntfy.isValidSequenceId) ?? true, "sequence id \(message.sequenceId ?? "")")
            checkNotification(message.notification(appNotificationId: message.sequenceId ?? "id"))
        }
    case .gotify:
        let request = headersAndBody(data)
        _ = Gotify.token(request)
        if let message = try? Gotify.message(request) {
            precondition(!message.message.isEmpty && (message.priority.map { (0...10).contains($0) } ?? true), "\(message)")
            checkNotification(message.notification)
        }
    case .forms:
        guard let first = data.first else { break }
        let type = first & 1 == 0 ? "application/x-www-form-urlencoded" : "multipart/form-data; boundary=x"
        _ = try? FormFields.fields(of: WebhookRequest(body: data.dropFirst(), headers: ["Content-Type": type]))
    case .escalation:
        if let rule = try? EscalationRule(body: data, commands: ["ops": "true"], id: "id", now: Date(timeIntervalSince1970: 0)) {
            let durations = EscalationRule.minimumSeconds...EscalationRule.maximumSeconds
            precondition(durations.contains(rule.afterSeconds) && (rule.repeatSeconds.map(durations.contains) ?? true), "durations \(rule)")
            precondition((1...EscalationRule.maxTargets).contains(rule.targets.count), "targets \(rule.targets)")
            precondition(["high", "all"].contains(rule.priority) && !rule.name.isEmpty && !rule.name.contains(where: \.isWhitespace), "\(rule)")
            for text in rule.targets {
                guard let target = try? EscalationTarget(parsing: text) else { preconditionFailure("an accepted target does not parse: \(text)") }
                if case .command(let name) = target { precondition(name == "ops", "an unnamed command: \(name)") }
                if let scheme = target.shown.range(of: "://") {
                    let authority = target.shown[scheme.upperBound...].prefix { !"/?#".contains($0) }
                    precondition(!authority.contains("@") || authority.hasPrefix("…@"), "credentials shown: \(target.shown)")
                }
            }
            _ = rule.summary
        }
    case .actions:
        if let actions = try? NotificationAction.parse(header: String(decoding: data, as: UTF8.self)) {
            precondition(actions.count <= NotificationAction.maxPerNotification, "\(actions.count) actions")
            for action in actions {
                precondition(!action.label.isEmpty && LaunchURL.isValid(action.url ?? ""), "\(action)")
                // What devices are shown: exactly these members (a label may well say "body=").
                guard case .object(let shown)? = JSONParser.parse(Data(action.jsonBytes())) else {
                    preconditionFailure("shown is not an object: \(action)")
                }
                let allowed: Set<String> = action.kind == .http ? ["action", "clear", "label"] : ["action", "clear", "label", "url"]
                precondition(Set(shown.keys).isSubset(of: allowed), "shown: \(shown.keys.sorted())")
                precondition(
                    NotificationAction.list(JSONValue(jsonText: NotificationAction.storedText([action]) ?? "")) == [action], "stored: \(action)")
            }
        }
    case .terminalText:
        let text = String(decoding: data, as: UTF8.self)
        for keep in [false, true] {
            let safe = TerminalText.safe(text, keepingLineBreaks: keep)
            precondition(
                safe.unicodeScalars.allSatisfy { $0.value >= 0x20 && !(0x7F..<0xA0).contains($0.value) || (keep && $0 == "\n") },
                "a control character got through: \(safe.debugDescription)")
            precondition(TerminalText.isSafe(safe, keepingLineBreaks: keep))
        }
    }
    return 0
}
