import NottyCore

/// A run of text in one style: the unit render draws lines from.
public struct Span: Sendable, Equatable {
    public var text: String
    public var style: CellStyle

    public init(_ text: String, _ style: CellStyle = .plain) {
        self.text = text
        self.style = style
    }
}

extension Array where Element == Span {
    /// The cells the spans take together.
    var width: Int { reduce(0) { $0 + DisplayWidth.width(of: $1.text) } }
}

// MARK: - Writing into a screen

extension Screen {
    /// Writes text from `column` on `row`, never at or past column `limit`. Control characters
    /// become visible placeholders (``TerminalText``), zero-width characters are skipped, and a wide character that would
    /// straddle `limit` becomes a space. Returns the column after the text.
    @discardableResult
    mutating func put(_ text: String, column: Int, row: Int, limit: Int? = nil, style: CellStyle = .plain) -> Int {
        guard (0..<size.rows).contains(row) else { return column }
        let end = min(limit ?? size.columns, size.columns)
        var col = max(0, column)
        if DisplayWidth.printableASCIICount(text) != nil {  // a byte a cell, nothing to replace
            for byte in text.utf8 {
                if col + 1 > end {
                    col = end
                    break
                }
                setCell(column: col, row: row, Cell(Character(Unicode.Scalar(byte)), style: style))
                col += 1
            }
            return col
        }
        for raw in text {
            let character = TerminalText.safe(raw)
            let w = DisplayWidth.width(of: character)
            if w == 0 { continue }
            if col + w > end {
                if col < end { setCell(column: col, row: row, Cell(" ", style: style)) }
                col = end
                break
            }
            setCell(column: col, row: row, Cell(character, style: style))
            if w == 2 { setCell(column: col + 1, row: row, Cell(" ", style: style, isContinuation: true)) }
            col += w
        }
        return col
    }

    /// Writes spans one after the other. Returns the column after them.
    @discardableResult
    mutating func put(_ spans: [Span], column: Int, row: Int, limit: Int? = nil) -> Int {
        var col = column
        for span in spans { col = put(span.text, column: col, row: row, limit: limit, style: span.style) }
        return col
    }

    /// Fills columns `from..<to` of a row with a character (spaces by default).
    mutating func fill(row: Int, from: Int, to: Int, _ character: Character = " ", style: CellStyle = .plain) {
        guard (0..<size.rows).contains(row) else { return }
        for col in max(0, from)..<max(max(0, from), min(to, size.columns)) {
            setCell(column: col, row: row, Cell(character, style: style))
        }
    }

    /// Changes the style of columns `from..<to` of a row, keeping the text.
    mutating func restyle(row: Int, from: Int, to: Int, _ change: (inout CellStyle) -> Void) {
        guard (0..<size.rows).contains(row) else { return }
        for col in max(0, from)..<max(max(0, from), min(to, size.columns)) {
            var cell = self[col, row]
            change(&cell.style)
            self[col, row] = cell
        }
    }

    /// Sets one cell without leaving half of a wide character behind.
    private mutating func setCell(column: Int, row: Int, _ cell: Cell) {
        guard (0..<size.columns).contains(column) else { return }
        let index = row * size.columns + column
        if !cell.isContinuation, column > 0, cells[index].isContinuation {
            replaceCell(index - 1, Cell(" ", style: cells[index - 1].style))
        }
        if column + 1 < size.columns, cells[index + 1].isContinuation {
            replaceCell(index + 1, Cell(" ", style: cells[index + 1].style))
        }
        replaceCell(index, cell)
    }
}
