import Testing

@testable import AppStore

@Suite struct RetryPolicyTests {
    let policy = AppleCallRetryPolicy(maxAttempts: 5, malformedReceiptMaxAttempts: 2, baseDelayMs: 100, maxDelayMs: 1_000)

    @Test func theBackoffCeilingDoublesUpToTheCap() {
        // unitRandom just below 1 shows the ceiling of each retry.
        let ceilings = (1...6).map { policy.delayMs(beforeRetry: $0, unitRandom: 0.999_999_999_9) }
        #expect(ceilings == [99, 199, 399, 799, 999, 999])
    }

    @Test func fullJitterSpreadsTheDelayFromZeroToTheCeiling() {
        #expect(policy.delayMs(beforeRetry: 3, unitRandom: 0) == 0)
        #expect(policy.delayMs(beforeRetry: 3, unitRandom: 0.5) == 200)
        #expect(policy.delayMs(beforeRetry: 3, unitRandom: 0.25) == 100)
        #expect(policy.delayMs(beforeRetry: 40, unitRandom: 0.5) == 500)
    }

    @Test func retriesUntilTheAttemptBudgetIsSpent() {
        for attempt in 1..<5 {
            #expect(
                policy.decide(
                    attemptsMade: attempt, malformedAttempts: 0, kind: .transient, remainingMs: 60_000,
                    minimumAttemptMs: 50, unitRandom: 0.5)
                    == .retry(afterMs: policy.delayMs(beforeRetry: attempt, unitRandom: 0.5)))
        }
        #expect(
            policy.decide(
                attemptsMade: 5, malformedAttempts: 0, kind: .transient, remainingMs: 60_000, minimumAttemptMs: 50,
                unitRandom: 0.5) == .giveUp)
    }

    @Test func malformedReceiptsGetASmallerBudget() {
        #expect(
            policy.decide(
                attemptsMade: 1, malformedAttempts: 1, kind: .malformedReceipt, remainingMs: 60_000,
                minimumAttemptMs: 50,
                unitRandom: 0) == .retry(afterMs: 0))
        #expect(
            policy.decide(
                attemptsMade: 2, malformedAttempts: 2, kind: .malformedReceipt, remainingMs: 60_000,
                minimumAttemptMs: 50,
                unitRandom: 0) == .giveUp)
        // Earlier 21002s do not limit a transient failure.
        #expect(
            policy.decide(
                attemptsMade: 3, malformedAttempts: 2, kind: .transient, remainingMs: 60_000, minimumAttemptMs: 50,
                unitRandom: 0) == .retry(afterMs: 0))
    }

    @Test func stopsWhenTheNextAttemptCouldNotFinishBeforeTheDeadline() {
        // Retry 2 with unitRandom 0.5 waits 100 ms.
        #expect(
            policy.decide(
                attemptsMade: 2, malformedAttempts: 0, kind: .transient, remainingMs: 149, minimumAttemptMs: 50,
                unitRandom: 0.5) == .deadlineTooClose)
        #expect(
            policy.decide(
                attemptsMade: 2, malformedAttempts: 0, kind: .transient, remainingMs: 150, minimumAttemptMs: 50,
                unitRandom: 0.5) == .retry(afterMs: 100))
    }
}
