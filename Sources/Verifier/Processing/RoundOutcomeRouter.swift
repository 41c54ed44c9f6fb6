import AppStore
import ReceiptModel
import ServiceSupport

/// What became of a submission after a round, for metrics and logs.
enum RoundDisposition: Sendable, Equatable {
    /// A verdict or a `failed` result was written (`failed` ones also go to the DLQ).
    case result(Outcome, Reason?)
    /// A retry record was written; `round` is the rounds counted so far.
    case retry(round: Int, notBeforeMs: Int64)
}

/// Turns the end of a round at Apple into output records.
///
/// - verdict: the result.
/// - config error (21004 / 21000): `failed` / `config_error` result plus DLQ record; never retried.
/// - no verdict: a retry record on `RETRY_TOPIC` with the round count, the attempts and a not-before time; after
///   the last round a DLQ record plus a `failed` / `apple_unavailable` result. While the circuit breaker is open
///   (Apple broadly failing), and when the round ended because of the App Store Server API's rate limit, the round
///   is not counted against the submission, so an outage or a 429 alone never makes a submission fail: it only
///   delays it.
struct RoundOutcomeRouter: Sendable {
    let factory: OutputFactory
    let policy: RetryRoundPolicy

    init(factory: OutputFactory, policy: RetryRoundPolicy) {
        self.factory = factory
        self.policy = policy
    }

    func route(
        _ outcome: VerificationOutcome, job: VerificationJob, breakerOpen: Bool, nowMs: Int64
    ) -> (records: [OutgoingRecord], disposition: RoundDisposition) {
        let submission = job.submission
        let totalAttempts = job.priorAttempts + outcome.attempts
        switch outcome {
        case .verdict(let verdict):
            return ([factory.verdictResult(verdict, job: job, nowMs: nowMs)], .result(verdict.outcome, verdict.reason))

        case .configurationError(let failure):
            return (
                self.failure(
                    job, reason: .configError, text: failure.message, appleStatus: failure.appleStatus,
                    source: failure.source, attempts: totalAttempts, nowMs: nowMs),
                .result(.failed, .configError)
            )

        case .unavailable(let failure):
            let status = failure.appleStatus
            let error = failure.message
            // Rounds while Apple is broadly failing, or cut short by the Server API's rate limit (a 429 or our
            // hold after one), are not counted against the submission: they only delay it.
            let uncounted = breakerOpen || failure.rateLimited
            let countedRounds = uncounted ? max(job.completedRounds, 1) : job.completedRounds + 1
            if countedRounds >= policy.maximumRounds, !uncounted {
                let text = "no verdict from Apple after \(countedRounds) rounds (\(totalAttempts) calls): \(error)"
                return (
                    self.failure(
                        job, reason: .appleUnavailable, text: text, appleStatus: status, source: failure.source,
                        attempts: totalAttempts, nowMs: nowMs),
                    .result(.failed, .appleUnavailable)
                )
            }
            let notBefore = nowMs + policy.backoff(afterRound: countedRounds).clampedMilliseconds
            let record = RetryRecord(
                submission: submission, round: countedRounds, attempts: totalAttempts, notBeforeMs: notBefore,
                lastAppleStatus: status, lastError: error, source: failure.source)
            return ([factory.retry(record, key: job.message.key)], .retry(round: countedRounds, notBeforeMs: notBefore))
        }
    }

    private func failure(
        _ job: VerificationJob, reason: Reason, text: String, appleStatus: Int?, source: VerificationSource,
        attempts: Int, nowMs: Int64
    ) -> [OutgoingRecord] {
        let submission = job.submission
        return [
            factory.deadLetter(
                message: job.message, submissionId: submission.submissionId, reason: reason, text: text,
                appleStatus: appleStatus, attempts: attempts, nowMs: nowMs),
            factory.failedResult(
                for: submission, reason: reason, source: source, message: text, appleStatus: appleStatus,
                attempts: attempts, key: job.message.key, nowMs: nowMs),
        ]
    }
}
