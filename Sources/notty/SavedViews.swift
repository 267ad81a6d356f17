import ArgumentParser
import Foundation
import NottyCommandLine
import NottyCore
import NottyStore

// `notty view`: saved searches every device shows (PROTOCOL.md §17).

struct ViewCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "view",
        abstract: "Saved views: named searches that every device shows as tabs after All.",
        discussion: """
              notty view add builds 'app:ci.example.com is:unread'
              notty view add db '"disk full" -replica priority:high'
              notty view --list                 each one's search and how many it holds now
              notty view remove builds
              notty count --view builds         (and notty list / notty watch --view builds)

            A view is synced like a preference: made on one device, every device has it; the \
            later change wins. The center shows the first three as keys 7, 8 and 9 (Tab goes \
            on through the rest). At most \(SavedView.maxViews); names are letters, digits, - and _. \
            The search is the query language of notty list --search (see notty list --help).
            """,
        subcommands: [Add.self, Remove.self])

    @Flag(help: "List the saved views with their searches and counts.") var list = false
    @Flag(help: "With --list: one JSON object a line.") var json = false

    func run() async throws {
        // Here, not in validate(): ArgumentParser validates this command on the way to add and remove too.
        guard list else { throw ArgumentParser.ValidationError("give add NAME 'QUERY', remove NAME or --list") }
        try await reportingErrors {
            let store = try await Device().store()
            let json = json
            let views = try await store.perform { store in
                try SavedView.all(in: store.preferences()).map { view in (view, try store.count(view: .all, query: view.query)) }
            }
            for (view, count) in views {
                if json {
                    print(JSONValue.object(["name": .string(view.name), "query": .string(view.query), "count": .number(Double(count))]).jsonText)
                } else {
                    say(
                        "\(view.name.padding(toLength: max(view.name.count, 12), withPad: " ", startingAt: 0))  \(String(count).leftPadded(6))  \(view.query)"
                    )
                }
            }
            if views.isEmpty && !json { say("no saved views (notty view add NAME 'QUERY')") }
        }
    }

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "add", abstract: "Save a search as a view (a new search for a name replaces its old one).")

        @Argument(help: "Its name: letters, digits, - and _.") var name: String
        @Argument(help: "The search, in the query language of notty list --search (quote it).") var query: String

        func validate() throws {
            do {
                try SavedView.check(name: name)
                _ = try SearchQuery.parse(query)
            } catch {
                throw ArgumentParser.ValidationError(error.message)
            }
        }

        func run() async throws {
            try await reportingErrors {
                let device = Device()
                let store = try await device.store()
                let view = SavedView(name: name, query: query)
                let count = try await store.perform { store -> Int in
                    let known = SavedView.all(in: try store.preferences())
                    guard known.contains(where: { $0.name == view.name }) || known.count < SavedView.maxViews else {
                        throw CLIError("you keep at most \(SavedView.maxViews) saved views: remove one first (notty view remove NAME)")
                    }
                    try store.setPreference(key: view.key, value: view.value)
                    return try store.count(view: .all, query: view.query)
                }
                await deliverQueued(device)
                say("saved view \(view.name): \(count) now")
            }
        }
    }

    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "remove", abstract: "Remove a saved view on every device.")

        @Argument(help: "Its name.") var name: String

        func run() async throws {
            try await reportingErrors {
                let device = Device()
                let store = try await device.store()
                let name = name
                try await store.perform { store in
                    guard SavedView.all(in: try store.preferences()).contains(where: { $0.name == name }) else {
                        throw CLIError("no saved view \(name) (notty view --list)")
                    }
                    try store.setPreference(key: SavedView.keyPrefix + name, value: .null)
                }
                await deliverQueued(device)
                say("removed view \(name)")
            }
        }
    }
}

/// `--view NAME` of `notty list`, `count` and `watch`: a built-in view, or a saved view's name.
struct ViewChoice: ExpressibleByArgument, Sendable {
    var builtIn: NotificationView?
    var saved: String?

    init?(argument: String) {
        if let view = NotificationView(name: argument) {
            builtIn = view
        } else {
            guard (try? SavedView.check(name: argument)) != nil else { return nil }
            saved = argument
        }
    }

    init(_ view: NotificationView) { builtIn = view }

    static var allValueStrings: [String] { NotificationView.allCases.map(\.rawValue) }
    var defaultValueDescription: String { builtIn?.rawValue ?? saved ?? "" }

    /// The view and search it stands for in `store` (a saved view: All with its search).
    func resolve(_ store: LocalStore) throws -> (view: NotificationView, query: String, saved: SavedView?) {
        if let builtIn { return (builtIn, "", nil) }
        let name = saved ?? ""
        guard let view = try store.savedView(named: name) else {
            throw CLIError(
                "--view \(name): no such view: a view is unread, read, activated, dismissed, snoozed, all or a saved view (notty view --list)")
        }
        return (.all, view.query, view)
    }
}
