import Foundation
import NottyCore

/// A ``SearchQuery`` as each backend asks it of its `notifications` table and full-text index
/// (PROTOCOL.md §17): the words, phrases and `app:`/`group:`/`team:` keys as one full-text
/// expression (``SearchIndexTerms``: FTS5's on SQLite, a `tsquery` on PostgreSQL), the other
/// fields as conditions on the row's columns with their values bound.
package struct SearchSQL: Sendable {
    package enum Dialect: Sendable {
        case sqlite, postgres
    }

    package enum Value: Sendable, Equatable {
        case text(String)
        case integer(Int64)
    }

    /// What a matching row's index entry must match; nil when the query has no required text.
    package var match: String?
    /// What it must not match when nothing is required (``match`` holds the exclusions
    /// otherwise); nil when nothing is excluded.
    package var exclude: String?
    /// Conditions on the row's columns, all required.
    package var conditions: [String] = []
    /// The conditions' values, bound from `firstPlaceholder` on in this order.
    package var values: [Value] = []

    /// `query` for `dialect`; `now` is the SQL expression of the current time in milliseconds,
    /// `placeholder` spells a parameter's number (`?7`, `$7`).
    package init(_ query: SearchQuery, dialect: Dialect, now: String, firstPlaceholder: Int, placeholder: (Int) -> String) {
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
            case .word(let word): text = Self.prefix([word], dialect)
            case .phrase(let words): text = Self.prefix(words, dialect)
            case .app(let value): text = Self.exact(SearchIndexTerms.key(.app, folded: value), dialect)
            case .group(let value): text = Self.exact(SearchIndexTerms.key(.group, folded: value), dialect)
            case .team(let value): text = Self.exact(SearchIndexTerms.key(.team, folded: value), dialect)
            default:
                text = nil
                condition = Self.condition(clause.term, dialect: dialect, now: now, bind: bind)
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
    static func prefix(_ words: [String], _ dialect: Dialect) -> String {
        switch dialect {
        case .sqlite: return "\"" + words.joined(separator: " ") + "\"*"
        case .postgres: return words.enumerated().map { "'\($1)'" + ($0 == words.count - 1 ? ":*" : "") }.joined(separator: " <-> ")
        }
    }

    /// One whole token (a key).
    static func exact(_ token: String, _ dialect: Dialect) -> String {
        dialect == .sqlite ? "\"\(token)\"" : "'\(token)'"
    }

    /// A field that is not text, as a condition that is never NULL (so that `NOT` excludes
    /// exactly what it matches).
    static func condition(_ term: SearchQuery.Term, dialect: Dialect, now: String, bind: (Value) -> String) -> String {
        switch term {
        case .priority(let priority): return "(priority = '\(priority.rawValue)')"
        case .state(.unread): return "(read_state = '\(ReadState.unread.rawValue)')"
        case .state(.read): return "(read_state = '\(ReadState.read.rawValue)')"
        case .state(.activated): return "(action_state = '\(UserActionState.activated.rawValue)')"
        case .state(.dismissed): return "(action_state = '\(UserActionState.dismissed.rawValue)')"
        case .state(.snoozed):
            return "(action_state = '\(UserActionState.snoozed.rawValue)' AND snoozed_until IS NOT NULL AND snoozed_until > \(now))"
        case .by(let user):
            let who = dialect == .sqlite ? "json_extract(changed_by, '$.user')" : "(changed_by::jsonb ->> 'user')"
            return "(changed_by IS NOT NULL AND coalesce(lower(\(who)) = \(bind(.text(user))), \(dialect == .sqlite ? "0" : "false")))"
        case .after(let day): return "(created >= \(bind(.integer(ISOTime.millis(day)))))"
        case .before(let day): return "(created < \(bind(.integer(ISOTime.millis(day)))))"
        case .has(.link): return "(launch_url IS NOT NULL)"
        case .has(.actions): return "(actions IS NOT NULL)"
        case .word, .phrase, .app, .group, .team: return "(1 = 1)"  // text: in the index
        }
    }
}

/// A row's `words` on PostgreSQL: a `tsvector` in its text form, each field's folded words at
/// their positions (a gap between fields, so that a phrase does not run from one into the
/// next) and the keys without positions (``SearchIndexTerms``).
package enum SearchVector {
    package static func text(_ row: NotificationColumns) -> String {
        var positions: [String: [Int]] = [:]
        var order: [String] = []
        var position = 0
        for field in [row.title, row.body ?? row.rawContent, row.hostName, row.groupName] {
            guard let field else { continue }
            for word in SearchQuery.words(field) {
                position += 1
                if positions[word] == nil { order.append(word) }
                // PostgreSQL keeps positions up to 16383 (and at most 256 a lexeme).
                if position <= 16_383, positions[word, default: []].count < 256 { positions[word, default: []].append(position) }
            }
            position += 1
        }
        var text = ""
        for word in order {
            text += "'\(word)'"
            if let at = positions[word], !at.isEmpty { text += ":" + at.map(String.init).joined(separator: ",") }
            text += " "
        }
        for key in SearchIndexTerms.keys(app: row.hostName, group: row.groupName, team: row.team).split(separator: " ") {
            text += "'\(key)' "
        }
        return text
    }
}
