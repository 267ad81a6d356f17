import CPOSIX
import Foundation
import NottyPOSIX
import NottyStore
import Synchronization

/// Adds the rows that are not in the search index yet, a few thousand per transaction, in the
/// background whenever the store changed; one run at a time.
public final class SearchIndexer: Sendable {
    public let store: LocalStore
    private let running = Atomic<Bool>(false)

    public init(store: LocalStore) {
        self.store = store
    }

    public func catchUp() {
        guard running.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged else { return }
        startOffThePool(name: "notty-index") { [self] in
            var rounds = 0
            var finished = false  // false after an error: the next change tries again
            while let more = try? store.indexForSearch() {
                rounds += 1
                if !more { finished = true; break }
            }
            if rounds > 1 { _ = malloc_trim(0) }  // give the heap the index build used back
            running.store(false, ordering: .releasing)
            // Rows written after the last round but before the flag was cleared.
            if finished, (try? store.rowsToIndexForSearch()) ?? 0 > 0 { catchUp() }
        }
    }
}
