import Foundation
import Testing

@testable import NottyPOSIX

@Suite("Termination signals for a clean quit")
struct SignalTests {
    /// SIGUSR2 stands in for SIGTERM: if forwarding were broken, its default action would end
    /// the test process, which fails loudly instead of hanging. (5 minutes, as every suite that
    /// waits: a fresh CI clone's test process took 31 s to get here once, and over 60 s once.)
    @Test(.timeLimit(.minutes(5)))
    func aSignalIsDeliveredToTheShellInsteadOfKillingIt() async {
        let signals = Signals.terminationSignals([SIGUSR2])
        kill(getpid(), SIGUSR2)
        var iterator = signals.makeAsyncIterator()
        #expect(await iterator.next() == SIGUSR2)
        kill(getpid(), SIGUSR2)
        #expect(await iterator.next() == SIGUSR2)
    }
}
