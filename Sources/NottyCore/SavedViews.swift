import Foundation

/// Saved views (PROTOCOL.md §17): a named search, kept as the preference `view.<NAME>` =
/// `{"query":"<QUERY>"}` (`null` removes it), so every device has it and the later change wins
/// (§9). The center and the web inbox show them as tabs after All; `notty count|list|watch
/// --view NAME` take them.
public struct SavedView: Sendable, Equatable {
    public var name: String
    public var query: String

    public init(name: String, query: String) {
        self.name = name
        self.query = query
    }

    public static let keyPrefix = "view."
    /// The most a user keeps.
    public static let maxViews = 20
    /// The longest name.
    public static let maxName = 32

    public var key: String { Self.keyPrefix + name }
    public var value: JSONValue { .object(["query": .string(query)]) }

    /// Refuses a name that is not 1–32 letters, digits, `-` and `_`, or one of the views' own
    /// names (`unread`, `all`, …), with what to write instead.
    public static func check(name: String) throws(ValidationError) {
        guard !name.isEmpty, name.count <= maxName, name.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" }) else {
            throw ValidationError("a view's name is 1 to \(maxName) letters, digits, - and _ (not \"\(name.prefix(40))\")")
        }
        guard NotificationView(name: name) == nil else {
            throw ValidationError("\(name) is one of the built-in views; give the saved view another name")
        }
    }

    /// The view a preference holds; nil for another key, a removed view or a value that is no view's.
    public init?(key: String, value: JSONValue) {
        guard key.hasPrefix(Self.keyPrefix), case .object(let object) = value, case .string(let query)? = object["query"] else { return nil }
        self.init(name: String(key.dropFirst(Self.keyPrefix.count)), query: query)
    }

    /// The saved views among `preferences`, by name.
    public static func all(in preferences: [PreferenceEntry]) -> [SavedView] {
        preferences.compactMap { SavedView(key: $0.key, value: $0.value) }.sorted { $0.name.localizedStandardCompare($1.name) == .orderedAscending }
    }

    /// Refuses a write of `entries` over `stored` that sets a view badly or would keep more
    /// than ``maxViews``: each `view.` key's name, its value (`null`, or `{"query"}` that
    /// ``SearchQuery`` reads) and the count after it.
    public static func check(_ entries: [PreferenceEntry], over stored: [PreferenceEntry]) throws(ValidationError) {
        var kept = Set(all(in: stored).map(\.name))
        for entry in entries where entry.key.hasPrefix(keyPrefix) {
            let name = String(entry.key.dropFirst(keyPrefix.count))
            try check(name: name)
            if entry.value == .null {
                kept.remove(name)
                continue
            }
            guard let view = SavedView(key: entry.key, value: entry.value) else {
                throw ValidationError("\(entry.key): a saved view's value is {\"query\":\"…\"} or null")
            }
            do {
                _ = try SearchQuery.parse(view.query)
            } catch {
                throw ValidationError("\(entry.key): \(error.message)")
            }
            kept.insert(name)
        }
        guard kept.count <= maxViews else {
            throw ValidationError("a user keeps at most \(maxViews) saved views; remove one first (notty view remove NAME)")
        }
    }
}
