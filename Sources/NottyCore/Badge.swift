import Foundation

/// What a prompt or a status bar shows of a device's store (`notty count`, `notty watch`):
/// how many notifications one view holds, how many of them are High and Unread, and the six
/// counts.
public struct Badge: Sendable, Equatable {
    public var view: NotificationView
    /// The rows of `view` now.
    public var count: Int
    /// The Unread rows of `view` whose priority is High.
    public var highUnread: Int
    /// Every view's count (PROTOCOL.md §1).
    public var counts: ViewCounts
    /// A saved view's name (PROTOCOL.md §17), when the badge counts one (its `view` is All).
    public var name: String?

    public init(view: NotificationView, count: Int, highUnread: Int, counts: ViewCounts, name: String? = nil) {
        self.view = view
        self.count = count
        self.highUnread = highUnread
        self.counts = counts
        self.name = name
    }

    /// The badge of a device with no store yet (never signed in): nothing anywhere.
    public static func empty(view: NotificationView, name: String? = nil) -> Badge {
        Badge(view: view, count: 0, highUnread: 0, counts: ViewCounts(), name: name)
    }

    /// `3 unread, 1 High` — the words of a tooltip.
    public var summary: String {
        "\(count) \(name ?? view.rawValue)" + (highUnread > 0 ? ", \(highUnread) High" : "")
    }

    /// `high` when a High one is Unread, `some` when the view holds any, else `none` (the CSS
    /// class of a waybar module, and its `alt`).
    public var level: String { highUnread > 0 ? "high" : count > 0 ? "some" : "none" }
}

/// How `notty count` and `notty watch` print a ``Badge``: one line each.
public enum BadgeFormat: String, CaseIterable, Sendable {
    /// The number alone: `3`.
    case plain
    /// `{"view":"unread","count":3,"highUnread":1,"counts":{…}}`.
    case json
    /// For `#(notty count --format tmux)` in `status-right`: `✉ 3`, red and bold while a High
    /// one is Unread, nothing at 0.
    case tmux
    /// For a starship custom module: `3`, `3!` while a High one is Unread, nothing at 0 (the
    /// module is hidden).
    case starship
    /// waybar's custom module with `return-type: json`: `{"text","tooltip","class","alt"}`.
    case waybar
    /// i3blocks (`interval=persist`): the full text, `✉ 3`, `✉ 3!` while a High one is Unread,
    /// an empty line at 0 (the block is hidden).
    case i3blocks
    /// polybar's `custom/script` (`tail = true`): `✉ 3`, in red while a High one is Unread.
    case polybar

    /// The line for `badge`; `color` false (NO_COLOR) leaves out tmux's and polybar's colours.
    public func line(_ badge: Badge, color: Bool = true) -> String {
        let high = badge.highUnread > 0
        switch self {
        case .plain:
            return String(badge.count)
        case .json:
            let counts = NotificationView.allCases.map { ($0.rawValue, JSONValue.number(Double(badge.counts[$0]))) }
            return JSONValue.object([
                "view": .string(badge.name ?? badge.view.rawValue), "count": .number(Double(badge.count)),
                "highUnread": .number(Double(badge.highUnread)), "counts": .object(Dictionary(uniqueKeysWithValues: counts)),
            ]).jsonText
        case .tmux:
            guard badge.count > 0 else { return "" }
            return high && color ? "#[fg=red,bold]✉ \(badge.count)!#[default]" : "✉ \(badge.count)" + (high ? "!" : "")
        case .starship:
            guard badge.count > 0 else { return "" }
            return "\(badge.count)" + (high ? "!" : "")
        case .waybar:
            return JSONValue.object([
                "text": .string(badge.count > 0 ? String(badge.count) : ""), "tooltip": .string("notty: \(badge.summary)"),
                "class": .string(badge.level), "alt": .string(badge.level),
            ]).jsonText
        case .i3blocks:
            guard badge.count > 0 else { return "" }
            return "✉ \(badge.count)" + (high ? "!" : "")
        case .polybar:
            guard badge.count > 0 else { return "" }
            return high && color ? "%{F#e06c75}✉ \(badge.count)!%{F-}" : "✉ \(badge.count)" + (high ? "!" : "")
        }
    }
}
