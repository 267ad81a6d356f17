import Testing

@testable import NottyTUI

@Suite("Display width, independent of the locale")
struct DisplayWidthTests {
    // A table with aligned comments: swift-format leaves it as is.
    // swift-format-ignore
    static let widths: [(String, Int)] = [
        ("hello", 5),
        ("", 0),
        ("日本語", 6),                 // CJK ideographs
        ("デプロイ完了", 12),           // katakana
        ("한국어", 6),                 // Hangul syllables
        ("ＡＢＣ", 6),                 // fullwidth Latin
        ("ｶﾀｶﾅ", 4),                  // halfwidth katakana stays narrow
        ("🔥", 2),                    // emoji presentation
        ("✅", 2),
        ("🎉 Release 2.0", 14),
        ("❤", 1),                     // text presentation by default
        ("❤️", 2),                    // … made emoji by VS16
        ("👨‍👩‍👧", 2),                   // ZWJ family: one glyph
        ("🇯🇵", 2),                    // flag: two regional indicators
        ("👍🏽", 2),                    // skin tone modifier
        ("1️⃣", 2),                    // keycap
        ("e\u{301}", 1),              // combining acute accent
        ("é", 1),
        ("a\u{200B}b", 2),            // zero-width space
        ("●!↓…│", 5),                 // the UI's own marks are one cell
        ("服务器告警 🔥", 13),
    ]

    @Test("width of", arguments: widths)
    func width(_ text: String, _ expected: Int) {
        #expect(DisplayWidth.width(of: text) == expected)
    }

    @Test func truncation() {
        #expect(DisplayWidth.truncate("hello", to: 5) == "hello")
        #expect(DisplayWidth.truncate("hello!", to: 5) == "hell…")
        #expect(DisplayWidth.truncate("hello", to: 1) == "…")
        #expect(DisplayWidth.truncate("hello", to: 0) == "")
        #expect(DisplayWidth.truncate("日本語テキスト", to: 5) == "日本…")
        #expect(DisplayWidth.truncate("日本語テキスト", to: 6) == "日本…", "never half a wide character")
        #expect(DisplayWidth.truncate("👨‍👩‍👧 family", to: 4) == "👨‍👩‍👧 …")
        #expect(DisplayWidth.truncate("🇯🇵🇯🇵", to: 3) == "🇯🇵…")
        #expect(DisplayWidth.truncate("abc", to: 2, ellipsis: false) == "ab")
    }

    @Test("truncation never exceeds the width", arguments: 0...12)
    func truncationFits(_ width: Int) {
        for text in ["服务器告警 🔥 CPU 使用率 97%", "デプロイ完了 ✅", "e\u{301}e\u{301}e\u{301}e\u{301}e\u{301}", "plain ascii text"] {
            let cut = DisplayWidth.truncate(text, to: width)
            #expect(DisplayWidth.width(of: cut) <= width)
            #expect(DisplayWidth.width(of: cut) >= width - 1 || cut == text)
        }
    }

    @Test func padding() {
        #expect(DisplayWidth.pad("5m", to: 3, alignRight: true) == " 5m")
        #expect(DisplayWidth.pad("日本", to: 5) == "日本 ")
        #expect(DisplayWidth.pad("日本語", to: 5) == "日本…")
        #expect(DisplayWidth.pad("日本語", to: 4) == "日… ", "a wide character that does not fit leaves a space")
    }

    @Test func wrapping() {
        #expect(DisplayWidth.wrap("hello world foo", to: 11) == ["hello world", "foo"])
        #expect(DisplayWidth.wrap("a\n\nb", to: 5) == ["a", "", "b"])
        #expect(DisplayWidth.wrap("abcdefghij", to: 4) == ["abcd", "efgh", "ij"])
        #expect(DisplayWidth.wrap("主机 web-07 的 CPU 使用率在过去 5 分钟内持续高于", to: 10) == ["主机", "web-07 的", "CPU 使用率", "在过去 5", "分钟内持续", "高于"])
        #expect(DisplayWidth.wrap("日本語", to: 5) == ["日本", "語"], "a line is never one cell over")
    }

    @Test("wrapped lines fit", arguments: [3, 7, 10, 23])
    func wrappedLinesFit(_ width: Int) {
        let text = "api v2.14.0 を本番環境にデプロイしました。所要時間 3分12秒。🎉🎉 done"
        for line in DisplayWidth.wrap(text, to: width) {
            #expect(DisplayWidth.width(of: line) <= width, "\(line)")
        }
    }

    // MARK: - The printable ASCII fast path

    /// Width the slow way, one character at a time.
    static func widthByCharacter(_ text: String) -> Int { text.reduce(0) { $0 + DisplayWidth.width(of: $1) } }

    @Test func asciiFastPathAgreesWithTheCharacterPath() {
        var texts = (0..<128).map { String(UnicodeScalar(UInt8($0))) }
        texts += ["plain ascii text", "tab\there", "line\nbreak", "bell\u{7}", "del\u{7F}", "crlf\r\nend", "é ascii", ""]
        for text in texts {
            #expect(DisplayWidth.width(of: text) == Self.widthByCharacter(text), "\(text.debugDescription)")
            #expect(DisplayWidth.width(of: text[...]) == Self.widthByCharacter(text), "a substring of \(text.debugDescription)")
        }
        for width in 0...20 {
            let text = "deploy api v2.14.0"
            let expected = width == 0 ? "" : text.count <= width ? text : String(text.prefix(width - 1)) + "…"
            #expect(DisplayWidth.truncate(text, to: width) == expected, "width \(width)")
            #expect(DisplayWidth.truncate(text, to: width, ellipsis: false) == String(text.prefix(width)))
        }
    }

    @Test func singleLineTurnsEveryLineBreakAndTabIntoASpace() {
        #expect("a\nb\tc\r\nd\u{0B}e\u{0C}f\u{85}g\u{2028}h\u{2029}i".singleLine == "a b c d e f g h i")
        #expect("plain ascii".singleLine == "plain ascii")
        #expect("°C ±5 “quoted” — 日本".singleLine == "°C ±5 “quoted” — 日本", "0xC2 and 0xE2 lead bytes that are not line breaks stay")
    }

    @Test func asciiTextStopsAtTheLimitAndNeverLeavesHalfAWideCharacter() {
        var screen = Screen(size: Size(columns: 10, rows: 2))
        #expect(screen.put("hello", column: 3, row: 0, limit: 6) == 6)
        #expect(screen.lines()[0] == "   hel    ")
        #expect(screen.put("ab", column: 8, row: 0) == 10)
        #expect(screen.put("abc", column: 9, row: 0) == 10, "cut at the screen's edge")
        #expect(screen.put("a\u{7}b", column: 0, row: 1) == 3, "a control character takes the slow path")
        #expect(screen.lines()[1].hasPrefix("a\u{2407}b"))
        screen.put("日本", column: 4, row: 1)
        screen.put("x", column: 5, row: 1)  // the second half of 日
        #expect(screen[4, 1].character == " " && !screen[4, 1].isContinuation)
        #expect(screen[5, 1].character == "x")
        #expect(screen[6, 1].character == "本" && screen[7, 1].isContinuation)
        screen.put("y", column: 6, row: 1)  // the first half of 本
        #expect(screen[7, 1].character == " " && !screen[7, 1].isContinuation)
        #expect(screen.put("bold", column: 0, row: 0, style: CellStyle(bold: true)) == 4)
        #expect(screen[3, 0].style.bold && !screen[4, 0].style.bold)
    }

    // MARK: - Wide characters in cells

    @Test func wideCharacterTakesTwoCells() {
        var screen = Screen(size: Size(columns: 6, rows: 1))
        let end = screen.put("a日b", column: 0, row: 0)
        #expect(end == 4)
        #expect(screen[1, 0].character == "日")
        #expect(screen[2, 0].isContinuation)
        #expect(screen[3, 0].character == "b")
        #expect(screen.lines() == ["a日b  "])
    }

    @Test func wideCharacterAtTheEdgeBecomesASpace() {
        var screen = Screen(size: Size(columns: 4, rows: 1))
        screen.put("abc日", column: 0, row: 0)
        #expect(screen.lines() == ["abc "])
        #expect(!screen[3, 0].isContinuation)
        var limited = Screen(size: Size(columns: 6, rows: 1))
        limited.put("ab日x", column: 1, row: 0, limit: 4)
        #expect(limited.lines() == [" ab   "])
    }

    @Test func overwritingHalfAWideCharacterClearsTheOtherHalf() {
        var screen = Screen(size: Size(columns: 4, rows: 1))
        screen.put("日本", column: 0, row: 0)
        screen.put("x", column: 1, row: 0)
        #expect(screen.lines() == [" x本"])
        screen.put("y", column: 2, row: 0)
        #expect(screen.lines() == [" xy "])
        #expect(screen.cells.allSatisfy { !$0.isContinuation })
    }

    @Test func controlCharactersAreDrawnAsPlaceholders() {
        var screen = Screen(size: Size(columns: 7, rows: 1))
        screen.put("a\tb\u{1B}c\u{9B}\n", column: 0, row: 0)
        #expect(screen.lines() == ["a b␛c�␤"])
    }
}
