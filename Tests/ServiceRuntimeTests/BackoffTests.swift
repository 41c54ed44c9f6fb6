import ServiceSupport
import Testing

@Suite struct BackoffTests {
    @Test func doublesUpToTheMaximumAndStartsOverAfterReset() {
        var backoff = Backoff(initial: .milliseconds(100), maximum: .milliseconds(500))
        let waits = (0..<5).map { _ in backoff.next() }
        #expect(waits == [100, 200, 400, 500, 500].map { Duration.milliseconds($0) })
        backoff.reset()
        #expect(backoff.next() == .milliseconds(100))
    }

    @Test func theDefaultsAreTheServicesRetryPace() {
        var backoff = Backoff()
        #expect(backoff.next() == .milliseconds(100))
        #expect(backoff.maximum == .seconds(5))
    }

    /// (initial ms, maximum ms, multiplier, failures) -> wait ms. No jitter: the same row always gives the same wait.
    @Test(arguments: [
        // The verifier's retry rounds at their defaults (30 s doubling to 10 min).
        (30_000, 600_000, 2, 1, 30_000), (30_000, 600_000, 2, 2, 60_000), (30_000, 600_000, 2, 5, 480_000),
        (30_000, 600_000, 2, 6, 600_000), (30_000, 600_000, 2, 100, 600_000),
        // A held notification (1 s doubling to 60 s): 32 s after 6 failures, the cap after 7.
        (1_000, 60_000, 2, 6, 32_000), (1_000, 60_000, 2, 7, 60_000),
        // No failure yet, or a negative count: the first wait.
        (50, 5_000, 2, 0, 50), (50, 5_000, 2, -3, 50),
        // Another multiplier; 1 never grows; 0 or less counts as 1.
        (10, 10_000, 3, 4, 270), (10, 10_000, 1, 50, 10), (10, 10_000, 0, 50, 10),
        // Zero stays zero; a maximum below the initial wait is raised to it.
        (0, 1_000, 2, 10, 0), (500, 100, 2, 3, 500),
        // Counts far past the cap end at once and never overflow.
        (1, 3_600_000, 2, Int.max, 3_600_000),
    ])
    func waitAfterFailures(initialMs: Int, maximumMs: Int, multiplier: Int, failures: Int, expectedMs: Int) {
        let backoff = Backoff(
            initial: .milliseconds(initialMs), maximum: .milliseconds(maximumMs), multiplier: multiplier)
        #expect(backoff.wait(afterFailures: failures) == .milliseconds(expectedMs))
    }

    @Test func nextAndCurrentFollowWaitAfterFailures() {
        var backoff = Backoff(initial: .milliseconds(50), maximum: .seconds(5))
        for failures in 1...12 {
            #expect(backoff.current == backoff.wait(afterFailures: failures))
            #expect(backoff.next() == backoff.wait(afterFailures: failures))
            #expect(backoff.failures == failures)
        }
        backoff.reset()
        #expect(backoff.failures == 0 && backoff.current == .milliseconds(50))
    }
}
