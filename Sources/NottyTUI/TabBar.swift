import NottyCore

/// Row 0: every view with its count, then the saved views (PROTOCOL.md §17), the current one
/// reversed. Shortens names to fit (a saved view's to its first letters, then leaves them out).
enum TabBar {
    static let shortNames: [NotificationView: String] = [
        .unread: "Unr", .read: "Read", .activated: "Act", .dismissed: "Dis", .snoozed: "Snz", .all: "All",
    ]
    static let letters: [NotificationView: String] = [
        .unread: "U", .read: "R", .activated: "Ac", .dismissed: "D", .snoozed: "S", .all: "Al",
    ]

    static func spans(
        counts: ViewCounts, current: NotificationView?, saved: [SavedViewTab] = [], savedTab: Int? = nil, width: Int
    ) -> [Span] {
        let tiers: [(name: (NotificationView) -> String, padded: Bool, savedName: Int?)] = [
            ({ $0.title }, true, 32), ({ shortNames[$0]! }, true, 8), ({ shortNames[$0]! }, false, 3), ({ letters[$0]! }, false, 1),
            ({ letters[$0]! }, false, nil),
        ]
        var spans: [Span] = []
        for tier in tiers {
            spans = []
            func add(_ label: String, current: Bool) {
                if !spans.isEmpty { spans.append(Span("│", CellStyle(dim: true))) }
                spans.append(Span(tier.padded ? " \(label) " : label, current ? CellStyle(bold: true, reverse: true) : .plain))
            }
            for view in NotificationView.allCases { add("\(tier.name(view)) \(counts[view])", current: view == current) }
            if let length = tier.savedName {
                for (index, tab) in saved.enumerated() {
                    add("\(tab.name.prefix(length)) \(tab.count.map(String.init) ?? "…")", current: index == savedTab)
                }
            }
            if spans.width <= width { break }
        }
        return spans
    }
}
