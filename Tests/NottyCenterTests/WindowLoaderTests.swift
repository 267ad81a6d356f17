import Foundation
import NottyCore
import NottyStore
import NottyTUI
import NottyTestSupport
import Synchronization
import Testing

@testable import NottyCenter

/// A store of `count` notifications (every third read), created a second apart.
func filledStore(_ count: Int, in directory: URL) throws -> (LocalStore, [UserNotification]) {
    let store = try LocalStore(path: directory.appendingPathComponent("store.sqlite").path)
    let base = Date(timeIntervalSince1970: 1_800_000_000)
    let notifications = (0..<count).map { (n: Int) -> UserNotification in
        let read: ReadState = n % 3 == 0 ? .read : .unread
        return .fixture(
            id: UserNotification.fixtureId(n), appNotificationId: "a\(n)", title: "Build \(n) failed",
            created: base.addingTimeInterval(Double(n)), ttl: 86_400 * 30, read: read)
    }
    _ = try store.apply(page: ChangesPage(changes: notifications, cursor: "1", hasMore: false), since: nil)
    return (store, notifications)
}

/// Applies `event` to `state` and answers the loads it causes from `loader`, as the center does.
func answering(_ event: TUIEvent, _ state: inout TUIState, _ loader: WindowLoader, at time: Date) throws {
    var pending = [event]
    while !pending.isEmpty {
        for case .load(let request) in update(&state, pending.removeFirst()) {
            pending.append(try loader.answer(request, now: time))
        }
    }
}

@Suite("The center's store access (WindowLoader, SearchIndexer)")
struct WindowLoaderTests {
    let now = Date(timeIntervalSince1970: 1_800_000_000 + 86_400)

    @Test("a window is the rows around the selection, newest first, with the six counts; an anchor keeps its row selected")
    func windows() throws {
        let directory = Repository.temporaryDirectory("notty-center")
        defer { try? FileManager.default.removeItem(at: directory) }
        let (store, all) = try filledStore(3000, in: directory)
        let loader = WindowLoader(store: store) {}
        guard case .loaded(let top, let counts, let selection) = try loader.answer(WindowRequest(view: .all, span: 40), now: now) else {
            Issue.record("not a window"); return
        }
        #expect(counts.all == 3000 && counts.read == 1000 && counts.unread == 2000)
        #expect(top.total == 3000 && top.offset == 0 && selection == 0 && top.rows.count >= 40)
        #expect(top.rows.first?.id == all.last?.id && top.rows.map(\.createdDateTime) == top.rows.map(\.createdDateTime).sorted(by: >))
        // Anchored on a row in the middle of Unread: that row is selected, its neighbours around it.
        let anchor = all[1501]  // unread (1501 % 3 != 0)
        guard case .loaded(let middle, _, let selected) = try loader.answer(WindowRequest(view: .unread, anchorId: anchor.id, span: 40), now: now)
        else {
            Issue.record("not a window"); return
        }
        #expect(middle.total == 2000)
        #expect(middle.rows[selected - middle.offset].id == anchor.id, "selection \(selected), offset \(middle.offset)")
    }

    @Test("windows read ahead answer their keys while the store is unchanged; a change or a snooze's end makes them be read again")
    func readAhead() throws {
        let directory = Repository.temporaryDirectory("notty-center")
        defer { try? FileManager.default.removeItem(at: directory) }
        let (store, all) = try filledStore(300, in: directory)
        let loader = WindowLoader(store: store) {}
        var state = TUIState(size: Size(columns: 100, rows: 30), now: now)
        func send(_ event: TUIEvent, at time: Date) throws { try answering(event, &state, loader, at: time) }
        try send(.storeChanged, at: now)
        let requests = state.readAheadRequests
        #expect(requests.contains { $0.view == .read && $0.index == 0 }, "Tab: Read from its first row")
        #expect(requests.contains { $0.view == .all && $0.index == 0 }, "Shift-Tab: All from its first row")
        #expect(requests.contains { $0.view == .unread && $0.index == 199 }, "G: the last of Unread's 200 rows")
        for request in requests { try loader.readAhead(request, keeping: requests, now: now) }
        let fresh = WindowLoader(store: store) {}
        for request in requests {
            #expect(try loader.answer(request, now: now) == (try fresh.answer(request, now: now)))
        }
        #expect(loader.answeredAhead.load(ordering: .relaxed) == requests.count)

        // Tab after another device's change: Read is read again, with the row that became read.
        let newest = all[299]  // unread: 299 is not a multiple of 3
        _ = try store.record([(newest.id, LocalChange.patch(StateChange(readState: .read)))], now: now)
        try send(.key(.tab), at: now)
        #expect(loader.answeredAhead.load(ordering: .relaxed) == requests.count, "a window of an older store was used")
        #expect(state.view == .read && state.window.rows.first?.id == newest.id && state.counts.read == 101)

        // A snooze ending between reading ahead and the key: Unread is read again, with the row back.
        let snoozed = all[298]
        _ = try store.record(
            [(snoozed.id, LocalChange.patch(StateChange(userActionState: .snoozed, snoozedUntil: now.addingTimeInterval(60))))], now: now)
        try send(.key(.backTab), at: now)
        #expect(state.view == .unread && !state.window.rows.contains { $0.id == snoozed.id })
        let again = state.readAheadRequests
        for request in again { try loader.readAhead(request, keeping: again, now: now) }
        let served = loader.answeredAhead.load(ordering: .relaxed)
        try send(.key(.tab), at: now)
        #expect(loader.answeredAhead.load(ordering: .relaxed) == served + 1, "Tab within the snooze: the window read ahead")
        let fromRead = state.readAheadRequests
        #expect(fromRead.contains { $0.view == .unread && $0.index == 0 }, "Shift-Tab from Read: Unread from its first row")
        for request in fromRead { try loader.readAhead(request, keeping: fromRead, now: now) }
        let later = now.addingTimeInterval(120)
        try send(.key(.backTab), at: later)
        #expect(loader.answeredAhead.load(ordering: .relaxed) == served + 1, "a window from before the snooze ended was used")
        #expect(state.view == .unread && state.window.rows.first?.id == snoozed.id, "the snooze has ended: the row is back at the top of Unread")
    }

    @Test(
        "frames rendered ahead of Tab, Shift-Tab, G, g and a search's Enter are the frames those keys make; after a change of the store the key's frame is rendered anew"
    )
    func framesAhead() throws {
        let directory = Repository.temporaryDirectory("notty-center")
        defer { try? FileManager.default.removeItem(at: directory) }
        let (store, all) = try filledStore(300, in: directory)
        let loader = WindowLoader(store: store) {}
        var state = TUIState(size: Size(columns: 100, rows: 30), now: now)
        var ahead = WorkAhead()
        /// As the center does: the event and its loads, then the frame it paints.
        func send(_ event: TUIEvent) throws -> Screen {
            try answering(event, &state, loader, at: now)
            return ahead.frame(for: state, timeOnly: false)
        }
        /// The center left idle until its work ahead is done.
        func idle() {
            var steps = 0
            while ahead.hasWork && steps < 100 { ahead.step(state: state, loader: loader, now: now); steps += 1 }
            #expect(!ahead.hasWork, "the work ahead did not end")
        }
        _ = try send(.storeChanged)
        let keys: [Key] = [.tab, .backTab, .character("G"), .character("g")]
        for key in keys {
            idle()
            #expect(try send(.key(key)) == render(state), "\(key)")
        }
        #expect(ahead.framesUsed == keys.count, "every key's frame was rendered ahead")
        // Enter on a search being typed.
        for key in "/Build 29" { _ = try send(.key(.character(key))) }
        idle()
        let entered = try send(.key(.enter))
        #expect(state.query == "Build 29" && entered == render(state))
        #expect(ahead.framesUsed == keys.count + 1, "Enter's frame was rendered ahead")
        _ = try send(.key(.escape))

        // Another device reads the newest unread row after the frames were rendered: Tab's
        // frame is rendered anew and shows it in Read.
        idle()
        let newest = all[299]
        _ = try store.record([(newest.id, LocalChange.patch(StateChange(readState: .read)))], now: now)
        let before = ahead.framesUsed
        let screen = try send(.key(state.view == .unread ? .tab : .character("1")))
        #expect(ahead.framesUsed == before, "a frame of the store before the change was used")
        #expect(screen == render(state) && screen.lines().joined().contains("Read 101"), "\(screen.lines().prefix(1))")
        // A key whose frame was not rendered ahead (j) is rendered as before.
        idle()
        #expect(try send(.key(.character("j"))) == render(state) && ahead.framesUsed == before)
        // In a search prompt Tab, G and g load nothing: no frame is rendered for them.
        _ = try send(.key(.character("/")))
        idle()
        #expect(try send(.key(.character("G"))) == render(state) && ahead.framesUsed == before, "a frame was rendered ahead in the prompt")
    }

    @Test("nothing is read ahead until the store has been quiet for 100 ms, and no frame is rendered ahead after a frame only the clock changed")
    func workAheadWaits() throws {
        let directory = Repository.temporaryDirectory("notty-center")
        defer { try? FileManager.default.removeItem(at: directory) }
        let (store, _) = try filledStore(300, in: directory)
        let loader = WindowLoader(store: store) {}
        var state = TUIState(size: Size(columns: 100, rows: 30), now: now)
        var ahead = WorkAhead()
        /// How many of the windows the state asks for are read ahead.
        func ready() throws -> Int {
            var count = 0
            for request in state.readAheadRequests where try loader.readyAnswer(request, now: now) != nil { count += 1 }
            return count
        }
        #expect(!ahead.hasWork && ahead.waitMilliseconds == nil, "a new center has nothing to do ahead")
        try answering(.storeChanged, &state, loader, at: now)
        ahead.storeChanged(at: now)
        _ = ahead.frame(for: state, timeOnly: false)
        #expect(ahead.waitMilliseconds == 5, "a key typed in a burst comes before planning")
        // 50 ms after the change: nothing is read, however many idle turns pass.
        for _ in 0..<20 { ahead.step(state: state, loader: loader, now: now.addingTimeInterval(0.05)) }
        #expect(try ready() == 0 && ahead.waitMilliseconds == 5)
        // 100 ms after it: the plan is made, then one window a turn.
        ahead.step(state: state, loader: loader, now: now.addingTimeInterval(0.1))
        #expect(try ahead.waitMilliseconds == 0 && ready() == 0)
        let windows = state.readAheadRequests.count
        for turn in 1...windows {
            ahead.step(state: state, loader: loader, now: now.addingTimeInterval(0.1))
            #expect(try ready() == turn)
        }
        while ahead.hasWork { ahead.step(state: state, loader: loader, now: now.addingTimeInterval(0.1)) }
        // The clock's tick alone: the windows are read again, but no frame is rendered ahead.
        try answering(.tick(now.addingTimeInterval(1)), &state, loader, at: now)
        _ = ahead.frame(for: state, timeOnly: true)
        var steps = 0
        while ahead.hasWork { ahead.step(state: state, loader: loader, now: now.addingTimeInterval(1)); steps += 1 }
        #expect(steps == 1 + windows, "frames were rendered ahead after a tick: \(steps) steps")
        _ = try answering(.key(.tab), &state, loader, at: now.addingTimeInterval(1))
        #expect(ahead.frame(for: state, timeOnly: false) == render(state) && ahead.framesUsed == 0)
    }

    /// How many times a loader asked to load again after counting.
    final class Recounts: Sendable {
        let value = Atomic<Int>(0)
    }

    /// A loader over 3,000 notifications whose titles all contain "failed", with the search
    /// index built, and its recounts.
    static func searchLoader(in directory: URL) async throws -> (WindowLoader, Recounts) {
        let (store, _) = try filledStore(3000, in: directory)
        SearchIndexer(store: store).catchUp()
        #expect(
            await eventually(timeout: .seconds(10)) { (try? (await store.perform { try $0.rowsToIndexForSearch() })) == 0 },
            "the search index was not built")
        let recounts = Recounts()
        return (WindowLoader(store: store) { recounts.value.add(1, ordering: .relaxed) }, recounts)
    }

    @Test("the search being typed is read ahead and answers its Enter; its count starts only once that answer is used")
    func searchReadAhead() async throws {
        let directory = Repository.temporaryDirectory("notty-center")
        defer { try? FileManager.default.removeItem(at: directory) }
        let (loader, recounts) = try await Self.searchLoader(in: directory)
        let request = WindowRequest(view: .all, query: "failed", span: 40)
        try loader.readAhead(request, keeping: [request], now: now)
        loader.startCounting()  // decides at once what to count: nothing yet
        #expect(loader.countsStarted.load(ordering: .relaxed) == 0, "a search read ahead was counted before its Enter")
        #expect(recounts.value.load(ordering: .relaxed) == 0)
        let fresh = WindowLoader(store: loader.store) {}
        #expect(try loader.answer(request, now: now) == (try fresh.answer(request, now: now)))
        #expect(loader.answeredAhead.load(ordering: .relaxed) == 1)
        loader.startCounting()
        #expect(await eventually(timeout: .seconds(10)) { recounts.value.load(ordering: .relaxed) == 1 }, "the answer used left no count")
    }

    @Test("a search with many matches answers before counting, then counts in the background and asks to load again")
    func searchCountsInTheBackground() async throws {
        let directory = Repository.temporaryDirectory("notty-center")
        defer { try? FileManager.default.removeItem(at: directory) }
        let (loader, recounts) = try await Self.searchLoader(in: directory)
        let request = WindowRequest(view: .all, query: "failed", span: 40)
        guard case .loaded(let first, _, _) = try loader.answer(request, now: now) else { Issue.record("not a window"); return }
        #expect(!first.counted && first.rows.count >= 40, "3,000 matches are not counted before the first answer")
        loader.startCounting()
        #expect(await eventually(timeout: .seconds(10)) { recounts.value.load(ordering: .relaxed) == 1 }, "no recount")
        guard case .loaded(let again, _, _) = try loader.answer(request, now: now) else { Issue.record("not a window"); return }
        #expect(again.counted && again.total == 3000)
    }
}
