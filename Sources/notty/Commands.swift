import ArgumentParser
import Foundation
import NottyCenter
import NottyCommandLine
import NottyCore
import NottyPOSIX
import NottyStore
import NottySync

struct Sync: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "sync", abstract: "Sync now: pull what changed, then send queued changes.")

    func run() async throws {
        try await reportingErrors {
            let (_, store, engine) = try await Device().session()
            let summary = try await engine.sync()
            let counts = try await store.perform { try $0.counts() }
            say(
                "pulled \(summary.pulled) change(s)\(summary.resynced ? " (full resync)" : ""), sent \(summary.sent); \(counts.unread) unread, \(counts.all) in all"
            )
        }
    }
}

struct Status: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status", abstract: "Show the account, the service, the connection, the cursor, the outbox, the last sync and the counts.")

    @Flag(help: "Print one JSON object.") var json = false

    func run() async throws {
        try await reportingErrors {
            let local = Device()
            let credentials = try local.credentials()
            let store = try await local.store()
            let (info, counts, preferences) = try await store.perform { store in
                (try store.syncInfo(), try store.counts(), try store.preferences())
            }
            let client = ServiceClient(file: local.credentialsFile, credentials: credentials, timeout: .seconds(3))
            var connection = "reachable"
            var onCall: [MyOnCall] = []
            do {
                let answer = try await client.send(.GET, "/v1/me")
                if answer.status != 200 { connection = "answered \(answer.status)" }
                // Where the user is on call (PROTOCOL.md §13.2); a service without it answers nothing here.
                onCall = ((try? await client.myOnCall()) ?? []).filter(\.onCall)
            } catch {
                connection = "unreachable: \(error)"
            }
            let lastSync = info.lastSync.map { "\(ISOTime.format($0)) (\(TimeText.relative($0, now: Date())))" } ?? "never"
            let now = Date()
            let interruptions = Interruptions(preferences: preferences, now: now)
            if json {
                let object: [String: JSONValue] = [
                    "account": .string(credentials.account), "server": .string(credentials.server), "user": .string(credentials.userName),
                    "device": credentials.deviceName.map(JSONValue.string) ?? .null, "connection": .string(connection),
                    "cursor": info.cursor.map(JSONValue.string) ?? .null, "outbox": .number(Double(info.outbox)),
                    "lastSync": info.lastSync.map { .string(ISOTime.format($0)) } ?? .null,
                    "counts": .object(
                        Dictionary(uniqueKeysWithValues: NotificationView.allCases.map { ($0.rawValue, JSONValue.number(Double(counts[$0]))) })),
                    "quiet": interruptions.quietUntil.map { .object(["until": .string(ISOTime.format($0)), "strict": .bool(interruptions.strict)]) }
                        ?? .null,
                    "schedule": interruptions.schedule?.value ?? .null,
                    "mutes": .array(interruptions.mutes.map(\.json)),
                    "onCall": .array(onCall.map { JSONValue.encoding($0) }),
                ]
                print(JSONValue.object(object).jsonText)
                return
            }
            say("account:    \(credentials.account)")
            say("device:     \(credentials.deviceName ?? "-") (\(credentials.deviceId ?? "not registered"))")
            say("service:    \(connection)")
            say("on call:    " + (onCall.isEmpty ? "no" : onCall.compactMap { $0.line(now: Date(), zone: .current) }.joined(separator: "; ")))
            say("cursor:     \(info.cursor ?? "none (never synced)")")
            say("outbox:     \(info.outbox) change(s) waiting")
            say("last sync:  \(lastSync)")
            say("counts:     " + NotificationView.allCases.map { "\($0.rawValue) \(counts[$0])" }.joined(separator: ", "))
            say(
                "quiet:      "
                    + (interruptions.quietUntil.map {
                        "until \(TimeText.clock($0, in: .current, now: now))" + (interruptions.strict ? ", High included" : "")
                    } ?? "off"))
            say("schedule:   " + (interruptions.schedule?.description ?? "none"))
            say(
                "muted:      "
                    + (interruptions.mutes.isEmpty
                        ? "nothing"
                        : interruptions.mutes.map { mute in
                            mute.description + (mute.until.map { " until \(TimeText.clock($0, in: .current, now: now))" } ?? "")
                        }.joined(separator: ", ")))
        }
    }
}

struct List: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "List one view from the local store (newest first).",
        discussion: "Works offline: it reads the local store. Run notty sync first for the latest.")

    @Option(
        help:
            "unread, read, activated, dismissed, snoozed, all or a saved view's name (notty view --list; default: view in config.toml, else unread)."
    ) var view: ViewChoice?
    @Flag(help: "One notification per line as JSON, with the service's field names (the same object as GET /v1/me/notifications/ID).") var json =
        false
    @Option(help: "At most this many.") var limit: Int = 50
    @Option(
        help: ArgumentHelp(
            "Only those the search finds (in a saved view: and its search).",
            discussion: """
                Words find the start of a word in the title, body, app or group, any case and accents \
                (koln finds Köln); every term is required. "quoted words" one after another; -term \
                leaves out. Fields: app:HOST group:NAME team:NAME priority:high|normal|low \
                is:unread|read|activated|dismissed|snoozed by:USER after:YYYY-MM-DD before:YYYY-MM-DD \
                has:link|actions. Example: --search 'disk -replica app:db.example.com is:unread'
                """, valueName: "query"))
    var search: String = ""

    func validate() throws {
        guard limit > 0 else { throw ArgumentParser.ValidationError("--limit must be at least 1") }
    }

    func run() async throws {
        try await reportingErrors {
            let device = Device()
            let choice = try self.view ?? ViewChoice(device.settings().view)
            let store = try await device.store()
            let now = Date()
            let limit = limit
            let (view, search) = try await store.perform { store in
                let (view, query, _) = try choice.resolve(store)
                return (view, [query, self.search].filter { !$0.isEmpty }.joined(separator: " "))
            }
            let (rows, total) = try await store.perform { store in
                let rows = try store.window(view: view, query: search, offset: 0, limit: limit, now: now)
                return (rows, rows.count < limit ? rows.count : try store.count(view: view, query: search, now: now))
            }
            if json {
                for row in rows { print(jsonLine(row)) }
                return
            }
            if rows.isEmpty { say("nothing in \(choice.saved ?? view.rawValue)"); return }
            for row in rows {
                let mark = RowGlyphs.unread(row.readState)
                let priority = RowGlyphs.priority(row.priority)
                let source = row.groupName.map { "\(row.targetHostName)/\($0)" } ?? row.targetHostName
                say(
                    "\(row.id.prefix(8)) \(mark)\(priority) \(TimeText.age(of: row.createdDateTime, now: now).leftPadded(3))  \(source)  \(row.displayTitle)"
                )
            }
            if total > rows.count { say("… \(total - rows.count) more (--limit)") }
        }
    }
}

struct Show: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "show", abstract: "Show one notification in full.")

    @Argument(help: "An id or a unique prefix of at least 6 characters.") var id: String
    @Flag(help: "Print it as JSON.") var json = false

    func run() async throws {
        try await reportingErrors {
            let store = try await Device().store()
            let id = id
            guard let n = try await store.perform({ try $0.notification(id: try $0.resolve(id)) }) else { throw CLIError("no notification \(id)") }
            if json { print(jsonLine(n)); return }
            say(n.displayTitle)
            if let body = n.payload.visualContent?.body { say(""); say(body, keepingLineBreaks: true); say("") }
            say("id:          \(n.id)")
            if let team = n.team { say("team:        \(team)") }
            if let url = n.launchUrl { say("link:        \(url)") }
            say("app:         \(n.targetHostName)\(n.groupName.map { " (group \($0))" } ?? "")")
            say("priority:    \(n.priority.rawValue)")
            say("state:       \(n.readState.rawValue), \(n.userActionState.rawValue)\(n.snoozedUntil.map { " until \(ISOTime.format($0))" } ?? "")")
            if let line = n.changedByLine(now: Date()) { say("handled:     \(line)") }
            say("created:     \(ISOTime.format(n.createdDateTime)) (\(TimeText.relative(n.createdDateTime, now: Date())))")
            say("expires:     \(ISOTime.format(n.expirationDateTime))\(n.isLive(at: Date()) ? "" : " (expired)")")
            if let raw = n.payload.rawContent { say("raw content: \(raw)") }
            for record in n.escalations ?? [] { say("escalated:   \(record.line(now: Date()))") }
            for line in n.actionLines(now: Date()) { say("action \(line)") }
        }
    }
}

/// `notty act ID N|LABEL` (PROTOCOL.md §12): the service runs an http action once, whichever device
/// presses first; a view action opens its link here and activates the notification.
struct Act: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "act",
        abstract: "Run one of a notification's actions (notty show ID lists them).",
        discussion: """
            An http action is run by the service, once: pressed again here or on another \
            device while it runs or after it succeeded, the outcome is shown and nothing runs \
            again; after a failure it runs again. Its request stays on the service. A view \
            action opens its link here and activates the notification.

              notty act 0192f3a1 1              (the first action)
              notty act 0192f3a1 "Silence 1h"   (by its label, any case)

            Exits non-zero, with one line saying why, when the action failed.
            """)

    @Argument(help: "An id or a unique prefix of at least 6 characters.") var id: String
    @Argument(help: "The action's number (from 1) or its label.") var action: String

    func run() async throws {
        try await reportingErrors {
            let local = Device()
            let store = try await local.store()
            let id = id
            var found = try? await store.perform({ try $0.notification(id: try $0.resolve(id)) })
            if found == nil {  // arrived since this device last synced
                _ = try await local.session().engine.pull()
                found = try await store.perform({ try $0.notification(id: try $0.resolve(id)) })
            }
            guard let n = found else { throw CLIError("no notification \(id)") }
            let actions = n.actions ?? []
            guard !actions.isEmpty else { throw CLIError("\(n.id.prefix(8)) has no actions") }
            let index: Int
            if let number = Int(action) {
                guard actions.indices.contains(number - 1) else {
                    throw CLIError("\(n.id.prefix(8)) has \(actions.count) action(s): give 1 to \(actions.count), or a label")
                }
                index = number - 1
            } else if let found = actions.firstIndex(where: {
                $0.label.caseInsensitiveCompare(action.trimmingCharacters(in: .whitespaces)) == .orderedSame
            }) {
                index = found
            } else {
                throw CLIError("\(n.id.prefix(8)) has no action \"\(action)\" (it has \(actions.map { "\"\($0.label)\"" }.joined(separator: ", ")))")
            }
            let chosen = actions[index]
            if chosen.kind == .view, let url = chosen.url {
                _ = try await store.perform { try $0.record([(n.id, .patch(StateChange.activate))]) }
                if let problem = LinkOpener.open(url) { warn(problem) }
                say("opened \(url) and activated 1 notification")
                await deliverQueued(local)
                return
            }
            let (client, _, engine) = try await local.session()
            let result = try await client.pressAction(id: n.id, action: index + 1)
            _ = try? await engine.pull()  // the outcome (and a clear's dismissal) into this device's store
            let line = "\(chosen.label): \(result.line(now: Date()))"
            guard result.status != .failed else { throw CLIError(line) }
            say(line)
        }
    }
}

/// read, unread, activate, dismiss, snooze and delete share everything but the change.
protocol StateCommand: AsyncParsableCommand {
    var targets: Targets { get }
    var verb: String { get }
    func change() throws -> LocalChange
}

extension StateCommand {
    func run() async throws {
        try await reportingErrors {
            let local = Device()
            let store = try await local.store()
            let (targets, change) = (targets, try change())
            let changed = try await store.perform { store in try store.record(try targets.resolve(in: store).map { ($0, change) }) }
            say("\(verb) \(changed.count) notification(s)")
            await deliverQueued(local)
        }
    }
}

/// After a change was queued durably: tries to send it now. Offline is fine: the next sync
/// sends it (one line says so).
func deliverQueued(_ local: Device) async {
    do {
        let (_, _, engine) = try await local.session(timeout: 5)
        try await engine.flush()
    } catch let error as SyncError where error.isTransient {
        warn("queued: \(error); the next sync sends it")
    } catch {
        warn("queued: \(error)")
    }
}

struct Read: StateCommand {
    static let configuration = CommandConfiguration(commandName: "read", abstract: "Mark notifications read.")
    @OptionGroup var targets: Targets
    var verb: String { "read" }
    func change() throws -> LocalChange { .patch(StateChange(readState: .read)) }
}

struct Unread: StateCommand {
    static let configuration = CommandConfiguration(commandName: "unread", abstract: "Mark notifications unread.")
    @OptionGroup var targets: Targets
    var verb: String { "unread" }
    func change() throws -> LocalChange { .patch(StateChange(readState: .unread)) }
}

struct Activate: StateCommand {
    static let configuration = CommandConfiguration(
        commandName: "activate", abstract: "Activate notifications (Activated and Read), as clicking them would.")
    @OptionGroup var targets: Targets
    var verb: String { "activated" }
    func change() throws -> LocalChange { .patch(StateChange.activate) }
}

struct Dismiss: StateCommand {
    static let configuration = CommandConfiguration(commandName: "dismiss", abstract: "Dismiss notifications, on every device.")
    @OptionGroup var targets: Targets
    var verb: String { "dismissed" }
    func change() throws -> LocalChange { .patch(StateChange(userActionState: .dismissed)) }
}

struct Snooze: StateCommand {
    static let configuration = CommandConfiguration(
        commandName: "snooze",
        abstract: "Snooze notifications for a while; they come back by themselves.",
        discussion: "notty snooze 3f2a9c --for 1h")
    @OptionGroup var targets: Targets
    @Option(name: .customLong("for"), help: ArgumentHelp("How long: 90s, 15m, 1h, 2d.", valueName: "duration")) var duration: DurationArgument
    var verb: String { "snoozed" }
    func change() throws -> LocalChange {
        .patch(StateChange(userActionState: .snoozed, snoozedUntil: Date().addingTimeInterval(TimeInterval(duration.seconds))))
    }
}

struct Open: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "open",
        abstract: "Open a notification's link and activate it (Activated and Read), on every device.",
        discussion: "Runs $BROWSER when set, else xdg-open, with the link as one argument (never through a shell).")

    @Argument(help: "An id or a unique prefix of at least 6 characters.") var id: String

    func run() async throws {
        try await reportingErrors {
            let local = Device()
            let store = try await local.store()
            let id = id
            guard let n = try await store.perform({ try $0.notification(id: try $0.resolve(id)) }) else { throw CLIError("no notification \(id)") }
            guard let url = n.launchUrl else { throw CLIError("\(n.id.prefix(8)) has no link: nothing changed") }
            _ = try await store.perform { try $0.record([(n.id, .patch(StateChange.activate))]) }
            if let problem = LinkOpener.open(url) { warn(problem) }
            say("opened \(url) and activated 1 notification")
            await deliverQueued(local)
        }
    }
}

struct Delete: StateCommand {
    static let configuration = CommandConfiguration(commandName: "delete", abstract: "Delete notifications on every device. Final.")
    @OptionGroup var targets: Targets
    var verb: String { "deleted" }
    func change() throws -> LocalChange { .delete }
}

extension String {
    func leftPadded(_ width: Int) -> String {
        count >= width ? self : String(repeating: " ", count: width - count) + self
    }
}
