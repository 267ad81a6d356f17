/// How many terminal cells text takes, decided from Unicode properties alone (never the locale),
/// so that render and its golden tests agree on every machine.
///
/// - 0: combining marks, format characters (zero-width joiner and space), variation selectors,
///   Hangul medial vowels and final consonants.
/// - 2: East Asian Wide and Fullwidth characters (CJK ideographs, kana, Hangul, fullwidth forms),
///   emoji with emoji presentation, and any character of several scalars joined by a
///   zero-width joiner or made emoji by VS16 (family emoji, `❤️`, keycaps), and flags.
/// - 1: everything else.
public enum DisplayWidth {
    // MARK: - Width

    /// Cells one character takes (0, 1 or 2).
    public static func width(of character: Character) -> Int {
        if let ascii = character.asciiValue {  // the common case, without walking scalars
            return ascii < 0x20 || ascii == 0x7F ? 0 : 1
        }
        let scalars = character.unicodeScalars
        guard let first = scalars.first else { return 0 }
        if scalars.count > 1 {
            if scalars.contains(where: { $0.value == 0xFE0F || $0.value == 0x200D }) { return 2 }
            if scalars.contains(where: { $0.value == 0xFE0E }) { return min(1, width(of: first)) }
        }
        // The first scalar decides; the others (combining marks, modifiers) take no cell.
        return width(of: first)
    }

    /// Cells a string takes.
    public static func width(of text: some StringProtocol) -> Int {
        if let count = printableASCIICount(text) { return count }
        var total = 0
        for character in text { total += width(of: character) }
        return total
    }

    /// The length of text made only of printable ASCII (one cell a byte), nil for any other
    /// text: the fast path of measuring, since most notification text is ASCII.
    static func printableASCIICount(_ text: some StringProtocol) -> Int? {
        var count = 0
        for byte in text.utf8 {
            guard byte >= 0x20, byte < 0x7F else { return nil }
            count += 1
        }
        return count
    }

    /// Cells one scalar takes on its own.
    public static func width(of scalar: Unicode.Scalar) -> Int {
        let value = scalar.value
        if value < 0x20 || (0x7F..<0xA0).contains(value) { return 0 }
        if value < 0x300 { return 1 }
        switch scalar.properties.generalCategory {
        case .nonspacingMark, .enclosingMark, .format: return 0
        default: break
        }
        if (0x1160...0x11FF).contains(value) || (0xD7B0...0xD7FF).contains(value) { return 0 }
        if scalar.properties.isEmojiPresentation { return 2 }
        if isRegionalIndicator(scalar) { return 2 }
        return wideRanges.contains(where: { $0.contains(value) }) ? 2 : 1
    }

    // A table with aligned comments: swift-format leaves it as is.
    // swift-format-ignore
    /// East Asian Wide and Fullwidth blocks (Unicode 15, the ones text actually uses).
    private static let wideRanges: [ClosedRange<UInt32>] = [
        0x1100...0x115F,   // Hangul Jamo initial consonants
        0x2E80...0x303E,   // CJK radicals, Kangxi, ideographic description, CJK symbols and punctuation
        0x3041...0x33FF,   // Hiragana, Katakana, Bopomofo, Hangul compatibility Jamo, Kanbun, CJK strokes, enclosed CJK
        0x3400...0x4DBF,   // CJK extension A
        0x4E00...0x9FFF,   // CJK unified ideographs
        0xA000...0xA4CF,   // Yi
        0xA960...0xA97F,   // Hangul Jamo extended A
        0xAC00...0xD7A3,   // Hangul syllables
        0xF900...0xFAFF,   // CJK compatibility ideographs
        0xFE10...0xFE19,   // vertical forms
        0xFE30...0xFE6F,   // CJK compatibility forms, small form variants
        0xFF00...0xFF60,   // fullwidth forms
        0xFFE0...0xFFE6,   // fullwidth signs
        0x16FE0...0x16FE4, // ideographic symbols
        0x17000...0x18CFF, // Tangut
        0x1AFF0...0x1B16F, // Kana supplement and extensions
        0x1F200...0x1F2FF, // enclosed ideographic supplement
        0x20000...0x2FFFD, // CJK extensions B–F
        0x30000...0x3FFFD, // CJK extensions G–H
    ]

    private static func isRegionalIndicator(_ scalar: Unicode.Scalar) -> Bool {
        (0x1F1E6...0x1F1FF).contains(scalar.value)
    }

    // MARK: - Fitting text into cells

    /// `text` cut to at most `width` cells, ending in `…` when something was cut.
    /// A wide character is never split: the result may then be one cell narrower than `width`.
    public static func truncate(_ text: String, to width: Int, ellipsis: Bool = true) -> String {
        guard width > 0 else { return "" }
        let measured = printableASCIICount(text)
        if (measured ?? self.width(of: text)) <= width { return text }
        let room = ellipsis ? width - 1 : width
        if measured != nil {  // a byte a cell
            let cut = String(decoding: text.utf8.prefix(room), as: UTF8.self)
            return ellipsis ? cut + "…" : cut
        }
        var result = ""
        var used = 0
        for character in text {
            let w = self.width(of: character)
            if used + w > room { break }
            result.append(character)
            used += w
        }
        return ellipsis ? result + "…" : result
    }

    /// `text` padded with spaces to exactly `width` cells (truncated with `…` when longer).
    public static func pad(_ text: String, to width: Int, alignRight: Bool = false) -> String {
        let cut = truncate(text, to: width)
        let fill = String(repeating: " ", count: max(0, width - self.width(of: cut)))
        return alignRight ? fill + cut : cut + fill
    }

    /// `text` broken into lines of at most `width` cells: at spaces where possible, inside a
    /// word (between characters, never inside one) when a word is wider than a line.
    /// Line breaks in `text` are kept; an empty paragraph gives an empty line.
    public static func wrap(_ text: String, to width: Int) -> [String] {
        guard width > 0 else { return [] }
        var lines: [String] = []
        for paragraph in text.split(separator: "\n", omittingEmptySubsequences: false) {
            lines.append(contentsOf: wrapParagraph(String(paragraph), to: width))
        }
        return lines
    }

    private static func wrapParagraph(_ paragraph: String, to width: Int) -> [String] {
        var lines: [String] = []
        var line = ""
        var lineWidth = 0
        for word in paragraph.split(separator: " ", omittingEmptySubsequences: true) {
            let wordWidth = self.width(of: word)
            let gap = line.isEmpty ? 0 : 1
            if lineWidth + gap + wordWidth <= width {
                if gap == 1 { line.append(" ") }
                line += word
                lineWidth += gap + wordWidth
                continue
            }
            if !line.isEmpty, wordWidth <= width {
                lines.append(line)
                line = String(word)
                lineWidth = wordWidth
                continue
            }
            // The word does not fit on any line: break it between characters.
            if !line.isEmpty {
                line.append(" ")
                lineWidth += 1
            }
            for character in word {
                let w = self.width(of: character)
                if lineWidth + w > width, !line.isEmpty {
                    lines.append(line.trimmingTrailingSpaces())
                    line = ""
                    lineWidth = 0
                }
                line.append(character)
                lineWidth += w
            }
        }
        lines.append(line)
        return lines
    }
}

extension String {
    /// The string without trailing spaces.
    func trimmingTrailingSpaces() -> String {
        var copy = self
        while copy.last == " " { copy.removeLast() }
        return copy
    }
}
