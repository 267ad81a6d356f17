import Foundation
import NottyCenter
import NottyCore
import NottyStore
import NottyTUI
import NottyTerminal

/// `notty-bench frames STORE`: where a frame's time goes inside `notty`, phase by phase, on a
/// copy of a device's store (`NOTTY_BENCH_KEEP_STORE` of `tui` or `client` keeps one). It runs
/// the center's own parts in the center's order — `update`, the `WindowLoader`'s answer,
/// `update` again, `render`, and `Terminal.paint` (ncurses, on a pseudo-terminal drained by
/// another thread) — for the keys `notty-bench tui` times, and for the Enter of each of its
/// searches (the search index is built first: the file is written to), and prints each
/// phase's figures.
/// What it leaves out is the pseudo-terminal's far side: the kernel and the reader.
enum FrameBench {
    static func run(storePath: String, repeats: Int, pause: Duration) throws {
        let store = try LocalStore(path: storePath)
        let terminal = try PseudoTerminal(columns: 120, rows: 40)
        let master = terminal.master
        let drain = Thread {
            var buffer = [UInt8](repeating: 0, count: 65_536)
            while Glibc.read(master, &buffer, buffer.count) > 0 {}
        }
        drain.start()
        let screen = Terminal(ttyPath: terminal.slavePath, terminalType: "xterm-256color")
        try screen.start(useColor: true)
        defer { screen.stop() }
        let loader = WindowLoader(store: store) {}
        var state = TUIState(size: screen.size(), now: Date(), timeZone: .current, useColor: true)
        var phases: [String: [Double]] = [:]

        /// One key through the center's steps; returns the frame's whole time.
        func frame(_ event: TUIEvent, record: String?) throws {
            if pause > .zero { Thread.sleep(forTimeInterval: pause.seconds) }
            var pending = [event]
            var loads = 0.0, updates = 0.0
            var index = 0
            while index < pending.count {
                var effects: [TUIEffect] = []
                updates += milliseconds { effects = update(&state, pending[index]) }
                index += 1
                for case .load(let request) in effects {
                    try loads += milliseconds { pending.append(try loader.answer(request, now: Date())) }
                }
            }
            var drawn = Screen(size: state.size)
            let rendering = milliseconds { drawn = render(state) }
            let painting = milliseconds { screen.paint(drawn) }
            guard let record else { return }
            phases["\(record): update", default: []].append(updates)
            phases["\(record): load", default: []].append(loads)
            phases["\(record): render", default: []].append(rendering)
            phases["\(record): paint", default: []].append(painting)
            phases["\(record): all", default: []].append(updates + loads + rendering + painting)
        }

        try frame(.storeChanged, record: nil)
        let keys: [(String, [Key])] = [
            ("moving", [.character("j"), .character("k")]),
            ("switching", [.tab, .backTab]),
            ("jumping", [.character("G"), .control("b"), .character("g"), .control("f")]),
        ]
        for (name, cycle) in keys {
            for i in 0..<repeats {
                try frame(.key(cycle[i % cycle.count]), record: name)
            }
        }
        // Searches, the four queries in turn (so that none is the one the store remembers):
        // `/`, the query typed, then Enter (recorded), then Esc.
        while try store.indexForSearch() {}
        for i in 0..<(repeats / 10) {
            try frame(.key(.character("/")), record: nil)
            let query = ClientBench.searchQueries[i % ClientBench.searchQueries.count]
            for character in query {
                try frame(.key(.character(character)), record: nil)
            }
            try frame(.key(.enter), record: "Enter '\(query)'")
            try frame(.key(.escape), record: nil)
        }
        print(
            "one frame inside notty, by phase (120×40, \(try store.counts().all) notifications, \(pause.seconds * 1000) ms idle before each key; paint includes ncurses writing to a pseudo-terminal):"
        )
        for name in keys.map(\.0) + ClientBench.searchQueries.map { "Enter '\($0)'" } {
            for phase in ["update", "load", "render", "paint", "all"] {
                let label = "\(name): \(phase)"
                print("  \(label.padding(toLength: 34, withPad: " ", startingAt: 0)) \(summary(phases[label] ?? []))")
            }
        }
    }
}
