import Dispatch
import TestSupport
import Testing

@testable import ServiceSupport

@Suite struct DeadlineQueueTests {
    @Test func elementsExpireInRegistrationOrderOnceTheirTimeoutPassed() {
        var queue = DeadlineQueue<String>(timeout: .milliseconds(100))
        queue.register("a", nowNanoseconds: 1_000_000_000)
        queue.register("b", nowNanoseconds: 1_050_000_000)
        #expect(queue.expire(nowNanoseconds: 1_099_999_999).isEmpty)
        #expect(queue.expire(nowNanoseconds: 1_100_000_000) == ["a"])
        #expect(queue.count == 1)
        #expect(queue.expire(nowNanoseconds: 2_000_000_000) == ["b"])
        #expect(queue.count == 0)
    }

    @Test func removeAllHandsOverWhatHasNotExpired() {
        var queue = DeadlineQueue<Int>(timeout: .seconds(10))
        for value in 1...3 { queue.register(value, nowNanoseconds: 0) }
        #expect(queue.removeAll() == [1, 2, 3])
        #expect(queue.expire(nowNanoseconds: .max).isEmpty)
    }
}

@Suite struct DeadlineSweeperTests {
    @Test func aSweepHandsOverOnlyWhatExpired() {
        let expired = Locked<[[Int]]>([])
        let sweeper = DeadlineSweeper<Int>(timeout: .seconds(60), tick: .seconds(60), label: "test-sweeper") { batch in
            expired.withLock { $0.append(batch) }
        }
        defer { sweeper.cancel() }
        let before = SystemTime.monotonicNanoseconds()
        sweeper.register(1)
        sweeper.register(2)
        sweeper.sweep(nowNanoseconds: before)
        #expect(expired.withLock { $0 }.isEmpty, "nothing expired: onExpired is not called")
        sweeper.sweep(nowNanoseconds: SystemTime.monotonicNanoseconds() + 61_000_000_000)
        #expect(expired.withLock { $0 } == [[1, 2]])
        #expect(sweeper.removeAll().isEmpty)
    }

    @Test func theTimerExpiresElementsWithoutHelp() async throws {
        let expired = Locked<[Int]>([])
        let sweeper = DeadlineSweeper<Int>(timeout: .milliseconds(20), tick: .milliseconds(5), label: "test-sweeper") {
            batch in expired.withLock { $0 += batch }
        }
        defer { sweeper.cancel() }
        let registered = SystemTime.monotonicNanoseconds()
        sweeper.register(7)
        // The point is that no one but the timer sweeps.
        #expect(await eventually(interval: .milliseconds(5)) { !expired.withLock { $0.isEmpty } })
        #expect(expired.withLock { $0 } == [7])
        #expect(SystemTime.monotonicNanoseconds() - registered >= 20_000_000)
        sweeper.register(1)
        #expect(sweeper.removeAll() == [1])
    }
}
