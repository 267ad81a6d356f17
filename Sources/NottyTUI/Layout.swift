/// Where everything goes on a screen of a given size.
///
/// Row 0 is the tab bar, the second-to-last row the status line, the last row prompts and
/// messages; the rows between are the body. An open detail is a pane at the right when the
/// terminal has at least 100 columns, a pane at the bottom when it has at least 30 rows,
/// and a full page otherwise.
public struct Layout: Sendable, Equatable {
    /// A rectangle of cells.
    public struct Rect: Sendable, Equatable {
        public var x: Int
        public var y: Int
        public var width: Int
        public var height: Int

        public init(x: Int, y: Int, width: Int, height: Int) {
            self.x = x
            self.y = y
            self.width = width
            self.height = height
        }
    }

    /// Where the detail goes.
    public enum Placement: Sendable, Equatable {
        case none, page, right, bottom
    }

    /// The smallest size the UI draws; below it the screen says "terminal too small".
    public static let minimum = Size(columns: 40, rows: 10)
    /// Columns from which the detail is a pane at the right.
    public static let rightPaneColumns = 100
    /// Rows from which the detail is a pane at the bottom (when not at the right).
    public static let bottomPaneRows = 30

    public let size: Size
    public let placement: Placement
    /// The rows between the tab bar and the status line.
    public let body: Rect
    /// The list; the whole body when the detail is a page (the list is then hidden).
    public let list: Rect
    /// The detail, when open.
    public let detail: Rect?

    public init(size: Size, detailOpen: Bool) {
        self.size = size
        let body = Rect(x: 0, y: 1, width: max(0, size.columns), height: max(0, size.rows - 3))
        self.body = body
        guard detailOpen else {
            placement = .none
            list = body
            detail = nil
            return
        }
        if size.columns >= Self.rightPaneColumns {
            let listWidth = size.columns * 11 / 20
            placement = .right
            list = Rect(x: 0, y: body.y, width: listWidth, height: body.height)
            detail = Rect(x: listWidth + 1, y: body.y, width: size.columns - listWidth - 1, height: body.height)
        } else if size.rows >= Self.bottomPaneRows {
            let listHeight = max(5, (body.height - 1) * 2 / 5)
            placement = .bottom
            list = Rect(x: 0, y: body.y, width: body.width, height: listHeight)
            detail = Rect(x: 0, y: body.y + listHeight + 1, width: body.width, height: body.height - listHeight - 1)
        } else {
            placement = .page
            list = body
            detail = body
        }
    }

    /// Whether the terminal is below `minimum`.
    public var isTooSmall: Bool {
        size.columns < Self.minimum.columns || size.rows < Self.minimum.rows
    }

    /// Whether the open detail is a full page (keys then scroll and close it).
    public var isPage: Bool { placement == .page }
}

extension TUIState {
    /// The layout at the current size with the current detail.
    public var layout: Layout { Layout(size: size, detailOpen: detail != nil) }

    /// How many list rows fit on screen.
    var listHeight: Int { max(1, layout.list.height) }
}
