import Foundation
import NottyCore

// What notty's commands and background work write for a person: every line through
// ``TerminalText``, so nothing from the network drives the terminal.

/// Prints one line to standard error, with control characters shown as placeholders
/// (``TerminalText``): an error may quote what the service or a notification said.
public func warn(_ text: String) {
    FileHandle.standardError.write(Data("notty: \(TerminalText.safe(text))\n".utf8))
}

/// Prints text for a person (never JSON: print that as it is) with control characters shown
/// as placeholders (``TerminalText``), so nothing that came from the network drives the
/// terminal. Line breaks are kept only when asked for (a body).
public func say(_ text: String, keepingLineBreaks: Bool = false) {
    print(TerminalText.safe(text, keepingLineBreaks: keepingLineBreaks))
}
