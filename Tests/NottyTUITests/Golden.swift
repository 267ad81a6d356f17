import Foundation
import Testing

@testable import NottyTUI

/// Golden screens: a rendered screen as text lines (trailing spaces trimmed), compared with
/// `Golden/<name>.txt`. `NOTTY_UPDATE_GOLDEN=1` rewrites the files instead; a missing file fails.
enum Golden {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Golden")
    static let updating = ProcessInfo.processInfo.environment["NOTTY_UPDATE_GOLDEN"] == "1"

    /// The screen as golden text.
    static func text(_ screen: Screen) -> String {
        screen.lines().map { $0.trimmingTrailingSpaces() }.joined(separator: "\n") + "\n"
    }

    static func check(_ name: String, _ screen: Screen, sourceLocation: SourceLocation = #_sourceLocation) throws {
        // Every line fills exactly the terminal width: continuation cells match wide characters.
        for (row, line) in screen.lines().enumerated() {
            #expect(
                DisplayWidth.width(of: line) == screen.size.columns, "row \(row) of \(name) is \(DisplayWidth.width(of: line)) cells wide",
                sourceLocation: sourceLocation)
        }
        let file = directory.appendingPathComponent(name + ".txt")
        let actual = text(screen)
        if updating {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            try actual.write(to: file, atomically: true, encoding: .utf8)
            return
        }
        guard let expected = try? String(contentsOf: file, encoding: .utf8) else {
            Issue.record("missing golden file \(file.path); run with NOTTY_UPDATE_GOLDEN=1 and review it", sourceLocation: sourceLocation)
            return
        }
        if actual != expected {
            let a = actual.split(separator: "\n", omittingEmptySubsequences: false)
            let e = expected.split(separator: "\n", omittingEmptySubsequences: false)
            let diff = (0..<max(a.count, e.count)).compactMap { i -> String? in
                let x = i < a.count ? String(a[i]) : "<none>"
                let y = i < e.count ? String(e[i]) : "<none>"
                return x == y ? nil : "row \(i)\n  expected: \(y)\n  actual:   \(x)"
            }
            Issue.record("screen \(name) differs from its golden file:\n\(diff.joined(separator: "\n"))", sourceLocation: sourceLocation)
        }
    }
}
