import Foundation

/// A ``SearchQuery`` as each backend asks it of its `notifications` table and full-text index
/// (PROTOCOL.md §17): the words, phrases and `app:`/`group:`/`team:` keys as one full-text
/// expression (``SearchIndexTerms``: FTS5's on SQLite, a `tsquery` on PostgreSQL), the other
/// fields as conditions on the row's columns with their values bound.
public struct SearchSQL: Sendable {
    public enum Dialect: Sendable {
        case sqlite, postgres
    }

    /// Where a table keeps what the fields ask about that differs between the service's
    /// `notifications` and a device's.
    public struct Columns: Sendable {
        /// The user who changed a row last (an SQL expression, NULL when nobody did).
        public var changedByUser: String
        /// Whether a row has actions (an SQL condition, never NULL).
        public var hasActions: String

        public static let sqlite = Columns(changedByUser: "json_extract(changed_by, '$.user')", hasActions: "(actions IS NOT NULL)")
        public static let postgres = Columns(changedByUser: "(changed_by::jsonb ->> 'user')", hasActions: "(actions IS NOT NULL)")
        /// A device's store: what is rare is in `policies` (JSON).
        public static let device = Columns(
            changedByUser: "(CASE WHEN json_valid(policies) THEN json_extract(policies, '$.changedBy.user') END)",
            hasActions: "(CASE WHEN json_valid(policies) THEN coalesce(json_array_length(policies, '$.actions'), 0) > 0 ELSE 0 END)")
    }

    /// The current time in milliseconds: an SQL expression, or a value to bind where it is asked.
    public enum Now: Sendable {
        case expression(String)
        case value(Int64)
    }

    public enum Value: Sendable, Equatable {
        case text(String)
        case integer(Int64)
    }

    /// What a matching row's index entry must match; nil when the query has no required text.
    public var match: String?
    /// What it must not match when nothing is required (``match`` holds the exclusions
    /// otherwise); nil when nothing is excluded.
    public var exclude: String?
    /// Conditions on the row's columns, all required.
    public var conditions: [String] = []
    /// The conditions' values, bound from `firstPlaceholder` on in this order.
    public var values: [Value] = []

    /// `query` for `dialect` on a table of `columns`; `placeholder` spells a parameter's number
    /// (`?7`, `$7`, or `?` for all when they are bound in the order they appear).
    /// `word`, when given, spells a word's full-text expression on SQLite (by default its
    /// start: `"word"*`).
    public init(
        _ query: SearchQuery, dialect: Dialect, columns: Columns? = nil, now: Now, firstPlaceholder: Int = 1,
        word: ((String) -> String)? = nil, placeholder: (Int) -> String
    ) {
        let columns = columns ?? (dialect == .sqlite ? .sqlite : .postgres)
        var required: [String] = []
        var excluded: [String] = []
        var next = firstPlaceholder
        func bind(_ value: Value) -> String {
            values.append(value)
            defer { next += 1 }
            return placeholder(next)
        }
        for clause in query.clauses {
            let text: String?
            var condition: String?
            switch clause.term {
            case .word(let value): text = dialect == .sqlite ? word?(value) ?? Self.prefix([value], dialect) : Self.prefix([value], dialect)
            case .phrase(let words): text = Self.prefix(words, dialect)
            case .app(let value): text = Self.exact(SearchIndexTerms.key(.app, folded: value), dialect)
            case .group(let value): text = Self.exact(SearchIndexTerms.key(.group, folded: value), dialect)
            case .team(let value): text = Self.exact(SearchIndexTerms.key(.team, folded: value), dialect)
            default:
                text = nil
                condition = Self.condition(clause.term, dialect: dialect, columns: columns, now: now, bind: bind)
            }
            if let text { (clause.negated ? { excluded.append(text) } : { required.append(text) })() }
            if let condition { conditions.append(clause.negated ? "NOT \(condition)" : condition) }
        }
        switch dialect {
        case .sqlite:
            if !required.isEmpty {
                match = required.joined(separator: " AND ")
                if !excluded.isEmpty { match = "(\(match!)) NOT (\(excluded.joined(separator: " OR ")))" }
            } else if !excluded.isEmpty {
                exclude = excluded.joined(separator: " OR ")
            }
        case .postgres:
            if !required.isEmpty {
                match = (required.map { "(\($0))" } + excluded.map { "!(\($0))" }).joined(separator: " & ")
            } else if !excluded.isEmpty {
                exclude = excluded.map { "(\($0))" }.joined(separator: " | ")
            }
        }
    }

    /// Words one after another, the last one's start.
    public static func prefix(_ words: [String], _ dialect: Dialect) -> String {
        switch dialect {
        case .sqlite: return "\"" + words.joined(separator: " ") + "\"*"
        case .postgres: return words.enumerated().map { "'\($1)'" + ($0 == words.count - 1 ? ":*" : "") }.joined(separator: " <-> ")
        }
    }

    /// One whole token (a key).
    public static func exact(_ token: String, _ dialect: Dialect) -> String {
        dialect == .sqlite ? "\"\(token)\"" : "'\(token)'"
    }

    /// A field that is not text, as a condition that is never NULL (so that `NOT` excludes
    /// exactly what it matches).
    static func condition(_ term: SearchQuery.Term, dialect: Dialect, columns: Columns, now: Now, bind: (Value) -> String) -> String {
        switch term {
        case .priority(let priority): return "(priority = '\(priority.rawValue)')"
        case .state(.unread): return "(read_state = '\(ReadState.unread.rawValue)')"
        case .state(.read): return "(read_state = '\(ReadState.read.rawValue)')"
        case .state(.activated): return "(action_state = '\(UserActionState.activated.rawValue)')"
        case .state(.dismissed): return "(action_state = '\(UserActionState.dismissed.rawValue)')"
        case .state(.snoozed):
            let time =
                switch now {
                case .expression(let expression): expression
                case .value(let millis): bind(.integer(millis))
                }
            return "(action_state = '\(UserActionState.snoozed.rawValue)' AND snoozed_until IS NOT NULL AND snoozed_until > \(time))"
        case .by(let user):
            return "(coalesce(lower(\(columns.changedByUser)) = \(bind(.text(user))), \(dialect == .sqlite ? "0" : "false")))"
        case .after(let day): return "(created >= \(bind(.integer(ISOTime.millis(day)))))"
        case .before(let day): return "(created < \(bind(.integer(ISOTime.millis(day)))))"
        case .has(.link): return "(launch_url IS NOT NULL)"
        case .has(.actions): return columns.hasActions
        case .word, .phrase, .app, .group, .team: return "(1 = 1)"  // text: in the index
        }
    }
}
