import ServiceSupport

/// How many rounds of Apple attempts a submission gets and how long to wait between them (the verifier's layer, across
/// `RETRY_TOPIC`; the calls within one round follow AppStore's `AppleCallRetryPolicy`).
///
/// Round 1 runs when the submission is first consumed; each later round runs from a `RetryRecord` on `RETRY_TOPIC`
/// once its `not_before_ms` has passed. When round `maximumRounds` ends without a verdict the submission fails with
/// `apple_unavailable` (DLQ record plus result). The wait after round `n` is `initialBackoff * 2^(n-1)`, capped: the
/// shared `Backoff`, each round without a verdict counted as one failure.
struct RetryRoundPolicy: Sendable, Equatable {
    var maximumRounds: Int
    var initialBackoff: Duration
    var maximumBackoff: Duration

    init(
        maximumRounds: Int = 6, initialBackoff: Duration = .seconds(30), maximumBackoff: Duration = .seconds(600)
    ) {
        precondition(maximumRounds >= 1)
        self.maximumRounds = maximumRounds
        self.initialBackoff = initialBackoff
        self.maximumBackoff = maximumBackoff
    }

    /// The waits between rounds (never above `maximumBackoff`, even when `initialBackoff` is).
    var backoff: Backoff {
        Backoff(initial: min(initialBackoff, maximumBackoff), maximum: maximumBackoff)
    }

    /// The wait before the round after `completedRounds` rounds (>= 1).
    func backoff(afterRound completedRounds: Int) -> Duration {
        backoff.wait(afterFailures: completedRounds)
    }

    /// Total wait between the first and the last round: an Apple outage shorter than this yields no `failed` result.
    var horizon: Duration {
        let backoff = backoff
        return (1..<maximumRounds).reduce(Duration.zero) { $0 + backoff.wait(afterFailures: $1) }
    }
}
