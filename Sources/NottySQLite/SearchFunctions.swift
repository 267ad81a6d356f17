import Foundation
import GRDB
import NottyCore
import Synchronization

/// The SQL functions both SQLite stores' search indexes are kept and asked with (PROTOCOL.md
/// §17): the folding is Swift's (``SearchIndexTerms``), for every script, so every connection
/// that writes notifications has them (from `prepareDatabase`).
///
/// - `notty_document(title, body, app, group, team)`: what the index holds of a row
///   (``SearchIndexTerms/document(title:body:app:group:team:)``).
/// - `notty_text_matches(query, title, body, app, group, team)`: whether a row's text holds the
///   query's words, phrases and keys, for rows an index does not hold yet.
public enum SearchFunctions {
    public static func install(_ db: Database) {
        db.add(
            function: DatabaseFunction("notty_document", argumentCount: 5, pure: true) { values in
                SearchIndexTerms.document(
                    title: String.fromDatabaseValue(values[0]), body: String.fromDatabaseValue(values[1]),
                    app: String.fromDatabaseValue(values[2]) ?? "", group: String.fromDatabaseValue(values[3]),
                    team: String.fromDatabaseValue(values[4]))
            })
        db.add(
            function: DatabaseFunction("notty_text_matches", argumentCount: 6, pure: true) { values in
                guard let text = String.fromDatabaseValue(values[0]), let query = parsed.cached(text) else { return false }
                return query.matchesText(
                    title: String.fromDatabaseValue(values[1]), body: String.fromDatabaseValue(values[2]),
                    app: String.fromDatabaseValue(values[3]) ?? "", group: String.fromDatabaseValue(values[4]),
                    team: String.fromDatabaseValue(values[5]))
            })
    }

    /// The last query `notty_text_matches` parsed (it is asked once a row).
    private static let parsed = ParsedQuery()
}

/// One parsed query, kept while the same text is asked again.
private final class ParsedQuery: Sendable {
    private let last = Mutex<(String, SearchQuery)?>(nil)

    func cached(_ text: String) -> SearchQuery? {
        if let (known, query) = last.withLock({ $0 }), known == text { return query }
        guard let query = try? SearchQuery.parse(text) else { return nil }
        last.withLock { $0 = (text, query) }
        return query
    }
}

extension SearchSQL {
    /// The fields' values as GRDB binds them, in order (both SQLite stores).
    public var arguments: StatementArguments {
        StatementArguments(
            values.map { value -> any DatabaseValueConvertible in
                switch value {
                case .text(let text): text
                case .integer(let number): number
                }
            })
    }
}
