import Foundation
import NottyCore

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
