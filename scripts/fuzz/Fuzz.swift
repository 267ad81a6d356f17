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
            guard let once = try? ChangesPage(wire: Data(page.jsonBytes())) else { preconditionFailure("a change page written back is unreadable: \(page)") }
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
                precondition(c.unicodeScalars.allSatisfy { $0.value >= 0x20 && !(0x7F..<0xA0).contains($0.value) }, "a control code decoded as text: \(value)")
            }
            index += 5
        }
    case .webhooks:
        guard let first = data.first else { break }
        let request = WebhookRequest(body: data.dropFirst(), headers: senders[Int(first) % senders.count],
                                     query: first & 0x80 == 0 ? [:] : ["title": "t", "priority": "3", "url": "https://example.com/x"])
        _ = Webhooks.kind(of: request).credential(request)
        if let notifications = try? Webhooks.parse(request) {
            for n in notifications {
                precondition(!n.title.isEmpty && n.title.count <= Webhooks.maxTitle && !n.title.contains(where: \.isNewline), "bad title: \(n.title.debugDescription)")
                precondition(n.launchUrl.map(LaunchURL.isValid) ?? true, "bad link: \(n.launchUrl ?? "")")
            }
        }
    case .terminalText:
        let text = String(decoding: data, as: UTF8.self)
        for keep in [false, true] {
            let safe = TerminalText.safe(text, keepingLineBreaks: keep)
            precondition(safe.unicodeScalars.allSatisfy { $0.value >= 0x20 && !(0x7F..<0xA0).contains($0.value) || (keep && $0 == "\n") },
                         "a control character got through: \(safe.debugDescription)")
            precondition(TerminalText.isSafe(safe, keepingLineBreaks: keep))
        }
    }
    return 0
}
