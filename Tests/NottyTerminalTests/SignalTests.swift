import Foundation
import Testing
@testable import NottyTerminal

@Suite("Termination signals for a clean quit")
struct SignalTests {
    /// SIGUSR2 stands in for SIGTERM: if forwarding were broken, its default action would end
    /// the test process, which fails loudly instead of hanging.
    @Test(.timeLimit(.minutes(1)))
    func aSignalIsDeliveredToTheShellInsteadOfKillingIt() async {
        let signals = Terminal.terminationSignals([SIGUSR2])
        kill(getpid(), SIGUSR2)
        var iterator = signals.makeAsyncIterator()
        #expect(await iterator.next() == SIGUSR2)
        kill(getpid(), SIGUSR2)
        #expect(await iterator.next() == SIGUSR2)
    }
}
