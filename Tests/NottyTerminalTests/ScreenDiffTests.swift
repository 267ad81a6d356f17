import NottyTUI
import Testing

@testable import NottyTerminal

/// Writes `text` from (column, row); the characters in `wide` take two cells.
func write(
    _ text: String, at column: Int, row: Int, on screen: inout Screen,
    style: CellStyle = .plain, wide: Set<Character> = ["世", "界", "🎉", "日", "本"]
) {
    var column = column
    for character in text {
        screen[column, row] = Cell(character, style: style)
        if wide.contains(character) {
            screen[column + 1, row] = Cell(" ", style: style, isContinuation: true)
            column += 2
        } else {
            column += 1
        }
    }
}

@Suite("Which cells changed")
struct ScreenDiffTests {
    let size = Size(columns: 20, rows: 4)

    func base() -> Screen {
        var screen = Screen(size: size)
        write("inbox 3", at: 0, row: 0, on: &screen, style: CellStyle(bold: true))
        write("世界 ok", at: 2, row: 1, on: &screen)
        write("🎉 done", at: 0, row: 3, on: &screen)
        return screen
    }

    @Test func firstFrameIsFull() {
        #expect(screenChanges(from: nil, to: base()) == .full)
    }

    @Test func sameScreenChangesNothing() {
        #expect(screenChanges(from: base(), to: base()) == .runs([]))
    }

    @Test func oneChangedCellIsOneRun() {
        var new = base()
        new[6, 0] = Cell("4", style: CellStyle(bold: true))
        #expect(screenChanges(from: base(), to: new) == .runs([CellRun(row: 0, columns: 6..<7)]))
    }

    @Test func styleOnlyChangeIsARun() {
        var new = base()
        new[0, 0] = Cell("i", style: CellStyle(reverse: true))
        #expect(screenChanges(from: base(), to: new) == .runs([CellRun(row: 0, columns: 0..<1)]))
    }

    @Test func changedWideCharacterIsItsTwoCells() {
        var new = base()
        write("日", at: 4, row: 1, on: &new)  // 界 → 日; the continuation cell is unchanged
        #expect(screenChanges(from: base(), to: new) == .runs([CellRun(row: 1, columns: 4..<6)]))
    }

    @Test func changedContinuationPullsInItsLeadingCell() {
        var new = base()
        new[3, 1] = Cell(" ", style: CellStyle(underline: true), isContinuation: true)
        #expect(screenChanges(from: base(), to: new) == .runs([CellRun(row: 1, columns: 2..<4)]))
    }

    @Test func narrowReplacingWideCoversBothCells() {
        var new = base()
        write("ab", at: 0, row: 3, on: &new)  // 🎉 → "ab"
        #expect(screenChanges(from: base(), to: new) == .runs([CellRun(row: 3, columns: 0..<2)]))
    }

    @Test func separateChangesAreSeparateRunsAdjacentOnesMerge() {
        var new = base()
        new[0, 2] = Cell("x")
        new[1, 2] = Cell("y")
        new[10, 2] = Cell("z")
        new[19, 3] = Cell("!")
        #expect(
            screenChanges(from: base(), to: new)
                == .runs([
                    CellRun(row: 2, columns: 0..<2),
                    CellRun(row: 2, columns: 10..<11),
                    CellRun(row: 3, columns: 19..<20),
                ]))
    }

    @Test func cursorMoveChangesNoCells() {
        var new = base()
        new.cursor = (column: 3, row: 2)
        #expect(screenChanges(from: base(), to: new) == .runs([]))
    }

    @Test(
        "a size change repaints everything",
        arguments: [
            Size(columns: 21, rows: 4), Size(columns: 20, rows: 5), Size(columns: 10, rows: 2),
        ])
    func sizeChangeIsFull(_ newSize: Size) {
        #expect(screenChanges(from: base(), to: Screen(size: newSize)) == .full)
    }
}

@Suite("Cell text handed to ncurses")
struct CellScalarsTests {
    @Test func plainAndWide() {
        #expect(cellScalars("a") == [0x61])
        #expect(cellScalars("世") == [0x4E16])
    }

    @Test func combiningMarksStayWithTheirBase() {
        #expect(cellScalars("e\u{301}") == [0x65, 0x301])
        #expect(cellScalars("👍🏽") == [0x1F44D, 0x1F3FD])
        #expect(cellScalars("❤️") == [0x2764, 0xFE0F])
    }

    @Test func atMostFiveScalars() {
        let family: Character = "👨‍👩‍👧‍👦"  // 7 scalars
        #expect(cellScalars(family) == [0x1F468, 0x200D, 0x1F469, 0x200D, 0x1F467])
    }

    @Test func controlCodesNeverReachTheTerminal() {
        #expect(cellScalars("\u{1B}") == [0xFFFD])
        #expect(cellScalars("\r\n") == [0xFFFD])
        #expect(cellScalars("\u{7}") == [0xFFFD])
        #expect(cellScalars("\u{7F}") == [0xFFFD])
        #expect(cellScalars("\u{85}") == [0xFFFD])
    }

    @Test func everyPrintableASCIICharacterIsItself() {
        for value in UInt32(0x20)..<0x7F {
            #expect(cellScalars(Character(Unicode.Scalar(value)!)) == [value])
        }
    }
}
