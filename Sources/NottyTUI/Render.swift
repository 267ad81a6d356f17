import Foundation
import NottyCore

/// Draws the state into a screen of `state.size`. Pure: the same state gives the same screen.
public func render(_ state: TUIState) -> Screen {
    var screen = Screen(size: state.size)
    let layout = state.layout
    guard !layout.isTooSmall else {
        let needed = "terminal too small (need \(Layout.minimum.columns)×\(Layout.minimum.rows))"
        screen.put(DisplayWidth.truncate(needed, to: state.size.columns), column: 0, row: 0)
        return screen
    }
    screen.put(
        TabBar.spans(
            counts: state.counts, current: state.savedTab == nil ? state.view : nil, saved: state.savedViews, savedTab: state.savedTab,
            width: state.size.columns), column: 0, row: 0)
    if state.help != nil {
        HelpText.draw(into: &screen, state: state, in: layout.body)
    } else {
        if layout.placement != .page { ListView.draw(into: &screen, state: state, in: layout.list) }
        if let detail = state.detail, let rect = layout.detail {
            DetailView.draw(into: &screen, state: state, detail: detail, in: rect, placement: layout.placement)
        }
    }
    StatusLine.draw(into: &screen, state: state, row: state.size.rows - 2)
    BottomLine.draw(into: &screen, state: state, row: state.size.rows - 1)
    if !state.useColor {
        for row in 0..<state.size.rows {
            screen.restyle(row: row, from: 0, to: state.size.columns) { $0.color = nil }
        }
    }
    return screen
}
