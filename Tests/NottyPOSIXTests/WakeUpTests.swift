import Foundation
import NottyPOSIX
import Testing

@Suite("WakeUp")
struct WakeUpTests {
    @Test("signals never block, however many are pending; drain empties the pipe and says whether one was pending")
    func signalsAndDrains() throws {
        let wakeUp = try #require(WakeUp())
        #expect(!wakeUp.drain())
        for _ in 0..<100_000 { wakeUp.signal() }  // more than a pipe holds
        #expect(wakeUp.drain())
        #expect(!wakeUp.drain())
        wakeUp.signal()
        #expect(wakeUp.drain())
    }

    @Test("a byte signalled is taken back in order, and a wait returns at once while one is pending, not before")
    func carriesBytes() throws {
        let wakeUp = try #require(WakeUp())
        #expect(!wakeUp.wait(timeoutMilliseconds: 0))
        wakeUp.signal(15)
        wakeUp.signal(2)
        #expect(wakeUp.wait(timeoutMilliseconds: 0))
        #expect(wakeUp.take() == [15, 2])
        #expect(!wakeUp.wait(timeoutMilliseconds: 0))
    }

    @Test("a signal from another thread ends a wait with no time limit")
    func wakesAnotherThread() async throws {
        let wakeUp = try #require(WakeUp())
        // The wait blocks a thread of its own, not one of Swift's pool.
        let woken = await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            Thread { continuation.resume(returning: wakeUp.wait()) }.start()
            wakeUp.signal()
        }
        #expect(woken)
    }
}
