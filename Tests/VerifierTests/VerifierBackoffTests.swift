import ServiceSupport
import Testing

@testable import Verifier

/// The verifier's three waits, all the shared `Backoff`: the sequences they had as three hand-written loops.
@Suite struct VerifierBackoffTests {
    @Test func retryRoundsWaitThirtySecondsDoublingToTenMinutes() {
        let policy = RetryRoundPolicy()
        let waits = (1...8).map { policy.backoff(afterRound: $0) }
        #expect(waits == [30, 60, 120, 240, 480, 600, 600, 600].map { Duration.seconds($0) })
        #expect(policy.horizon == .seconds(30 + 60 + 120 + 240 + 480))
        // An initial wait above the maximum never exceeds the maximum.
        let inverted = RetryRoundPolicy(maximumRounds: 3, initialBackoff: .seconds(90), maximumBackoff: .seconds(60))
        #expect(inverted.backoff(afterRound: 1) == .seconds(60) && inverted.horizon == .seconds(120))
        // No wait stays no wait.
        #expect(RetryRoundPolicy(initialBackoff: .zero, maximumBackoff: .zero).backoff(afterRound: 5) == .zero)
    }

    @Test func publishingWaitsFiftyMillisecondsDoublingToFiveSeconds() {
        let backoff = VerificationEngine.Configuration(
            topics: Samples.topics, limits: DispatchLimits(
                maxInFlight: 1, partitionWindow: 2, partitionResumeMark: 1, pendingLimit: 2, pendingResumeMark: 1),
            retryPolicy: RetryRoundPolicy()
        ).publishBackoff
        // Attempt n (0 = the first publish) failed: the wait before attempt n + 1.
        let waits = (0...8).map { backoff.wait(afterFailures: $0 + 1) }
        #expect(waits == [50, 100, 200, 400, 800, 1_600, 3_200, 5_000, 5_000].map { Duration.milliseconds($0) })
    }

    @Test func heldNotificationsWaitOneSecondDoublingToSixty() {
        let waits = (0...8).map { VerificationEngine.notificationRetryDelay(attempt: $0) }
        #expect(waits == [1, 2, 4, 8, 16, 32, 60, 60, 60].map { Duration.seconds($0) })
        #expect(VerificationEngine.notificationRetryDelay(attempt: -1) == .seconds(1))
    }
}
