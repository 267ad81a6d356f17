import NottyTUI
import Testing

@testable import NottyTerminal

/// ncurses key codes as curses.h defines them (octal), so the table below also checks the shim.
private enum Code {
    static let down: Int32 = 0o402, up: Int32 = 0o403, left: Int32 = 0o404, right: Int32 = 0o405
    static let home: Int32 = 0o406, backspace: Int32 = 0o407, delete: Int32 = 0o512
    static let pageDown: Int32 = 0o522, pageUp: Int32 = 0o523, enter: Int32 = 0o527
    static let backTab: Int32 = 0o541, end: Int32 = 0o550, resize: Int32 = 0o632, f1: Int32 = 0o411
}

@Suite("Key decoding")
struct KeyDecodingTests {
    static let table: [(RawKey, Key?)] = [
        (.keyCode(Code.up), .up), (.keyCode(Code.down), .down),
        (.keyCode(Code.left), .left), (.keyCode(Code.right), .right),
        (.keyCode(Code.home), .home), (.keyCode(Code.end), .end),
        (.keyCode(Code.pageUp), .pageUp), (.keyCode(Code.pageDown), .pageDown),
        (.keyCode(Code.enter), .enter), (.character(13), .enter), (.character(10), .enter),
        (.character(27), .escape),
        (.character(9), .tab), (.keyCode(Code.backTab), .backTab),
        (.keyCode(Code.backspace), .backspace), (.character(127), .backspace), (.character(8), .backspace),
        (.keyCode(Code.delete), .delete),
        (.character(1), .control("a")), (.character(2), .control("b")), (.character(3), .control("c")),
        (.character(7), .control("g")), (.character(11), .control("k")), (.character(12), .control("l")),
        (.character(14), .control("n")), (.character(21), .control("u")), (.character(26), .control("z")),
        (.character(0x61), .character("a")), (.character(0x20), .character(" ")),
        (.character(0x7E), .character("~")), (.character(0xE9), .character("é")),
        (.character(0x4E16), .character("世")), (.character(0x1F389), .character("🎉")),
        (.character(0x301), .character("\u{301}")),
        // Not keys notty uses: resize is reported by readKey itself; F1; stray controls.
        (.keyCode(Code.resize), nil), (.keyCode(Code.f1), nil),
        (.character(0), nil), (.character(28), nil), (.character(31), nil), (.character(0x85), nil),
        (.character(0xD800), nil), (.character(0xFFFF), nil),
    ]

    @Test("each raw key decodes as the user pressed it", arguments: table.indices)
    func decodes(_ index: Int) {
        let (raw, expected) = Self.table[index]
        #expect(decodeKey(raw) == expected, "\(raw)")
    }

    @Test("every Ctrl-letter except Ctrl-H, Tab, Ctrl-J and Ctrl-M is .control(letter)")
    func controlLetters() {
        let special: [UInt32: Key] = [8: .backspace, 9: .tab, 10: .enter, 13: .enter]
        for code in UInt32(1)...26 {
            let letter = Character(Unicode.Scalar(0x60 + code)!)
            #expect(decodeKey(.character(code)) == (special[code] ?? .control(letter)), "code \(code)")
        }
    }
}

@Suite("NO_COLOR")
struct NoColorTests {
    @Test func colourWhenUnset() {
        #expect(Terminal.colorAllowed(environment: [:]))
        #expect(Terminal.colorAllowed(environment: ["TERM": "xterm-256color"]))
    }

    @Test func colourWhenSetButEmpty() {
        #expect(Terminal.colorAllowed(environment: ["NO_COLOR": ""]))
    }

    @Test("no colour when set to anything non-empty, even 0 or false", arguments: ["1", "0", "false", "yes", " "])
    func noColourWhenSet(_ value: String) {
        #expect(!Terminal.colorAllowed(environment: ["NO_COLOR": value]))
    }
}
