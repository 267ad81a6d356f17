import Foundation
import NottyCore
import NottyPOSIX
import NottyStore
import NottyTUI
import Synchronization

/// Answers the UI's window requests from the store: the view's rows around the selection,
/// read with indexed, windowed queries (never the whole view). The six counts are read again
/// only when the store changed or a snooze or expiry came due, not on every key press.
///
/// A search with many matches is answered before they are counted (counting them is a scan
/// of the view): the window holds the rows around the selection and says it is not counted,
/// a background task counts, and `recount` asks the UI to load again, which then takes the
/// count from here while the store has not changed.
public final class WindowLoader: Sendable {
    public let store: LocalStore
    private let recount: @Sendable () -> Void
    private let cached = Mutex<(revision: Int64, validUntil: Date?, counts: ViewCounts)?>(nil)
    private let searchCounts = Mutex<[SearchCount: (count: Int, validUntil: Date?)]>([:])
    private let counting = Mutex<Set<SearchCount>>([])
    /// Counts asked for by answers not yet painted.
    private let toCount = Mutex<[SearchCount]>([])
    /// Answers made ahead of their keys (`readAhead`), each as of one revision of the store
    /// and until the next snooze or expiry; used while both hold, so an answer from here is
    /// the one `answer` would make now.
    private let readyAnswers = Mutex<[WindowRequest: (revision: Int64, validUntil: Date?, answer: Answer)]>([:])
    /// How many answers came from `readyAnswers` (for tests).
    let answeredAhead = Atomic<Int>(0)
    /// Searches whose counting has started (tests check that one read ahead is not counted).
    let countsStarted = Atomic<Int>(0)

    /// A search's count as of one revision of the store.
    struct SearchCount: Hashable {
        var view: NotificationView
        var query: String
        var revision: Int64
    }

    public init(store: LocalStore, recount: @escaping @Sendable () -> Void) {
        self.store = store
        self.recount = recount
    }

    /// Answers `request` from one read transaction of the store (its counts, the selection's
    /// position, the rows are of one revision), or from what was read ahead for it.
    public func answer(_ request: WindowRequest, now: Date) throws -> TUIEvent {
        let answer = try store.snapshot { snapshot -> Answer in
            let (revision, counts) = try counts(snapshot, now: now)
            if let ready = readyAnswer(request, revision: revision, now: now) {
                answeredAhead.add(1, ordering: .relaxed)
                return ready
            }
            return try self.answer(request, snapshot, revision: revision, counts: counts, now: now)
        }
        return use(answer)
    }

    /// An answer, and the count it leaves to start (a search with many matches).
    typealias Answer = (event: TUIEvent, count: SearchCount?)

    /// Queues the count an answer leaves (started once its frame is painted).
    private func use(_ answer: Answer) -> TUIEvent {
        if let count = answer.count { toCount.withLock { $0.append(count) } }
        return answer.event
    }

    private func answer(_ request: WindowRequest, _ snapshot: StoreSnapshot, revision: Int64, counts: ViewCounts, now: Date) throws -> Answer {
        if request.groups {
            let groups = try snapshot.groups(view: request.view, query: request.query, now: now)
            return (.groupsLoaded(GroupWindow(view: request.view, query: request.query, groups: groups), counts: counts), nil)
        }
        let anchor = try request.anchorId.flatMap { try snapshot.position(of: $0, view: request.view, query: request.query, now: now) }
        let total: Int
        if request.query.isEmpty {
            total = counts[request.view]
        } else if let known = searchCount(SearchCount(view: request.view, query: request.query, revision: revision), now: now) {
            total = known
        } else if let quick = try snapshot.quickCount(view: request.view, query: request.query, now: now) {
            total = quick
        } else {
            return try answerBeforeCounting(request, snapshot, anchor: anchor, revision: revision, counts: counts, now: now)
        }
        let (selection, offset, length) = request.placement(total: total, anchorIndex: anchor)
        let rows =
            length > 0 ? try snapshot.window(view: request.view, query: request.query, offset: offset, limit: length, total: total, now: now) : []
        let window = ViewWindow(view: request.view, query: request.query, total: total, offset: offset, rows: rows)
        return (.loaded(window, counts: counts, selection: selection), nil)
    }

    /// Answers `request` now and keeps the answer for when it is asked for (see
    /// `TUIState.readAheadRequests`); answers kept for requests not in `keeping` are dropped.
    /// A search's answer that leaves a count keeps it until the answer is used: nothing is
    /// counted for a search the user does not enter.
    public func readAhead(_ request: WindowRequest, keeping: [WindowRequest], now: Date) throws {
        let made = try store.snapshot { snapshot -> (revision: Int64, validUntil: Date?, answer: Answer)? in
            let (revision, counts) = try counts(snapshot, now: now)
            guard readyAnswer(request, revision: revision, now: now) == nil else { return nil }
            let validUntil = try snapshot.nextTimedChange(after: now)
            return (revision, validUntil, try answer(request, snapshot, revision: revision, counts: counts, now: now))
        }
        guard let (revision, validUntil, answer) = made else { return }
        readyAnswers.withLock { answers in
            answers = answers.filter { keeping.contains($0.key) }
            answers[request] = (revision, validUntil, answer)
        }
    }

    /// The answer read ahead for `request`, if it is still the one `answer` would make now
    /// (`FramesAhead` renders from it); nil otherwise. Not counted in `answeredAhead`, and
    /// starts no count.
    func readyAnswer(_ request: WindowRequest, now: Date) throws -> TUIEvent? {
        guard readyAnswers.withLock({ $0[request] }) != nil else { return nil }
        return readyAnswer(request, revision: try store.revision(), now: now)?.event
    }

    /// The answer read ahead for `request`, while it is still of this revision and no snooze
    /// or expiry has come due since.
    private func readyAnswer(_ request: WindowRequest, revision: Int64, now: Date) -> Answer? {
        guard let ready = readyAnswers.withLock({ $0[request] }), ready.revision == revision,
            ready.validUntil.map({ now < $0 }) ?? true
        else { return nil }
        return ready.answer
    }

    /// The rows around the selection of a search whose matches are not counted yet (found by
    /// stepping over the view from its newest row); counting starts in the background. When
    /// fewer rows than asked for come back, they end the list and are its count.
    private func answerBeforeCounting(
        _ request: WindowRequest, _ snapshot: StoreSnapshot, anchor: Int?, revision: Int64, counts: ViewCounts, now: Date
    ) throws -> Answer {
        // The placement of a list with no end known.
        let (wanted, offset, span) = request.placement(total: .max, anchorIndex: anchor)
        var rows = try snapshot.window(view: request.view, query: request.query, offset: offset, limit: span + 1, now: now)
        let counted = rows.count <= span && (offset == 0 || !rows.isEmpty)
        if !counted {
            if rows.isEmpty {  // past the end of a list not counted yet: start again from the top
                return try answer(
                    WindowRequest(view: request.view, query: request.query, index: 0, span: span), snapshot, revision: revision, counts: counts,
                    now: now)
            }
            rows.removeLast()
        }
        let window = ViewWindow(view: request.view, query: request.query, total: offset + rows.count, offset: offset, rows: rows, counted: counted)
        return (
            .loaded(window, counts: counts, selection: min(wanted, max(0, offset + rows.count - 1))),
            counted ? nil : SearchCount(view: request.view, query: request.query, revision: revision)
        )
    }

    private func searchCount(_ key: SearchCount, now: Date) -> Int? {
        guard let known = searchCounts.withLock({ $0[key] }), known.validUntil.map({ now < $0 }) ?? true else { return nil }
        return known.count
    }

    /// Starts counting what answers left uncounted; called once their frame is painted, so
    /// that counting does not compete with it for the processor.
    public func startCounting() {
        for key in toCount.withLock({ keys in
            defer { keys.removeAll() }; return keys
        }) {
            countInBackground(key)
        }
    }

    private func countInBackground(_ key: SearchCount) {
        guard counting.withLock({ $0.insert(key).inserted }) else { return }
        countsStarted.add(1, ordering: .relaxed)
        startOffThePool(name: "notty-count") { [self] in
            let now = Date()
            // The revision is read before counting: a count tagged with it is of that
            // revision, or of a later one that makes the tag stale anyway.
            let count = (try? store.revision()) == key.revision ? try? store.count(view: key.view, query: key.query, now: now) : nil
            let validUntil = try? store.nextTimedChange(after: now)
            counting.withLock { _ = $0.remove(key) }
            // A count of a store that has changed since is of no use: that change reloads anyway.
            guard let count, (try? store.revision()) == key.revision else { return }
            searchCounts.withLock { counts in
                counts = counts.filter { $0.key.revision == key.revision }
                counts[key] = (count, validUntil)
            }
            recount()
        }
    }

    private func counts(_ snapshot: StoreSnapshot, now: Date) throws -> (revision: Int64, counts: ViewCounts) {
        let revision = try snapshot.revision()
        if let cached = cached.withLock({ $0 }), cached.revision == revision, cached.validUntil.map({ now < $0 }) ?? true {
            return (revision, cached.counts)
        }
        let counts = try snapshot.counts(now: now)
        let validUntil = try snapshot.nextTimedChange(after: now)
        self.cached.withLock { $0 = (revision, validUntil, counts) }
        return (revision, counts)
    }
}
