import Foundation

/// The query language of PROTOCOL.md §17, one parser for the service's `search=`, `notty list
/// --search`, the center's `/` and the web inbox's search box.
///
/// Terms, all required: words (each matches the start of a word of the title, body, app or
/// group, with case and accents folded in every script: `überlast` finds "ÜBERLAST", `koln`
/// finds "Köln"), `"quoted phrases"` (their words one after another, the last one's start),
/// `-term` to exclude any term, and fields: `app:HOST`, `group:NAME`, `team:NAME` (each the
/// whole value, case folded; quoted when it has spaces: `group:"night builds"`),
/// `priority:high|normal|low`, `is:unread|read` (read state), `is:activated|dismissed` (action
/// state), `is:snoozed` (snoozed now), `by:USER` (who changed it last), `after:YYYY-MM-DD` and
/// `before:YYYY-MM-DD` (created on or after that day's start, before it; UTC), `has:link|actions`.
/// An unknown field is an error with words; a word with a colon that is no field is searched
/// for when quoted.
public struct SearchQuery: Sendable, Equatable {
    public enum Term: Sendable, Equatable {
        /// A folded word: the start of a word.
        case word(String)
        /// Folded words one after another (the last one's start).
        case phrase([String])
        case app(String)
        case group(String)
        case team(String)
        case priority(Priority)
        case state(State)
        case by(String)
        case after(Date)
        case before(Date)
        case has(Has)
    }

    public enum State: String, Sendable, CaseIterable {
        case unread, read, activated, dismissed, snoozed
    }

    public enum Has: String, Sendable, CaseIterable {
        case link, actions
    }

    public struct Clause: Sendable, Equatable {
        public var term: Term
        public var negated: Bool

        public init(_ term: Term, negated: Bool = false) {
            self.term = term
            self.negated = negated
        }
    }

    public var clauses: [Clause]
    /// The text it was read from (two queries are equal when their clauses are).
    public var text: String = ""

    /// The longest query taken, and the most terms in one.
    public static let maxLength = 200
    public static let maxTerms = 20
    /// The fields, as a query names them.
    public static let fields = ["app", "group", "team", "priority", "is", "by", "after", "before", "has"]

    public init(clauses: [Clause] = []) { self.clauses = clauses }

    public static func == (a: SearchQuery, b: SearchQuery) -> Bool { a.clauses == b.clauses }

    /// Whether the query has no terms (it matches everything).
    public var isEmpty: Bool { clauses.isEmpty }

    // MARK: - Parsing

    /// Reads `text`; a refusal says what to write instead.
    public static func parse(_ text: String) throws(ValidationError) -> SearchQuery {
        guard text.count <= maxLength else { throw ValidationError("the search is longer than \(maxLength) characters") }
        guard !text.containsNUL else { throw ValidationError("the search contains the character U+0000 (NUL)") }
        var clauses: [Clause] = []
        var rest = Substring(text)
        while true {
            rest = rest.drop { $0.isWhitespace }
            guard !rest.isEmpty else { break }
            var negated = false
            if rest.first == "-", rest.count > 1, !rest.dropFirst().first!.isWhitespace {
                negated = true
                rest = rest.dropFirst()
            }
            let term: Term?
            if rest.first == "\"" {
                let (quoted, after) = Self.quoted(rest)
                rest = after
                let words = words(quoted)
                term = words.isEmpty ? nil : (words.count == 1 ? .word(words[0]) : .phrase(words))
            } else {
                let token = rest.prefix { !$0.isWhitespace && $0 != "\"" }
                rest = rest.dropFirst(token.count)
                if let colon = token.firstIndex(of: ":"), colon > token.startIndex, token[..<colon].allSatisfy(\.isLetter) {
                    let name = token[..<colon].lowercased()
                    var value = String(token[token.index(after: colon)...])
                    if value.isEmpty, rest.first == "\"" {
                        let (quoted, after) = Self.quoted(rest)
                        rest = after
                        value = quoted
                    }
                    term = try field(name, value)
                } else {
                    let words = words(String(token))
                    term = words.isEmpty ? nil : (words.count == 1 ? .word(words[0]) : .phrase(words))
                }
            }
            if let term { clauses.append(Clause(term, negated: negated)) }
            guard clauses.count <= maxTerms else { throw ValidationError("the search has more than \(maxTerms) terms") }
        }
        var query = SearchQuery(clauses: clauses)
        query.text = text
        return query
    }

    /// The text between `"` and the next `"` (or the end), and what follows it.
    private static func quoted(_ text: Substring) -> (String, Substring) {
        let inside = text.dropFirst()
        guard let end = inside.firstIndex(of: "\"") else { return (String(inside), inside[inside.endIndex...]) }
        return (String(inside[..<end]), inside[inside.index(after: end)...])
    }

    private static func field(_ name: String, _ value: String) throws(ValidationError) -> Term {
        let known = fields.map { $0 + ":" }.joined(separator: " ")
        guard !value.isEmpty || !fields.contains(name) else { throw ValidationError("\(name): needs a value, as \(name):VALUE") }
        switch name {
        case "app": return .app(fold(value))
        case "group": return .group(fold(value))
        case "team": return .team(fold(value))
        case "by": return .by(fold(value))
        case "priority":
            switch value.lowercased() {
            case "high": return .priority(.high)
            case "normal", "none": return .priority(.none)
            case "low": return .priority(.low)
            default: throw ValidationError("priority: is high, normal or low, not \(value.prefix(32))")
            }
        case "is":
            guard let state = State(rawValue: value.lowercased()) else {
                throw ValidationError("is: is \(State.allCases.map(\.rawValue).joined(separator: ", ")), not \(value.prefix(32))")
            }
            return .state(state)
        case "has":
            guard let has = Has(rawValue: value.lowercased()) else { throw ValidationError("has: is link or actions, not \(value.prefix(32))") }
            return .has(has)
        case "after", "before":
            guard let day = day(value) else { throw ValidationError("\(name): takes a day, YYYY-MM-DD, not \(value.prefix(32))") }
            return name == "after" ? .after(day) : .before(day)
        default:
            throw ValidationError(
                "no field \(name.prefix(32)): a search's fields are \(known); to search for the word with its colon, quote it: \"\(name.prefix(32)):…\""
            )
        }
    }

    /// The start (UTC) of the day `YYYY-MM-DD`.
    static func day(_ text: String) -> Date? {
        let parts = text.split(separator: "-")
        guard parts.count == 3, parts[0].count == 4, parts[1].count == 2, parts[2].count == 2,
            let year = Int(parts[0]), let month = Int(parts[1]), let day = Int(parts[2])
        else { return nil }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let components = DateComponents(year: year, month: month, day: day)
        guard components.isValidDate(in: calendar), let date = calendar.date(from: components) else { return nil }
        return date
    }

    // MARK: - Folding

    /// `text` with case and accents folded (`Köln` → `koln`, `ÜBERLAST` → `uberlast`).
    public static func fold(_ text: String) -> String {
        if text.utf8.allSatisfy({ $0 < 0x80 }) { return text.lowercased() }
        return text.folding(options: [.caseInsensitive, .diacriticInsensitive, .widthInsensitive], locale: nil).lowercased()
    }

    /// The folded words of `text`: its runs of letters and digits, each cut to
    /// ``SearchIndexTerms/longestWord`` characters as an index holds it.
    public static func words(_ text: String) -> [String] {
        if let ascii = asciiWords(text) { return ascii }
        return fold(text).split { !($0.isLetter || $0.isNumber) }.map { SearchIndexTerms.cut(String($0)) }
    }

    /// ``words(_:)`` of text that is all ASCII, in one pass over its bytes (what folding gives
    /// there: letters lowercased); nil for any other text.
    static func asciiWords(_ text: String) -> [String]? {
        var text = text
        return text.withUTF8 { bytes -> [String]? in
            var words: [String] = []
            var word: [UInt8] = []
            word.reserveCapacity(32)
            for byte in bytes {
                guard byte < 0x80 else { return nil }
                switch byte {
                case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"): word.append(byte)
                case UInt8(ascii: "A")...UInt8(ascii: "Z"): word.append(byte | 0x20)
                default:
                    if !word.isEmpty {
                        words.append(String(decoding: word.prefix(SearchIndexTerms.longestWord), as: UTF8.self))
                        word.removeAll(keepingCapacity: true)
                    }
                }
            }
            if !word.isEmpty { words.append(String(decoding: word.prefix(SearchIndexTerms.longestWord), as: UTF8.self)) }
            return words
        }
    }

    // MARK: - Matching

    /// Whether `n` has every term (and none of the excluded) at `now`.
    public func matches(_ n: UserNotification, now: Date) -> Bool {
        guard !clauses.isEmpty else { return true }
        var text = TextFields(
            title: n.payload.visualContent?.title, body: n.payload.visualContent?.body ?? n.payload.rawContent, app: n.targetHostName,
            group: n.groupName, team: n.team)
        return clauses.allSatisfy { clause in
            let found: Bool
            switch clause.term {
            case .priority(let priority): found = n.priority == priority
            case .state(let state):
                switch state {
                case .unread: found = n.readState == .unread
                case .read: found = n.readState == .read
                case .activated: found = n.userActionState == .activated
                case .dismissed: found = n.userActionState == .dismissed
                case .snoozed: found = NotificationView.current(of: n, now: now) == .snoozed
                }
            case .by(let user): found = n.changedBy.map { Self.fold($0.user) } == user
            case .after(let day): found = n.createdDateTime >= day
            case .before(let day): found = n.createdDateTime < day
            case .has(.link): found = n.launchUrl != nil
            case .has(.actions): found = !(n.actions ?? []).isEmpty
            case .word, .phrase, .app, .group, .team: found = text.has(clause.term)
            }
            return found != clause.negated
        }
    }

    /// Whether the words, phrases and `app:`, `group:` and `team:` terms hold of these fields
    /// (the other terms are not asked): what a full-text index answers of a row it does not
    /// hold yet. `body` is the raw content when there is no body.
    public func matchesText(title: String?, body: String?, app: String, group: String?, team: String?) -> Bool {
        var text = TextFields(title: title, body: body, app: app, group: group, team: team)
        return clauses.allSatisfy { clause in
            switch clause.term {
            case .word, .phrase, .app, .group, .team: return text.has(clause.term) != clause.negated
            default: return true
            }
        }
    }

    /// A notification's searched fields, each one's words made once when first asked (a
    /// phrase does not run from one field into the next).
    private struct TextFields {
        let title: String?, body: String?, app: String, group: String?, team: String?
        private var made: [[String]]?

        init(title: String?, body: String?, app: String, group: String?, team: String?) {
            (self.title, self.body, self.app, self.group, self.team) = (title, body, app, group, team)
        }

        mutating func words() -> [[String]] {
            if let made { return made }
            let words = [title, body, app, group].compactMap { $0 }.map { SearchQuery.words($0) }
            made = words
            return words
        }

        mutating func has(_ term: Term) -> Bool {
            switch term {
            case .word(let word):
                // ASCII text and word: the text's bytes, without making its words.
                if made == nil, let found = Self.asciiHas(word, in: [title, body, app, group]) { return found }
                return words().contains { $0.contains { $0.hasPrefix(word) } }
            case .phrase(let phrase): return words().contains { SearchQuery.contains($0, phrase) }
            case .app(let host): return SearchQuery.fold(app) == host
            case .group(let name): return group.map(SearchQuery.fold) == name
            case .team(let name): return team.map(SearchQuery.fold) == name
            default: return false
            }
        }

        /// Whether a word of `fields` starts with `word`, read from their bytes when `word` and
        /// every field are ASCII (what folding gives there: letters lowercased, words the runs
        /// of letters and digits); nil otherwise.
        static func asciiHas(_ word: String, in fields: [String?]) -> Bool? {
            var word = word
            return word.withUTF8 { wanted -> Bool? in
                guard !wanted.isEmpty, wanted.allSatisfy({ $0 < 0x80 }) else { return nil }
                var ascii = true
                for field in fields {
                    guard var field else { continue }
                    switch field.withUTF8({ asciiHas(wanted, in: $0) }) {
                    case true?: return true
                    case false?: continue
                    case nil: ascii = false
                    }
                }
                return ascii ? false : nil
            }
        }

        /// ``asciiHas(_:in:)`` over one field's bytes; nil when they are not all ASCII.
        static func asciiHas(_ wanted: UnsafeBufferPointer<UInt8>, in text: UnsafeBufferPointer<UInt8>) -> Bool? {
            func folded(_ byte: UInt8) -> UInt8? {
                switch byte {
                case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"): byte
                case UInt8(ascii: "A")...UInt8(ascii: "Z"): byte | 0x20
                default: nil
                }
            }
            var index = 0
            while index < text.count {
                let byte = text[index]
                guard byte < 0x80 else { return nil }
                guard folded(byte) != nil else {
                    index += 1
                    continue
                }
                // A word starts here (after ASCII that is not a letter or digit): does it start
                // with `wanted`? (Text after it, ASCII or not, changes nothing of this word's start.)
                var matched = 0
                while matched < wanted.count, index + matched < text.count, folded(text[index + matched]) == wanted[matched] { matched += 1 }
                if matched == wanted.count { return true }
                while index < text.count, text[index] < 0x80, folded(text[index]) != nil { index += 1 }
            }
            return false
        }
    }

    /// Whether `words` has `phrase`'s words one after another (the last one's start).
    static func contains(_ words: [String], _ phrase: [String]) -> Bool {
        guard !phrase.isEmpty, words.count >= phrase.count else { return false }
        for start in 0...(words.count - phrase.count) {
            var all = true
            for (offset, word) in phrase.enumerated() {
                let candidate = words[start + offset]
                if offset == phrase.count - 1 ? !candidate.hasPrefix(word) : candidate != word {
                    all = false
                    break
                }
            }
            if all { return true }
        }
        return false
    }
}
