@_spi(Testing) @testable import AppStoreServerAPI
import Dispatch
import ReceiptModel
import Synchronization
import Testing
import ServiceSupport

@testable import AppStore
import TestSupport

/// The pacing parts with no threads and no network: the token bucket, the pacing state machine, `Retry-After`.
@Suite struct ServerAPIPacingTests {
    static let second: UInt64 = 1_000_000_000

    @Test func aBucketSpendsItsBurstThenSpacesCallsAtItsRate() {
        var bucket = TokenBucket(ratePerSecond: 50, nowNs: 0)
        for _ in 0..<50 {
            let value = bucket.reserve(nowNs: 0, latestStartNs: nil)
            #expect(value == 0)
        }
        // Empty: each further call waits one more fiftieth of a second.
        do {
            let value = bucket.reserve(nowNs: 0, latestStartNs: nil)
            #expect(value == 20_000_000)
        }
        do {
            let value = bucket.reserve(nowNs: 0, latestStartNs: nil)
            #expect(value == 40_000_000)
        }
        // 60 ms later three tokens were earned, two of them already promised.
        do {
            let value = bucket.reserve(nowNs: 60_000_000, latestStartNs: nil)
            #expect(value == 0)
        }
        do {
            let value = bucket.reserve(nowNs: 60_000_000, latestStartNs: nil)
            #expect(value == 20_000_000)
        }
    }

    /// (configured production rate, endpoint, environment) → the pace used: never above Apple's published limit.
    static let paceRows: [(Double, ServerAPIEndpoint, AppStoreEnvironment, Double)] = [
        (50.0, .transactionInfo, .production, 50.0),
        (50.0, .refundHistory, .production, 10.0),
        (50.0, .refundHistory, .sandbox, 1.0),
        (5.0, .refundHistory, .production, 5.0),
        (50.0, .testNotification, .production, 1.0),
        (50.0, .setAppAccountToken, .sandbox, 2.0),
        (200.0, .consumptionInformation, .production, 50.0),
    ]

    @Test(arguments: paceRows)
    func anEndpointIsNeverPacedAboveApplesPublishedLimit(
        configured: Double, endpoint: ServerAPIEndpoint, environment: AppStoreEnvironment, expected: Double
    ) {
        let pacing = ServerAPIPacing(productionRatePerSecond: configured)
        #expect(pacing.ratePerSecond(for: ServerAPIPacing.Key(endpoint, environment)) == expected)
    }

    @Test func aCallThatCouldNotStartByItsDeadlineReservesNothing() {
        var bucket = TokenBucket(ratePerSecond: 10, capacity: 1, nowNs: 0)
        do {
            let value = bucket.reserve(nowNs: 0, latestStartNs: 0)
            #expect(value == 0)
        }
        // The next token comes at 100 ms: a caller that must start by 50 ms is refused ...
        do {
            let value = bucket.reserve(nowNs: 0, latestStartNs: 50_000_000)
            #expect(value == nil)
        }
        do {
            let value = bucket.reserve(nowNs: 0, latestStartNs: 50_000_000)
            #expect(value == nil)
        }
        // ... and its refusals did not push later callers back.
        do {
            let value = bucket.reserve(nowNs: 0, latestStartNs: 100_000_000)
            #expect(value == 100_000_000)
        }
        #expect(bucket.waitNs(nowNs: 0) == 200_000_000)
    }

    @Test func aBucketRefillsUpToItsCapacityOnly() {
        var bucket = TokenBucket(ratePerSecond: 5, nowNs: 0)
        for _ in 0..<5 { _ = bucket.reserve(nowNs: 0, latestStartNs: nil) }
        // An hour idle earns no more than the capacity (5).
        let later = 3_600 * Self.second
        for _ in 0..<5 {
            let value = bucket.reserve(nowNs: later, latestStartNs: nil)
            #expect(value == 0)
        }
        do {
            let value = bucket.reserve(nowNs: later, latestStartNs: nil)
            #expect(value == 200_000_000)
        }
    }

    @Test func eachEndpointAndEnvironmentHasItsOwnBucketAndTheSandboxATenthOfTheRate() {
        var pacing = ServerAPIPacing(productionRatePerSecond: 20)
        #expect(pacing.sandboxRatePerSecond == 2)
        let info = ServerAPIPacing.Key(.transactionInfo, .production)
        for _ in 0..<20 {
            let value = pacing.admit(info, nowNs: 0, deadlineNs: nil)
            #expect(value == .start)
        }
        do {
            let value = pacing.admit(info, nowNs: 0, deadlineNs: nil)
            #expect(value == .startAfter(nanoseconds: 50_000_000))
        }
        // Another endpoint, and the same endpoint in the sandbox, are not slowed by it.
        do {
            let value = pacing.admit(.init(.transactionHistory, .production), nowNs: 0, deadlineNs: nil)
            #expect(value == .start)
        }
        let sandbox = ServerAPIPacing.Key(.transactionInfo, .sandbox)
        do {
            let value = pacing.admit(sandbox, nowNs: 0, deadlineNs: nil)
            #expect(value == .start)
        }
        do {
            let value = pacing.admit(sandbox, nowNs: 0, deadlineNs: nil)
            #expect(value == .start)
        }
        do {
            let value = pacing.admit(sandbox, nowNs: 0, deadlineNs: nil)
            #expect(value == .startAfter(nanoseconds: 500_000_000))
        }
        do {
            let value = pacing.admit(sandbox, nowNs: 0, deadlineNs: 100_000_000)
            #expect(value == .tooLate(waitNanoseconds: 1_000_000_000))
        }
    }

    @Test func aHeldEndpointRefusesAtOnceWithoutSpendingTokensUntilTheHoldEnds() {
        var pacing = ServerAPIPacing(productionRatePerSecond: 1)
        let key = ServerAPIPacing.Key(.transactionInfo, .production)
        do {
            let value = pacing.holdBack(key, untilNs: 10 * Self.second)
            #expect(value)
        }
        do {
            let value = pacing.admit(key, nowNs: 4 * Self.second, deadlineNs: nil)
            #expect(value == .heldBack(remainingNanoseconds: 6 * Self.second))
        }
        do {
            let value = pacing.admit(key, nowNs: 5 * Self.second, deadlineNs: nil)
            #expect(value == .heldBack(remainingNanoseconds: 5 * Self.second))
        }
        // An earlier Retry-After does not shorten the hold; a later one extends it.
        do {
            let value = pacing.holdBack(key, untilNs: 8 * Self.second)
            #expect(!value)
        }
        do {
            let value = pacing.holdRemaining(key, nowNs: 9 * Self.second)
            #expect(value == Self.second)
        }
        do {
            let value = pacing.holdBack(key, untilNs: 12 * Self.second)
            #expect(value)
        }
        #expect(pacing.holds(nowNs: 11 * Self.second) == [key: Self.second])
        // The other environment was never held.
        do {
            let value = pacing.admit(.init(.transactionInfo, .sandbox), nowNs: 11 * Self.second, deadlineNs: nil)
            #expect(value == .start)
        }
        // After the hold the bucket is still full: refusals spent nothing (capacity 1, one call starts at once).
        do {
            let value = pacing.admit(key, nowNs: 12 * Self.second, deadlineNs: nil)
            #expect(value == .start)
        }
        do {
            let value = pacing.admit(key, nowNs: 12 * Self.second, deadlineNs: nil)
            #expect(value == .startAfter(nanoseconds: Self.second))
        }
        #expect(pacing.holds(nowNs: 12 * Self.second).isEmpty)
    }

    @Test func retryAfterIsReadAsEpochMillisecondsEpochSecondsOrDeltaSeconds() {
        let now: Int64 = 1_767_225_600_000  // 2026-01-01T00:00:00Z
        #expect(RetryAfter.holdMs("1767225630000", nowWallMs: now) == 30_000)  // epoch ms (Apple's documented form)
        #expect(RetryAfter.holdMs("1767225645", nowWallMs: now) == 45_000)  // epoch s
        #expect(RetryAfter.holdMs("12", nowWallMs: now) == 12_000)  // delta s
        #expect(RetryAfter.holdMs(" 7 ", nowWallMs: now) == 7_000)
        #expect(RetryAfter.holdMs("2.5", nowWallMs: now) == 2_000)
        // Absent or unreadable (an HTTP date, garbage): the default hold.
        #expect(RetryAfter.holdMs(nil, nowWallMs: now) == RetryAfter.defaultHoldMs)
        #expect(RetryAfter.holdMs("Wed, 21 Oct 2026 07:28:00 GMT", nowWallMs: now) == RetryAfter.defaultHoldMs)
        #expect(RetryAfter.holdMs("-5", nowWallMs: now) == RetryAfter.defaultHoldMs)
        // A time already past still holds briefly; a bogus far future holds an hour at most.
        #expect(RetryAfter.holdMs("1767225500000", nowWallMs: now) == RetryAfter.minimumHoldMs)
        #expect(RetryAfter.holdMs("0", nowWallMs: now) == RetryAfter.minimumHoldMs)
        #expect(RetryAfter.holdMs("4102444800000", nowWallMs: now) == RetryAfter.maximumHoldMs)
        #expect(RetryAfter.holdMs("99999999999999999999999", nowWallMs: now) == RetryAfter.maximumHoldMs)
    }

    @Test func thePacerWaitsOnATimerAndRefusesAWaiterWhoseEndpointWasHeldMeanwhile() {
        let clock = ManualClock()
        let pacer = ServerAPIPacer(pacing: ServerAPIPacing(productionRatePerSecond: 1), clock: clock)
        let key = ServerAPIPacing.Key(.transactionHistory, .production)
        let events = EventLog()
        pacer.whenAdmitted(key, deadline: clock.deadline(after: .milliseconds(5_000)), start: { events.add("first waited=\($0)") },
                           refused: { events.add("first refused \($0)") })
        pacer.whenAdmitted(key, deadline: clock.deadline(after: .milliseconds(5_000)), start: { events.add("second waited=\($0)") },
                           refused: { events.add("second refused \($0)") })
        pacer.whenAdmitted(key, deadline: clock.deadline(after: .milliseconds(5_000)), start: { events.add("third waited=\($0)") },
                           refused: { events.add("third refused \($0)") })
        // The first started at once; the others wait on timers, no thread blocked.
        #expect(events.lines == ["first waited=false"])
        #expect(clock.scheduledDelays == [.milliseconds(1_000), .milliseconds(2_000)])
        pacer.holdBack(key, forMs: 1_500)
        clock.runUntilIdle()
        // The second's timer fired during the hold: refused; the third's after it: started.
        #expect(events.lines == [
            "first waited=false", "second refused heldBack(remainingMs: 500)", "third waited=true",
        ])
        #expect(pacer.holdRemainingMs(key) == nil)
        // A call whose turn would come after its deadline is refused at once.
        pacer.whenAdmitted(key, deadline: clock.deadline(after: .milliseconds(100)), start: { events.add("late waited=\($0)") },
                           refused: { events.add("late refused \($0)") })
        #expect(events.lines.last == "late refused tooLate(waitMs: 1000)")
    }
}

/// Lines appended from any thread, read by the test.
final class EventLog: Sendable {
    private let state = Locked<[String]>([])
    func add(_ line: String) { state.withLock { $0.append(line) } }
    var lines: [String] { state.withLock { $0 } }
}
