import Testing

@testable import Verifier

@Suite("AppleCircuitBreaker")
struct AppleCircuitBreakerTests {
    let configuration = AppleCircuitBreaker.Configuration(
        windowSize: 10, minimumObservations: 5, failureRatio: 0.6, initialProbeInterval: .seconds(1),
        maximumProbeInterval: .seconds(3))

    @Test func staysClosedUntilEnoughObservationsMostlyFail() {
        var breaker = AppleCircuitBreaker(configuration: configuration)
        for _ in 0..<4 { #expect(breaker.record(success: false, nowNs: 0) == nil) }
        #expect(breaker.record(success: false, nowNs: 0) == .opened)
        #expect(breaker.isOpen)
    }

    @Test func occasionalFailuresAmongSuccessesDoNotOpen() {
        var breaker = AppleCircuitBreaker(configuration: configuration)
        for index in 0..<100 {
            #expect(breaker.record(success: index % 2 == 0, nowNs: 0) == nil)
        }
        #expect(!breaker.isOpen)
        #expect(breaker.recentObservations == 10 && breaker.recentFailures == 5)
    }

    func probe(_ breaker: inout AppleCircuitBreaker, at nowNs: UInt64) -> Bool {
        breaker.takeProbe(nowNs: nowNs)
    }

    @Test func probesAreSpacedWithDoublingIntervalsAndASuccessCloses() {
        let second: UInt64 = 1_000_000_000
        var breaker = AppleCircuitBreaker(configuration: configuration)
        for _ in 0..<5 { _ = breaker.record(success: false, nowNs: 0) }
        #expect(probe(&breaker, at: second - 1) == false)
        #expect(probe(&breaker, at: second) == true)
        #expect(probe(&breaker, at: second) == false)  // one at a time
        breaker.probeFailed(nowNs: second)
        #expect(probe(&breaker, at: 2 * second) == false)
        #expect(probe(&breaker, at: 3 * second) == true)
        breaker.probeFailed(nowNs: 3 * second)
        #expect(probe(&breaker, at: 5 * second) == false)
        #expect(probe(&breaker, at: 6 * second) == true)  // capped at 3 s
        #expect(breaker.record(success: false, nowNs: 6 * second) == nil)
        #expect(breaker.record(success: true, nowNs: 6 * second) == .closed)
        #expect(!breaker.isOpen && breaker.recentObservations == 0)
    }
}

@Suite("RetryRoundPolicy")
struct RetryRoundPolicyTests {
    @Test func backoffDoublesUpToTheCapAndTheHorizonSumsTheWaits() {
        let policy = RetryRoundPolicy(maximumRounds: 5, initialBackoff: .seconds(10), maximumBackoff: .seconds(30))
        #expect(policy.backoff(afterRound: 1) == .seconds(10))
        #expect(policy.backoff(afterRound: 2) == .seconds(20))
        #expect(policy.backoff(afterRound: 3) == .seconds(30))
        #expect(policy.backoff(afterRound: 9) == .seconds(30))
        #expect(policy.horizon == .seconds(90))
    }
}
