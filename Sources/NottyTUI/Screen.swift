import Foundation

/// What a cell looks like. Semantic colours: the painter maps them to terminal colours,
/// or ignores them when colour is off (`NO_COLOR`).
public struct CellStyle: Hashable, Sendable {
    public var bold = false
    public var reverse = false
    public var dim = false
    public var underline = false
    public var color: SemanticColor? = nil

    public init(bold: Bool = false, reverse: Bool = false, dim: Bool = false, underline: Bool = false, color: SemanticColor? = nil) {
        self.bold = bold
        self.reverse = reverse
        self.dim = dim
        self.underline = underline
        self.color = color
    }

    public static let plain = CellStyle()
}

/// Colours by meaning, not by terminal number.
public enum SemanticColor: Hashable, Sendable, CaseIterable {
    case accent, high, low, ok, warning, error, muted
}

/// One terminal cell. A wide character (CJK, most emoji) occupies its cell and the next;
/// the next cell is then a `continuation` and is never painted on its own.
public struct Cell: Hashable, Sendable {
    public var character: Character
    public var style: CellStyle
    public var isContinuation: Bool

    public init(_ character: Character = " ", style: CellStyle = .plain, isContinuation: Bool = false) {
        self.character = character
        self.style = style
        self.isContinuation = isContinuation
    }

    public static let blank = Cell()
}

/// A terminal size in cells.
public struct Size: Hashable, Sendable {
    public var columns: Int
    public var rows: Int
    public init(columns: Int, rows: Int) {
        self.columns = columns
        self.rows = rows
    }
}

/// A grid of cells: what `render` produces and a terminal backend paints.
public struct Screen: Hashable, Sendable {
    public let size: Size
    public private(set) var cells: [Cell]
    /// Where the terminal cursor should be left (for prompts), if visible.
    public var cursor: (column: Int, row: Int)? {
        get { cursorColumn.map { ($0, cursorRow) } }
        set { cursorColumn = newValue?.column; cursorRow = newValue?.row ?? 0 }
    }
    private var cursorColumn: Int?
    private var cursorRow = 0

    public init(size: Size) {
        self.size = size
        cells = Array(repeating: .blank, count: max(0, size.columns) * max(0, size.rows))
    }

    public subscript(column: Int, row: Int) -> Cell {
        get { cells[row * size.columns + column] }
        set { cells[row * size.columns + column] = newValue }
    }

    /// Sets the cell at an index of `cells` (row by row).
    mutating func replaceCell(_ index: Int, _ cell: Cell) {
        cells[index] = cell
    }

    /// The cells row by row, borrowed (no copy of a cell: a painter reads every one).
    public func withCells<Result>(_ body: (UnsafeBufferPointer<Cell>) throws -> Result) rethrows -> Result {
        try cells.withUnsafeBufferPointer(body)
    }

    /// Each row as plain text (continuation cells skipped, trailing spaces kept): what golden tests compare.
    public func lines() -> [String] {
        (0..<size.rows).map { row in
            var line = ""
            for column in 0..<size.columns where !self[column, row].isContinuation {
                line.append(self[column, row].character)
            }
            return line
        }
    }
}

/// A key press, decoded by the terminal backend.
public enum Key: Hashable, Sendable {
    case character(Character)
    /// Control plus a letter, e.g. `.control("b")` for Ctrl-b.
    case control(Character)
    case up, down, left, right, home, end, pageUp, pageDown
    case enter, escape, tab, backTab, backspace, delete
}
