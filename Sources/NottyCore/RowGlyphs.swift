/// The one-cell marks a notification's row shows, in the center and in `notty list`.
public enum RowGlyphs {
    /// `●` for Unread, a blank otherwise.
    public static func unread(_ state: ReadState) -> String { state == .unread ? "●" : " " }

    /// `!` for High, `↓` for Low, a blank for normal.
    public static func priority(_ priority: Priority) -> String {
        switch priority {
        case .high: "!"
        case .low: "↓"
        case .none: " "
        }
    }
}
