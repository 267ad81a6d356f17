/// Text that came from the network (or from the store, which holds what came from it) made
/// safe to write to a terminal: every control character becomes a visible placeholder, so no
/// escape sequence in a title or body can move the cursor, clear the screen, retitle the
/// window, write the clipboard (`OSC 52`) or hide a link (`OSC 8`).
///
/// The one rule every terminal path uses (`notty list`, `show`, `status`, `devices`, error
/// lines, `publish`, the center and its prompts). `--json` output does not need it: JSON
/// escapes every control character itself.
///
/// - C0 (`U+0000`–`U+001F`) becomes its Control Picture (`␛` for `ESC`, `␇` for `BEL`, …), so
///   `ESC ] 0 ; title BEL` prints as `␛]0;title␇`: the whole sequence is visible and inert,
///   since a sequence needs its introducer.
/// - `DEL` becomes `␡`; C1 (`U+0080`–`U+009F`: 8-bit `CSI` `0x9B`, `OSC` `0x9D`, `DCS` `0x90`,
///   `ST` `0x9C`, …) becomes `�`.
/// - A line feed is kept only where the caller allows line breaks (a body); else `␤`. A tab
///   becomes a space. A carriage return becomes `␍` (it could overwrite what was printed).
public enum TerminalText {
    /// `text` with every control character replaced by a visible placeholder.
    public static func safe(_ text: String, keepingLineBreaks: Bool = false) -> String {
        if isSafe(text, keepingLineBreaks: keepingLineBreaks) { return text }
        var scalars = String.UnicodeScalarView()
        scalars.reserveCapacity(text.unicodeScalars.count)
        var previous: Unicode.Scalar?
        for scalar in text.unicodeScalars {
            // CR LF is a line break written the Windows way: keep the LF alone.
            if keepingLineBreaks, scalar == "\n", previous == "\r" { scalars.removeLast() }
            previous = scalar
            if let placeholder = placeholder(for: scalar, keepingLineBreaks: keepingLineBreaks) {
                scalars.append(placeholder)
            } else {
                scalars.append(scalar)
            }
        }
        return String(scalars)
    }

    /// The character a terminal shows instead of `character`: itself when it holds no control
    /// scalar, else its first control scalar's placeholder (for cell-by-cell drawing).
    public static func safe(_ character: Character) -> Character {
        if let ascii = character.asciiValue {
            if ascii >= 0x20 && ascii != 0x7F { return character }
            return Character(placeholder(for: Unicode.Scalar(ascii), keepingLineBreaks: false) ?? " ")
        }
        for scalar in character.unicodeScalars {
            if let placeholder = placeholder(for: scalar, keepingLineBreaks: false) { return Character(placeholder) }
        }
        return character
    }

    /// True when `text` holds nothing to replace (checked over UTF-8 bytes: C0 and DEL are
    /// single bytes, C1 is `0xC2 0x80…0x9F`).
    public static func isSafe(_ text: String, keepingLineBreaks: Bool = false) -> Bool {
        var afterC2 = false
        for byte in text.utf8 {
            if byte < 0x20 {
                if !(keepingLineBreaks && byte == 0x0A) { return false }
            } else if byte == 0x7F {
                return false
            } else if afterC2 && byte < 0xA0 && byte >= 0x80 {
                return false
            }
            afterC2 = byte == 0xC2
        }
        return true
    }

    private static func placeholder(for scalar: Unicode.Scalar, keepingLineBreaks: Bool) -> Unicode.Scalar? {
        switch scalar.value {
        case 0x0A: return keepingLineBreaks ? nil : "\u{2424}"  // ␤
        case 0x09: return " "
        case 0x00..<0x20: return Unicode.Scalar(0x2400 + scalar.value)  // ␀ … ␟ (␛ for ESC)
        case 0x7F: return "\u{2421}"  // ␡
        case 0x80..<0xA0: return "\u{FFFD}"  // �
        default: return nil
        }
    }
}
