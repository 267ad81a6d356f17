import Foundation
import NottyCore

// MARK: - What an alert keeps beyond a notification (PROTOCOL.md §16.2)

extension Opsgenie {
    /// An alert's count, priority, description, source, tags, details and notes: kept as its
    /// notification's `payload.rawContent` (`{"opsgenie":{…}}`, the app's own data, on every
    /// device) and written into its body, so that every device shows them.
    public struct Record: Sendable, Equatable {
        public struct Note: Sendable, Equatable {
            public var note: String
            public var user: String
            public var createdAt: Date

            /// Who wrote it, as shown: its user, else the API's name.
            public var owner: String { user.isEmpty ? "Opsgenie API" : user }

            public init(note: String, user: String, createdAt: Date) {
                self.note = note
                self.user = user
                self.createdAt = createdAt
            }
        }

        public var count = 1
        /// `P1`–`P5`, as given (the notification keeps three levels).
        public var priority = "P3"
        public var description: String?
        public var source: String?
        public var tags: [String] = []
        public var details: [String: String] = [:]
        /// The last ``keptNotes`` notes, oldest first.
        public var notes: [Note] = []

        /// notty's limits (Opsgenie's are larger): 20 tags of up to 50 characters, details of
        /// up to 8,000 characters in all, notes of up to 2,000 (the last 50 kept), a
        /// description of up to 15,000.
        public static let maxTags = 20
        public static let maxTag = 50
        public static let maxDetails = 8_000
        public static let maxNote = 2_000
        public static let keptNotes = 50
        public static let maxDescription = 15_000

        public init() {}

        /// The record `n` keeps; an alert written before records were kept (or a notification
        /// of another kind) has its body as the description and its level as the priority.
        public init(of n: UserNotification) {
            if let raw = n.payload.rawContent, let record = JSONParser.parse(Data(raw.utf8))?["opsgenie"], case .object = record {
                count = max(1, Int(record.text("count") ?? "") ?? 1)
                priority = record.text("priority").flatMap { Opsgenie.priorities.contains($0) ? $0 : nil } ?? Opsgenie.priority(n.priority)
                description = record.text("description")
                source = record.text("source")
                if case .array(let items)? = record["tags"] { tags = items.compactMap { if case .string(let tag) = $0 { tag } else { nil } } }
                if case .object(let members)? = record["details"] {
                    details = members.compactMapValues { if case .string(let value) = $0 { value } else { nil } }
                }
                if case .array(let items)? = record["notes"] {
                    notes = items.compactMap { item in
                        guard let note = item.text("note"), let at = item.text("createdAt").flatMap(ISOTime.parse) else { return nil }
                        return Note(note: note, user: item.text("user") ?? "", createdAt: at)
                    }
                }
            } else {
                priority = Opsgenie.priority(n.priority)
                description = n.payload.visualContent?.body
            }
        }

        /// The notification's `rawContent`.
        public var rawContent: String {
            var record: [String: JSONValue] = [
                "count": .number(Double(count)), "priority": .string(priority), "tags": .array(tags.map(JSONValue.string)),
                "details": .object(details.mapValues(JSONValue.string)),
                "notes": .array(
                    notes.map {
                        .object(["note": .string($0.note), "user": .string($0.user), "createdAt": .string(ISOTime.format($0.createdAt))])
                    }),
            ]
            if let description { record["description"] = .string(description) }
            if let source { record["source"] = .string(source) }
            return JSONValue.object(["opsgenie": .object(record)]).jsonText
        }

        /// The notification's body: the description, source, tags, each detail and each note
        /// (newest last), a line each.
        public var body: String {
            var lines: [String] = []
            if let description { lines.append(description) }
            if let source { lines.append("source: \(source)") }
            if !tags.isEmpty { lines.append("tags: " + tags.joined(separator: ", ")) }
            lines += details.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }
            lines += notes.map { "note (\($0.owner)): \($0.note)" }
            return String(lines.joined(separator: "\n").prefix(15_000))
        }

        /// The notification's level for ``priority``.
        public var level: Priority {
            switch priority {
            case "P1", "P2": .high
            case "P4", "P5": .low
            default: .none
            }
        }

        /// Adds a note (the oldest dropped beyond ``keptNotes``).
        mutating func add(note: String, user: String?, at now: Date) {
            notes.append(Note(note: note, user: String((user ?? "").prefix(64)), createdAt: now))
            if notes.count > Self.keptNotes { notes.removeFirst(notes.count - Self.keptNotes) }
        }

        /// `422`'s errors for a record past notty's limits (empty: within them).
        var problems: [String: String] {
            var errors: [String: String] = [:]
            if tags.count > Self.maxTags { errors["tags"] = "An alert has at most \(Self.maxTags) tags here." }
            if details.reduce(0, { $0 + $1.key.count + $1.value.count }) > Self.maxDetails {
                errors["details"] = "An alert's details are at most \(Self.maxDetails) characters in all here."
            }
            return errors
        }
    }

    static let priorities: Set<String> = ["P1", "P2", "P3", "P4", "P5"]

    /// A change of an alert's content (`POST|DELETE /v2/alerts/{id}/notes|tags|details`,
    /// `PUT …/message|description|priority`), with who made it and the note it may carry.
    public struct Edit: Sendable, Equatable {
        public enum Change: Sendable, Equatable {
            case note
            case addTags([String])
            case removeTags([String])
            case addDetails([String: String])
            case removeDetails([String])
            case message(String)
            case description(String)
            case priority(String)
        }

        public var change: Change
        public var user: String?
        public var note: String?

        public init(change: Change, user: String?, note: String?) {
            self.change = change
            self.user = user
            self.note = note
        }

        /// The request's name in its id (`AddNote`, `AddTags`, …), as Opsgenie names them.
        public var action: String {
            switch change {
            case .note: "AddNote"
            case .addTags: "AddTags"
            case .removeTags: "RemoveTags"
            case .addDetails: "AddDetails"
            case .removeDetails: "RemoveDetails"
            case .message: "UpdateMessage"
            case .description: "UpdateDescription"
            case .priority: "UpdatePriority"
            }
        }
    }

    /// What an edit route names.
    public enum EditField: String, Sendable, CaseIterable {
        case notes, tags, details, message, description, priority
    }

    /// Reads an edit: its body (`user`, `note`, `source` and the field's own) and, for a
    /// `DELETE` of tags or details, the list in the query (`tags=a,b`, `keys=a,b`).
    public static func edit(_ field: EditField, body: Data, removing: String?, query: (String) -> String?) throws(Refusal) -> Edit {
        let json: JSONValue
        if body.isEmpty {
            json = .object([:])
        } else {
            guard let parsed = JSONParser.parse(body), case .object = parsed else { throw Refusal(errors: ["body": "must be a JSON object"]) }
            json = parsed
        }
        func given(_ key: String) -> String? { json.text(key) ?? query(key) }
        var errors = notStrings(json, ["user", "note", "source", "message", "description", "priority"])
        let user = given("user"), note = given("note")
        var change = Edit.Change.note
        switch field {
        case .notes:
            if note?.trimmed(newlines: true).isEmpty ?? true { errors["note"] = "Note can not be empty." }
        case .tags:
            if let removing {
                change = .removeTags(list(removing))
                if list(removing).isEmpty { errors["tags"] = "Name the tags to remove: tags=a,b." }
            } else if case .array(let items)? = json["tags"], items.allSatisfy({ if case .string = $0 { true } else { false } }) {
                change = .addTags(items.compactMap { if case .string(let tag) = $0 { tag.trimmed() } else { nil } }.filter { !$0.isEmpty })
            } else {
                errors["tags"] = "Tags should be a list of strings."
            }
            if case .addTags(let tags) = change, tags.isEmpty { errors["tags"] = "Tags can not be empty." }
            if case .addTags(let tags) = change, tags.contains(where: { $0.count > Record.maxTag || $0.containsNUL }) {
                errors["tags"] = "A tag is at most \(Record.maxTag) characters here, none of them NUL."
            }
        case .details:
            if let removing {
                change = .removeDetails(list(removing))
                if list(removing).isEmpty { errors["keys"] = "Name the details to remove: keys=a,b." }
            } else if case .object(let members)? = json["details"], !members.isEmpty {
                change = .addDetails(members.mapValues { if case .string(let value) = $0 { value } else { $0.jsonText } })
            } else {
                errors["details"] = "Details should be an object of strings, not empty."
            }
        case .message:
            let message = json.text("message")?.trimmed(newlines: true) ?? ""
            if message.isEmpty { errors["message"] = "Message can not be empty." }
            change = .message(String(message.prefix(maxMessage)))
        case .description:
            let description = json.text("description") ?? ""
            if description.count > Record.maxDescription {
                errors["description"] = "Description can be at most \(Record.maxDescription) characters long."
            }
            change = .description(description)
        case .priority:
            let priority = json.text("priority")?.uppercased() ?? ""
            if !priorities.contains(priority) { errors["priority"] = "Priority should be one of [P1, P2, P3, P4, P5]." }
            change = .priority(priority)
        }
        if let note, note.count > Record.maxNote { errors["note"] = "Note can be at most \(Record.maxNote) characters long here." }
        switch change {
        case .message(let text) where text.containsNUL: errors["message"] = "Message must not contain the character U+0000 (NUL)."
        case .description(let text) where text.containsNUL: errors["description"] = "Description must not contain the character U+0000 (NUL)."
        default: break
        }
        if [user, note].contains(where: { $0?.containsNUL ?? false }) || body.contains(0) {
            errors["body"] = "The request must not contain the character U+0000 (NUL)."
        }
        if case .addDetails(let details) = change, details.contains(where: { $0.key.containsNUL || $0.value.containsNUL }) {
            errors["details"] = "Details must not contain the character U+0000 (NUL)."
        }
        guard errors.isEmpty else { throw Refusal(errors: errors) }
        return Edit(change: change, user: user, note: note)
    }

    /// A comma-separated list's items, trimmed, none empty.
    static func list(_ text: String) -> [String] {
        text.split(separator: ",").map { String($0).trimmed() }.filter { !$0.isEmpty }
    }

    /// `n` with `edit` made (its title, level, body and record): what ``Edit`` changes and
    /// nothing else. `422` when the alert would be past notty's limits.
    public static func edited(_ n: UserNotification, _ edit: Edit, now: Date) throws(Refusal) -> UserNotification {
        var record = Record(of: n)
        var title = n.payload.visualContent?.title ?? ""
        switch edit.change {
        case .note: break
        case .addTags(let tags):
            for tag in tags where !record.tags.contains(tag) { record.tags.append(tag) }
        case .removeTags(let tags): record.tags.removeAll { tags.contains($0) }
        case .addDetails(let details): record.details.merge(details) { $1 }
        case .removeDetails(let keys): for key in keys { record.details[key] = nil }
        case .message(let message): title = Text.title(message)
        case .description(let description): record.description = description.isEmpty ? nil : description
        case .priority(let priority): record.priority = priority
        }
        if let note = edit.note, !note.trimmed(newlines: true).isEmpty { record.add(note: note, user: edit.user, at: now) }
        let problems = record.problems
        guard problems.isEmpty else { throw Refusal(errors: problems) }
        var changed = n
        changed.priority = record.level
        changed.payload = NotificationPayload(rawContent: record.rawContent, visualContent: VisualContent(title: title, body: record.body))
        return changed
    }
}
