import Dispatch
import ServiceSupport
import Testing
import TestSupport

@Suite struct ManualClockTests {
    @Test func timeStandsStillUntilTheTestMovesIt() {
        let clock = ManualClock(wallMilliseconds: 5_000, monotonicNanoseconds: 7_000_000)
        #expect(clock.wallMilliseconds() == 5_000 && clock.monotonicNanoseconds() == 7_000_000)
        clock.passTime(.milliseconds(250))
        #expect(clock.wallMilliseconds() == 5_250 && clock.monotonicNanoseconds() == 257_000_000)
        #expect(clock.deadline(after: .seconds(1)) == DispatchTime(uptimeNanoseconds: 1_257_000_000))
    }

    @Test func advanceRunsOnlyTheWorkThatBecameDueInOrder() {
        let clock = ManualClock()
        let ran = Locked<[String]>([])
        clock.schedule(after: .milliseconds(30)) { ran.withLock { $0.append("30") } }
        clock.schedule(after: .milliseconds(10)) { ran.withLock { $0.append("10") } }
        clock.schedule(after: .milliseconds(10)) { ran.withLock { $0.append("10 again") } }
        clock.passTime(.milliseconds(20))
        #expect(ran.withLock { $0 }.isEmpty, "passTime runs nothing")
        clock.advance(by: .milliseconds(0))
        #expect(ran.withLock { $0 } == ["10", "10 again"])
        #expect(clock.pendingTimers == 1)
        clock.advance(by: .milliseconds(10))
        #expect(ran.withLock { $0 } == ["10", "10 again", "30"])
        #expect(clock.scheduledDelays == [.milliseconds(30), .milliseconds(10), .milliseconds(10)])
    }

    @Test func workScheduledWhileAdvancingWaitsForTheNextStep() {
        let clock = ManualClock()
        let runs = Locked(0)
        clock.schedule(after: .milliseconds(5)) {
            runs.withLock { $0 += 1 }
            clock.schedule(after: .zero) { runs.withLock { $0 += 1 } }
        }
        clock.advance(by: .milliseconds(5))
        #expect(runs.withLock { $0 } == 1 && clock.pendingTimers == 1)
        clock.advance(by: .zero)
        #expect(runs.withLock { $0 } == 2 && clock.pendingTimers == 0)
    }

    @Test func runUntilIdleJumpsToEachDueTimeAndRunsWhatTheWorkSchedules() {
        let clock = ManualClock(wallMilliseconds: 0, monotonicNanoseconds: 0)
        let seen = Locked<[UInt64]>([])
        clock.schedule(after: .milliseconds(100)) {
            seen.withLock { $0.append(clock.monotonicNanoseconds()) }
            clock.schedule(after: .milliseconds(50)) { seen.withLock { $0.append(clock.monotonicNanoseconds()) } }
        }
        clock.runUntilIdle()
        #expect(seen.withLock { $0 } == [100_000_000, 150_000_000])
        #expect(clock.wallMilliseconds() == 150 && clock.pendingTimers == 0)
    }
}

@Suite struct DispatchClockTests {
    @Test func scheduledWorkRunsAfterTheDelayOnTheGivenQueue() async {
        let queue = DispatchQueue(label: "dispatch-clock-test")
        let clock = DispatchClock(queue: queue)
        let start = clock.monotonicNanoseconds()
        let elapsed = await withCheckedContinuation { (continuation: CheckedContinuation<UInt64, Never>) in
            clock.schedule(after: .milliseconds(20)) {
                dispatchPrecondition(condition: .onQueue(queue))
                continuation.resume(returning: clock.monotonicNanoseconds() &- start)
            }
        }
        #expect(elapsed >= 20_000_000)
        #expect(abs(clock.wallMilliseconds() - SystemTime.wallMilliseconds()) < 1_000)
    }
}
