import Foundation
import NottyTestSupport
import Testing

@testable import NottyCore

@Suite("The search query language (PROTOCOL.md §17)")
struct SearchQueryTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)  // 2027-01-15T08:00:00Z

    static func query(_ text: String) throws -> SearchQuery { try SearchQuery.parse(text) }

    static func notification(
        title: String, body: String? = nil, app: String = "ci.example.com", group: String? = nil, priority: Priority = .none
    ) -> UserNotification {
        UserNotification.fixture(id: "1", app: app, group: group, priority: priority, title: title, body: body, created: now)
    }

    @Test("words are each required and match the start of a word of the title, body, app or group; -word excludes")
    func words() throws {
        let disk = Self.notification(title: "Disk 91% full on db-primary", body: "/var has 9 GB left", group: "storage")
        let replica = Self.notification(title: "Disk full on db-replica")
        #expect(try Self.query("disk").matches(disk, now: Self.now) && Self.query("dis").matches(disk, now: Self.now))
        #expect(try !Self.query("isk").matches(disk, now: Self.now), "the start of a word, not its middle")
        #expect(try Self.query("disk prim").matches(disk, now: Self.now) && !Self.query("disk prim").matches(replica, now: Self.now))
        #expect(try Self.query("disk -replica").matches(disk, now: Self.now) && !Self.query("disk -replica").matches(replica, now: Self.now))
        #expect(try Self.query("var gb").matches(disk, now: Self.now), "the body's words")
        #expect(try Self.query("example").matches(disk, now: Self.now) && Self.query("stor").matches(disk, now: Self.now), "app and group")
        #expect(try Self.query("").isEmpty && Self.query("   ").matches(disk, now: Self.now))
    }

    @Test("case and accents fold in every script: überlast finds ÜBERLAST, koln finds Köln, ΣΥΝΑΓΕΡΜΟΣ finds συναγερμός")
    func folding() throws {
        #expect(try Self.query("überlast").matches(Self.notification(title: "ÜBERLAST im Rechenzentrum"), now: Self.now))
        #expect(try Self.query("uberlast").matches(Self.notification(title: "Überlast"), now: Self.now))
        #expect(try Self.query("koln").matches(Self.notification(title: "Backup in Köln fertig"), now: Self.now))
        #expect(try Self.query("ΣΥΝΑΓΕΡΜΟΣ").matches(Self.notification(title: "συναγερμός: δίσκος"), now: Self.now))
        #expect(try Self.query("ошибка").matches(Self.notification(title: "ОШИБКА сборки"), now: Self.now))
        #expect(SearchQuery.fold("Ｃｉ") == "ci", "full-width letters too")
    }

    @Test("a quoted phrase is its words one after another; a field's value may be quoted")
    func phrases() throws {
        let failed = Self.notification(title: "Build failed on main", body: "log: https://ci.example.com/runs/7", group: "night builds")
        #expect(try Self.query(#""failed on main""#).matches(failed, now: Self.now))
        #expect(try Self.query(#""failed on ma""#).matches(failed, now: Self.now), "the last word's start")
        #expect(try !Self.query(#""main on failed""#).matches(failed, now: Self.now))
        #expect(try !Self.query(#"-"failed on main""#).matches(failed, now: Self.now))
        #expect(try Self.query(#"group:"night builds""#).matches(failed, now: Self.now))
        #expect(try !Self.query("group:night").matches(failed, now: Self.now), "a field is the whole value")
        #expect(try Self.query(#""unclosed phrase"#).clauses == [SearchQuery.Clause(.phrase(["unclosed", "phrase"]))])
        #expect(try Self.query(#""https://ci.example.com""#).matches(failed, now: Self.now), "a colon searched for when quoted")
        #expect(try !Self.query(#""main log""#).matches(failed, now: Self.now), "a phrase stays within one field (the title's end, the body's start)")
    }

    @Test("fields: app, group, team, priority, is, by, after, before, has, each negatable")
    func fields() throws {
        var n = Self.notification(title: "Deploy", app: "CD.example.com", group: "Deploys", priority: .high)
        n.team = "ops"
        n.readState = .read
        n.launchUrl = "https://cd.example.com/runs/7"
        n.changedBy = ChangedBy(user: "Alice", device: "laptop", at: Self.now)
        let yes = [
            "app:cd.example.com", "group:deploys", "team:OPS", "priority:high", "is:read", "by:alice", "after:2027-01-15", "before:2027-01-16",
            "has:link", "-has:actions", "-is:unread", "-priority:low", "deploy app:cd.example.com is:read",
        ]
        for text in yes { #expect(try Self.query(text).matches(n, now: Self.now), "\(text)") }
        let no = [
            "app:ci.example.com", "team:web", "priority:normal", "is:unread", "is:dismissed", "is:snoozed", "by:bob", "after:2027-01-16",
            "before:2027-01-15", "has:actions", "-team:ops",
        ]
        for text in no { #expect(try !Self.query(text).matches(n, now: Self.now), "\(text)") }
        n.userActionState = .snoozed
        n.snoozedUntil = Self.now + 60
        #expect(try Self.query("is:snoozed").matches(n, now: Self.now) && !Self.query("is:snoozed").matches(n, now: Self.now + 60))
    }

    @Test("an unknown field or a bad value is refused with words that say what to write")
    func refusals() {
        func message(_ text: String) -> String? {
            do {
                _ = try SearchQuery.parse(text)
                return nil
            } catch {
                return error.message
            }
        }
        #expect(message("owner:bob")?.contains("no field owner: a search's fields are app: group: team:") == true, "\(message("owner:bob") ?? "")")
        #expect(message("https://ci.example.com")?.contains(#"quote it: "https:…""#) == true)
        #expect(message("priority:urgent") == "priority: is high, normal or low, not urgent")
        #expect(message("is:open")?.hasPrefix("is: is unread, read, activated, dismissed, snoozed") == true)
        #expect(message("after:yesterday") == "after: takes a day, YYYY-MM-DD, not yesterday")
        #expect(message("before:2027-02-30")?.hasPrefix("before: takes a day") == true)
        #expect(message("app:") == "app: needs a value, as app:VALUE")
        #expect(message(String(repeating: "a", count: 201))?.contains("longer than 200") == true)
        #expect(message((0..<21).map { "w\($0)" }.joined(separator: " "))?.contains("more than 20 terms") == true)
        #expect(message("12:30 -") == nil, "not a field: digits before the colon; a lone - is nothing")
    }

    @Test("ASCII text's words in one pass are the words Foundation's folding gives, every ASCII character and word length")
    func asciiWords() {
        let all = String(decoding: (0..<128).map { UInt8($0) }, as: UTF8.self)
        var random = SeededRandom(seed: 17)
        var samples = [all, "", "   ", "Disk-FULL on db_3 (90%)", "x" + String(repeating: "Y", count: 80) + " z", "a\u{7f}b\tc"]
        for _ in 0..<500 {
            samples.append(
                String(decoding: (0..<Int.random(in: 0..<40, using: &random)).map { _ in UInt8.random(in: 0..<128, using: &random) }, as: UTF8.self))
        }
        for text in samples {
            let slow = SearchQuery.fold(text).split { !($0.isLetter || $0.isNumber) }.map { SearchIndexTerms.cut(String($0)) }
            #expect(SearchQuery.asciiWords(text) == slow, "\(Array(text.utf8))")
            #expect(
                SearchQuery.fold(text)
                    == text.folding(options: [.caseInsensitive, .diacriticInsensitive, .widthInsensitive], locale: nil).lowercased())
        }
        #expect(SearchQuery.asciiWords("Köln") == nil, "not ASCII: the whole folding")
    }

    @Test("a word read from ASCII text's bytes matches exactly where the text's folded words do, and text that is not ASCII is folded")
    func asciiMatching() throws {
        var random = SeededRandom(seed: 29)
        let letters = Array("abAB01 -._é".utf8)
        func text(_ length: Int) -> String {
            String(decoding: (0..<length).map { _ in letters[Int.random(in: 0..<(letters.count - 2), using: &random)] }, as: UTF8.self)
        }
        for round in 0..<3000 {
            var (title, body) = (text(Int.random(in: 0..<12, using: &random)), text(Int.random(in: 0..<12, using: &random)))
            if round % 10 == 0 { title += "Éa" }  // not ASCII: the folded words decide
            let word = SearchQuery.fold(String(text(Int.random(in: 1..<4, using: &random)).filter { $0.isLetter || $0.isNumber }))
            guard !word.isEmpty else { continue }
            let expected = [title, body, "app.example.com"].contains { SearchQuery.words($0).contains { $0.hasPrefix(word) } }
            #expect(
                try SearchQuery.parse(word).matchesText(title: title, body: body, app: "app.example.com", group: nil, team: nil) == expected,
                "\(word) in \(title) | \(body)")
        }
    }

    @Test("index terms: a key is no word, whole values keyed in hex, long ones hashed; the same folding as the matcher")
    func indexTerms() {
        #expect(SearchIndexTerms.words("ÜBERLAST in Köln, 90%") == "uberlast in koln 90")
        #expect(SearchIndexTerms.key(.group, folded: "ci") == "\u{E000}g6369")
        let long = String(repeating: "g", count: 101)
        #expect(
            SearchIndexTerms.key(.app, folded: long).count == 3 + 16
                && SearchIndexTerms.key(.app, folded: long + "h") != SearchIndexTerms.key(.app, folded: long))
        #expect(SearchIndexTerms.keys(app: "CI.example", group: "Night Builds", team: nil).split(separator: " ").count == 2)
        #expect(SearchQuery.words(String(repeating: "a", count: 100)) == [String(repeating: "a", count: SearchIndexTerms.longestWord)])
        let document = SearchIndexTerms.document(title: "Disk FULL", body: "on DB-1", app: "CI.example", group: nil, team: nil)
        #expect(document.hasPrefix("disk full \u{E001} on db 1 \u{E001} ci example \u{E001}  \u{E000}a"), "\(document)")
        let folded = SearchIndexTerms.document(title: "ÜBERLAST", body: nil, app: "köln.example", group: "Nacht", team: "ops")
        #expect(folded.hasPrefix("uberlast \u{E001}  \u{E001} koln example \u{E001} nacht "), "\(folded)")
        #expect(folded.split(separator: " ").filter { $0.hasPrefix("\u{E000}") }.count == 3)
    }
}
