import Foundation
import NottyTUI

/// What the center does while the user is idle, one step per turn of its loop without a key,
/// so that a key arriving meanwhile waits for one step at most: first the windows of the keys
/// the user may press next (`TUIState.readAheadRequests`, read by `WindowLoader.readAhead`),
/// then those keys' frames (`FramesAhead`). A frame painted for new events forgets all of it
/// and plans it again from the new state.
///
/// Nothing is planned until the store has been quiet for ``quiet`` (another device's burst
/// would make what was read stale before its key came), and no frame is rendered ahead after
/// a frame that only the clock's tick or the sync status changed (the center left alone would
/// render them every second for nothing).
struct WorkAhead {
    /// How long the store must be unchanged before anything is read ahead.
    static let quiet: TimeInterval = 0.1

    private var planDue = false
    private var windows: [WindowRequest] = []
    private var keeping: [WindowRequest] = []
    private var frames = FramesAhead()
    private var renderFrames = false
    private var lastStoreChange = Date.distantPast

    /// How many painted frames were rendered ahead (for tests).
    var framesUsed: Int { frames.used }

    /// Whether a step is left to take.
    var hasWork: Bool { planDue || !windows.isEmpty || frames.isDue }

    /// How long the loop may wait for a key: 5 ms before planning (a key typed in a burst
    /// comes first), no wait while work is left; nil when nothing is left to do.
    var waitMilliseconds: Int? { planDue ? 5 : hasWork ? 0 : nil }

    /// The store changed at `time` (a `.storeChanged` event was handled).
    mutating func storeChanged(at time: Date) {
        lastStoreChange = time
    }

    /// The screen to paint for `state`, which events just changed: a frame rendered ahead when
    /// one is of an equal state, else `render(state)`. What was read or rendered ahead is then
    /// forgotten and planned again; `timeOnly`: the events were only ticks and sync status.
    mutating func frame(for state: TUIState, timeOnly: Bool) -> Screen {
        let screen = frames.screen(of: state)
        planDue = true
        windows = []
        frames.restart(render: false)
        renderFrames = !timeOnly
        return screen
    }

    /// Takes one step at `now`: plans (once the store is quiet), or reads one window ahead, or
    /// renders one frame ahead. A failed read changes nothing: the key's own load reports it.
    mutating func step(state: TUIState, loader: WindowLoader, now: Date) {
        if planDue {
            guard now.timeIntervalSince(lastStoreChange) >= Self.quiet else { return }
            planDue = false
            windows = state.readAheadRequests
            keeping = windows
            frames.restart(render: renderFrames)
        } else if !windows.isEmpty {
            try? loader.readAhead(windows.removeFirst(), keeping: keeping, now: now)
        } else if frames.isDue {
            try? frames.renderNext(from: state, loader: loader, now: now)
        }
    }
}
