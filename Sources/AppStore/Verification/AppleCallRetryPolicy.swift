import ServiceSupport

/// When to call Apple again within one verification round, in this process (the AppStore layer; the verifier's
/// `RetryRoundPolicy` decides the rounds across `RETRY_TOPIC`): exponential backoff with full jitter, a cap, a budget
/// of attempts, and a smaller budget for 21002 (usually a truly malformed receipt). The submission's deadline is the
/// caller's, not part of the policy. Pure: time and randomness come in as arguments, so tests are exact.
public struct AppleCallRetryPolicy: Sendable, Equatable {
    /// Backend attempts per verification, the first included (an attempt = one call plus its environment redirect).
    public var maxAttempts: Int
    /// Attempts that may end in 21002 before the receipt is judged `invalid_receipt`.
    public var malformedReceiptMaxAttempts: Int
    /// The backoff ceiling before retry n is `min(maxDelay, baseDelay * 2^(n-1))` (the shared `Backoff` after n
    /// failures); the delay is uniform below it.
    public var baseDelayMs: Int
    public var maxDelayMs: Int

    public init(
        maxAttempts: Int = 4, malformedReceiptMaxAttempts: Int = 3, baseDelayMs: Int = 250, maxDelayMs: Int = 5_000
    ) {
        precondition(maxAttempts >= 1 && malformedReceiptMaxAttempts >= 1, "a verification makes at least one attempt")
        precondition(baseDelayMs >= 0 && maxDelayMs >= baseDelayMs, "0 <= baseDelayMs <= maxDelayMs")
        self.maxAttempts = maxAttempts
        self.malformedReceiptMaxAttempts = malformedReceiptMaxAttempts
        self.baseDelayMs = baseDelayMs
        self.maxDelayMs = maxDelayMs
    }

    /// The delay before retry number `retry` (1 = the first retry), given `unitRandom` in [0, 1): "full jitter".
    public func delayMs(beforeRetry retry: Int, unitRandom: Double) -> Int {
        precondition(retry >= 1, "retries are numbered from 1")
        let backoff = Backoff(initial: .milliseconds(baseDelayMs), maximum: .milliseconds(maxDelayMs))
        let ceiling = Double(backoff.wait(afterFailures: retry).clampedMilliseconds)
        let fraction = min(max(unitRandom, 0), 0.999_999_999)
        return Int((ceiling * fraction).rounded(.down))
    }

    /// What to do after an attempt that may be retried.
    public enum Decision: Sendable, Equatable {
        case retry(afterMs: Int)
        /// The attempt budget (of its kind) is spent.
        case giveUp
        /// The next attempt could not finish before the deadline.
        case deadlineTooClose
    }

    /// - Parameters:
    ///   - attemptsMade: attempts so far, the failed one included.
    ///   - malformedAttempts: how many of them ended in 21002.
    ///   - kind: the failed attempt's retry kind.
    ///   - remainingMs: milliseconds left until the submission's deadline.
    ///   - minimumAttemptMs: the least time an attempt needs to be worth starting.
    public func decide(
        attemptsMade: Int, malformedAttempts: Int, kind: StatusClassification.RetryKind, remainingMs: Int,
        minimumAttemptMs: Int, unitRandom: Double
    ) -> Decision {
        if attemptsMade >= maxAttempts { return .giveUp }
        if kind == .malformedReceipt, malformedAttempts >= malformedReceiptMaxAttempts { return .giveUp }
        let delay = delayMs(beforeRetry: attemptsMade, unitRandom: unitRandom)
        if remainingMs - delay < minimumAttemptMs { return .deadlineTooClose }
        return .retry(afterMs: delay)
    }
}
