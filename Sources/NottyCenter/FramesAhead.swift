import Foundation
import NottyTUI

/// Frames rendered ahead of their keys. Once the windows that `TUIState.readAheadKeys` ask
/// for are read ahead (`WindowLoader.readAhead`), the center renders, one per idle turn, the
/// frame each of those keys would lead to: `update` on a copy of the state, the loads it
/// causes answered only from what was read ahead, `render`. When a frame is due, a state equal
/// to one of those takes its screen instead of rendering again: `render` is a function of the
/// state alone, so the screen is the one it would make. Anything else is rendered as before.
struct FramesAhead {
    private var frames: [(state: TUIState, screen: Screen)] = []
    private var keys: [Key] = []
    /// How many frames were taken from here (for tests).
    private(set) var used = 0

    /// Whether keys are left to render ahead.
    var isDue: Bool { !keys.isEmpty }

    /// Forgets every frame (the state they started from is gone) and, with `render`, plans
    /// one for each of `TUIState.readAheadKeys`.
    mutating func restart(render: Bool) {
        frames = []
        keys = render ? TUIState.readAheadKeys : []
    }

    /// Renders the next key's frame from `state`, if the key loads a window and every load
    /// was read ahead (a key that loads nothing here, as in a prompt or the help, is left:
    /// that is not what the user is about to press).
    mutating func renderNext(from state: TUIState, loader: WindowLoader, now: Date) throws {
        guard !keys.isEmpty else { return }
        let key = keys.removeFirst()
        var next = state
        var events: [TUIEvent] = [.key(key)]
        var index = 0
        while index < events.count {
            for effect in update(&next, events[index]) {
                guard case .load(let request) = effect, let ready = try loader.readyAnswer(request, now: now) else { return }
                events.append(ready)
            }
            index += 1
        }
        guard events.count > 1, !frames.contains(where: { $0.state == next }) else { return }
        frames.append((next, render(next)))
    }

    /// The screen of `state`: a frame rendered ahead when one is of an equal state, else
    /// `render(state)`.
    mutating func screen(of state: TUIState) -> Screen {
        if let frame = frames.first(where: { $0.state == state }) {
            used += 1
            return frame.screen
        }
        return render(state)
    }
}
