import Foundation
import ServiceSupport
import Testing

@Suite("gate")
struct GateTests {
    @Test("closed: a bounded wait returns false once its bound passed")
    func closedGateTimesOut() {
        let gate = Gate()
        #expect(!gate.wait(within: .milliseconds(20)))
    }

    @Test("open: every waiter, and every later wait, passes at once")
    func openGateLetsEveryoneThrough() {
        let gate = Gate()
        gate.open()
        #expect(gate.wait(within: .zero))
        #expect(gate.wait(within: .zero))
    }

    @Test("waiters blocked before the gate opens all pass when it opens")
    func blockedWaitersPass() {
        let gate = Gate()
        let passed = Locked(0)
        let group = DispatchGroup()
        for _ in 0..<3 {
            DispatchQueue.global().async(group: group) {
                // A bound far beyond the test's life: only `open` can end these waits.
                if gate.wait(within: .seconds(600)) { passed.withLock { $0 += 1 } }
            }
        }
        gate.open()
        group.wait()
        #expect(passed.withLock { $0 } == 3)
    }
}
