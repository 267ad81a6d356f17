import Glibc
import NottyTUI

/// What has to be painted to turn the last painted screen into a new one.
public enum ScreenChanges: Hashable, Sendable {
    /// Clear and paint every cell: first frame, or the size changed.
    case full
    /// Paint only these runs of cells; empty when nothing changed.
    case runs([CellRun])
}

/// Consecutive cells of one row, `columns.lowerBound ..< columns.upperBound`.
public struct CellRun: Hashable, Sendable, CustomStringConvertible {
    public var row: Int
    public var columns: Range<Int>

    public init(row: Int, columns: Range<Int>) {
        self.row = row
        self.columns = columns
    }

    public var description: String { "row \(row) columns \(columns.lowerBound)..<\(columns.upperBound)" }
}

/// Which cells differ between the last painted screen and the new one (pure; the cursor is
/// not a cell and is always placed by the painter).
///
/// A run never starts on a continuation cell and never ends between a wide character and its
/// continuation: a changed half pulls in the whole wide character, so painting a run always
/// writes whole characters.
public func screenChanges(from old: Screen?, to new: Screen) -> ScreenChanges {
    guard let old, old.size == new.size else { return .full }
    let columns = new.size.columns
    var runs: [CellRun] = []
    old.withCells { old in
        new.withCells { new in
            for row in 0..<new.count / max(1, columns) {
                let first = row * columns
                var column = 0
                while column < columns {
                    guard old[first + column] != new[first + column] else {
                        column += 1
                        continue
                    }
                    var start = column
                    var end = column + 1
                    while end < columns, old[first + end] != new[first + end] { end += 1 }
                    // Widen to whole wide characters in the new screen.
                    while start > 0, new[first + start].isContinuation { start -= 1 }
                    while end < columns, new[first + end].isContinuation { end += 1 }
                    if let last = runs.last, last.row == row, last.columns.upperBound >= start {
                        runs[runs.count - 1].columns = last.columns.lowerBound..<max(end, last.columns.upperBound)
                    } else {
                        runs.append(CellRun(row: row, columns: start..<end))
                    }
                    column = end
                }
            }
        }
    }
    return .runs(runs)
}

/// The wide characters that make up one cell in a `cchar_t`: the first scalar (a control code
/// becomes U+FFFD, so nothing can reach the terminal as a command) followed by the rest, at
/// most `limit` in all. ncurses keeps only the zero-width followers (combining marks,
/// variation selectors, ZWJ); for a multi-emoji sequence the first emoji is shown.
func cellScalars(_ character: Character, limit: Int = 5) -> [UInt32] {
    withCellScalars(character, limit: limit) { text in
        (0..<limit).prefix { text[$0] != 0 }.map { UInt32(bitPattern: text[$0]) }
    }
}

/// ``cellScalars(_:limit:)`` written, zero-terminated, into a temporary buffer for `body`
/// (no allocation: the painter calls this for every cell it writes).
func withCellScalars<Result>(_ character: Character, limit: Int = 5, _ body: (UnsafePointer<wchar_t>) -> Result) -> Result {
    withUnsafeTemporaryAllocation(of: wchar_t.self, capacity: limit + 1) { buffer in
        if let ascii = character.asciiValue, ascii >= 0x20, ascii != 0x7F {  // most cells
            buffer[0] = wchar_t(ascii)
            buffer[1] = 0
            return body(UnsafePointer(buffer.baseAddress!))
        }
        var count = 0
        for scalar in character.unicodeScalars {
            if count == 0 {
                guard isPrintable(scalar) else { buffer[0] = 0xFFFD; count = 1; break }
            } else if count == limit {
                break
            } else if !isPrintable(scalar) {
                continue
            }
            buffer[count] = wchar_t(bitPattern: scalar.value)
            count += 1
        }
        buffer[count] = 0
        return body(UnsafePointer(buffer.baseAddress!))
    }
}
