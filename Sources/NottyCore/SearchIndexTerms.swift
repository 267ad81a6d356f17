import Foundation

/// What a full-text index holds of a notification so that it answers ``SearchQuery``'s words,
/// phrases and `app:`, `group:` and `team:` exactly as ``SearchQuery/matches(_:now:)`` does:
/// every field's folded words (``SearchQuery/words(_:)``), and one key a field value.
///
/// Folding happens here, in Swift, for every script, and the index only splits on spaces, so
/// that SQLite's FTS5 and PostgreSQL's `tsvector` agree with the matcher. A key is a token no
/// word can be: it starts with U+E000 (a private-use character, which ``SearchQuery/words(_:)``
/// never keeps), then the field's letter and the folded value in hex (or, for a value longer
/// than ``longestKeyValue`` bytes, a 64-bit hash of it).
public enum SearchIndexTerms {
    /// The version of the folding; an index made with another is rebuilt.
    public static let foldingVersion = 1
    /// The longest indexed word, in characters: longer words are cut, in the index and in a
    /// query alike (a word matches the start of a word, so the cut changes nothing shorter).
    public static let longestWord = 64
    /// Values up to this many bytes are keyed whole.
    public static let longestKeyValue = 100

    public enum Field: String, Sendable {
        case app = "a"
        case group = "g"
        case team = "t"
    }

    /// The folded words of `text`, cut to ``longestWord``, one space between each.
    public static func words(_ text: String?) -> String {
        guard let text, !text.isEmpty else { return "" }
        return SearchQuery.words(text).joined(separator: " ")
    }

    /// `word` as the index holds it.
    public static func cut(_ word: String) -> String {
        word.count > longestWord ? String(word.prefix(longestWord)) : word
    }

    /// The key of a folded value of `field`.
    public static func key(_ field: Field, folded value: String) -> String {
        let bytes = Array(value.utf8)
        guard bytes.count <= longestKeyValue else { return "\u{E000}\(field.rawValue)h" + Hex.string(fnv1a(bytes)) }
        return "\u{E000}\(field.rawValue)" + Hex.string(bytes)
    }

    /// What an index holds of a notification, as one text: each field's folded words (title,
    /// body, app, group), a separator token between fields (U+E001: a phrase never runs from
    /// one field into the next, and no query word is it), then the keys. One pass over ASCII
    /// text; other text goes through ``SearchQuery/words(_:)``.
    public static func document(title: String?, body: String?, app: String, group: String?, team: String?) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(64 + (title?.utf8.count ?? 0) + (body?.utf8.count ?? 0) + 3 * app.utf8.count)
        for (index, field) in [title, body, app, group].enumerated() {
            if index > 0 { out.append(contentsOf: fieldSeparator) }
            guard let field else { continue }
            if !appendASCIIWords(field, to: &out) {
                for (n, word) in SearchQuery.words(field).enumerated() {
                    if n > 0 { out.append(0x20) }
                    out.append(contentsOf: word.utf8)
                }
            }
        }
        out.append(0x20)
        out.append(contentsOf: keys(app: app, group: group, team: team).utf8)
        return String(decoding: out, as: UTF8.self)
    }

    /// " U+E001 " in UTF-8.
    static let fieldSeparator: [UInt8] = [0x20, 0xEE, 0x80, 0x81, 0x20]

    /// Appends `text`'s folded words (one space between each) when it is all ASCII; false,
    /// with nothing appended, otherwise.
    static func appendASCIIWords(_ text: String, to out: inout [UInt8]) -> Bool {
        var text = text
        return text.withUTF8 { bytes -> Bool in
            guard bytes.allSatisfy({ $0 < 0x80 }) else { return false }
            var length = 0
            var first = true
            for byte in bytes {
                let folded: UInt8
                switch byte {
                case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"): folded = byte
                case UInt8(ascii: "A")...UInt8(ascii: "Z"): folded = byte | 0x20
                default:
                    length = 0
                    continue
                }
                if length == 0 {
                    if !first { out.append(0x20) }
                    first = false
                }
                if length < longestWord { out.append(folded) }
                length += 1
            }
            return true
        }
    }

    /// The keys of a notification's app, group and team, one space between each.
    public static func keys(app: String, group: String?, team: String?) -> String {
        var keys = [key(.app, folded: SearchQuery.fold(app))]
        if let group { keys.append(key(.group, folded: SearchQuery.fold(group))) }
        if let team { keys.append(key(.team, folded: SearchQuery.fold(team))) }
        return keys.joined(separator: " ")
    }

    /// FNV-1a, 64 bits, as 8 bytes.
    static func fnv1a(_ bytes: [UInt8]) -> [UInt8] {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        return (0..<8).map { UInt8(truncatingIfNeeded: hash >> (56 - 8 * $0)) }
    }
}
