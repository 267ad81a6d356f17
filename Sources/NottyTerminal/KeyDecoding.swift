import CNcursesw
import NottyTUI

/// What `Terminal.readKey` reports: a key press, or that the terminal changed size.
public enum KeyInput: Hashable, Sendable {
    case key(Key)
    /// The terminal was resized; the new size. Repaint at this size.
    case resize(Size)
    /// The terminal hung up (its tty closed): quit.
    case closed
}

/// One raw result of `wget_wch`: a KEY_* code (`KEY_CODE_YES`) or a character (`OK`).
public enum RawKey: Hashable, Sendable {
    /// An ncurses key code such as `KEY_UP` (0o403).
    case keyCode(Int32)
    /// A character code point as read (`wint_t`), including control codes.
    case character(UInt32)
}

// MARK: - Decoding (pure, testable without a terminal)

/// Turns a raw `wget_wch` result into a `Key`, or nil for keys notty does not use
/// (function keys, stray control codes, `KEY_RESIZE` — which `readKey` handles itself).
///
/// - Enter: `\r` (13, what `nonl` delivers), `\n` (10) and `KEY_ENTER`.
/// - Backspace: `KEY_BACKSPACE`, DEL (127) and Ctrl-H (8).
/// - Control letters 1…26 other than Ctrl-H, Tab (9), `\n` and `\r` become `.control(letter)`.
public func decodeKey(_ raw: RawKey) -> Key? {
    switch raw {
    case .keyCode(let code):
        return decodeKeyCode(code)
    case .character(let value):
        return decodeCharacter(value)
    }
}

private func decodeKeyCode(_ code: Int32) -> Key? {
    switch code {
    case notty_key_up(): return .up
    case notty_key_down(): return .down
    case notty_key_left(): return .left
    case notty_key_right(): return .right
    case notty_key_home(): return .home
    case notty_key_end(): return .end
    case notty_key_ppage(): return .pageUp
    case notty_key_npage(): return .pageDown
    case notty_key_enter(): return .enter
    case notty_key_backspace(): return .backspace
    case notty_key_dc(): return .delete
    case notty_key_btab(): return .backTab
    default: return nil
    }
}

private func decodeCharacter(_ value: UInt32) -> Key? {
    switch value {
    case 8, 127: return .backspace
    case 9: return .tab
    case 10, 13: return .enter
    case 27: return .escape
    case 1...26:
        return .control(Character(Unicode.Scalar(UInt8(ascii: "a") + UInt8(value) - 1)))
    default:
        guard let scalar = Unicode.Scalar(value), isPrintable(scalar) else { return nil }
        return .character(Character(scalar))
    }
}

/// Anything but control codes (C0, DEL, C1), unassigned surrogates and non-characters.
func isPrintable(_ scalar: Unicode.Scalar) -> Bool {
    switch scalar.properties.generalCategory {
    case .control, .surrogate: return false
    default: return !scalar.properties.isNoncharacterCodePoint
    }
}
