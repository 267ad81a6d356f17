import NottyCore

/// Row 0: every view with its count, the current one reversed. Shortens names to fit.
enum TabBar {
    static let shortNames: [NotificationView: String] = [
        .unread: "Unr", .read: "Read", .activated: "Act", .dismissed: "Dis", .snoozed: "Snz", .all: "All",
    ]
    static let letters: [NotificationView: String] = [
        .unread: "U", .read: "R", .activated: "Ac", .dismissed: "D", .snoozed: "S", .all: "Al",
    ]

    static func spans(counts: ViewCounts, current: NotificationView, width: Int) -> [Span] {
        let tiers: [(name: (NotificationView) -> String, padded: Bool)] = [
            ({ $0.title }, true), ({ shortNames[$0]! }, true), ({ shortNames[$0]! }, false), ({ letters[$0]! }, false),
        ]
        var spans: [Span] = []
        for tier in tiers {
            spans = []
            for view in NotificationView.allCases {
                if !spans.isEmpty { spans.append(Span("│", CellStyle(dim: true))) }
                let label = "\(tier.name(view)) \(counts[view])"
                let text = tier.padded ? " \(label) " : label
                spans.append(Span(text, view == current ? CellStyle(bold: true, reverse: true) : .plain))
            }
            if spans.width <= width { break }
        }
        return spans
    }
}
