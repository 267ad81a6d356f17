import Foundation
import NottyCore
import Testing

@Suite("TerminalText: control characters become visible placeholders")
struct TerminalTextTests {
    @Test("every C0, DEL and C1 character is replaced; nothing else changes", arguments: Array(0..<0x100) + [0x2028, 0x1F600, 0x3042])
    func everyScalar(_ value: Int) {
        let scalar = Unicode.Scalar(UInt32(value))!
        let text = "a\(Character(scalar))b"
        let safe = TerminalText.safe(text)
        let isControl = value < 0x20 || (0x7F..<0xA0).contains(value)
        #expect(
            safe.unicodeScalars.allSatisfy { $0.value >= 0x20 && !(0x7F..<0xA0).contains($0.value) },
            "\(value) left a control: \(safe.debugDescription)")
        #expect((safe == text) == !isControl, "\(value)")
        #expect(TerminalText.isSafe(text) == !isControl)
        #expect(safe.hasPrefix("a") && safe.hasSuffix("b"))
    }

    @Test("escape sequences are shown, not obeyed")
    func sequences() {
        #expect(TerminalText.safe("\u{1B}]0;title\u{07}") == "␛]0;title␇")
        #expect(TerminalText.safe("\u{1B}[2J\u{1B}[31mred") == "␛[2J␛[31mred")
        #expect(TerminalText.safe("\u{1B}]8;;https://x\u{1B}\\link") == "␛]8;;https://x␛\\link")
        #expect(TerminalText.safe("\u{9B}31m \u{9D}0;t\u{9C} \u{90}q") == "�31m �0;t� �q")
        #expect(TerminalText.safe("lone\u{1B}") == "lone␛")
        #expect(TerminalText.safe("nul\u{0}del\u{7F}") == "nul␀del␡")
    }

    @Test("line breaks: kept in a body (CR LF as LF), shown on one line; tabs are spaces; CR is shown")
    func lines() {
        #expect(TerminalText.safe("a\nb\tc") == "a␤b c")
        #expect(TerminalText.safe("a\nb", keepingLineBreaks: true) == "a\nb")
        #expect(TerminalText.safe("a\r\nb", keepingLineBreaks: true) == "a\nb")
        #expect(TerminalText.safe("over\rwrite", keepingLineBreaks: true) == "over␍write")
        #expect(TerminalText.safe("ESC then mark \u{1B}\u{301}") == "ESC then mark ␛\u{301}")
    }

    @Test("one character for cell-by-cell drawing, graphemes with a control scalar included")
    func character() {
        #expect(TerminalText.safe(Character("\u{1B}")) == "␛")
        #expect(TerminalText.safe(Character("\r\n")) == "␤")  // Swift reads CR LF as one character, LF
        #expect(TerminalText.safe(Character("é")) == "é")
        #expect(TerminalText.safe(Character("\u{9B}")) == "�")
    }

    @Test("JSON output escapes DEL and C1 too, and still parses to the same text")
    func json() throws {
        let text = "a\u{1B}]0;x\u{07}\u{7F}\u{9B}31m\u{80}\u{9F}é"
        let written = JSONValue.string(text).jsonText
        #expect(written == #""a\u001b]0;x\u0007\u007f\u009b31m\u0080\u009fé""#)
        #expect(JSONValue(jsonText: written) == .string(text))
    }
}
