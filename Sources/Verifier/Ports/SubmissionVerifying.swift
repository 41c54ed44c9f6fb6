import AppStore
import ReceiptModel

extension VerificationOutcome {
    /// Whether Apple answered at all (what the circuit breaker counts as a success): a verdict or a configuration
    /// error is an answer; no verdict in time is not.
    var appleAnswered: Bool {
        if case .unavailable = self { return false }
        return true
    }
}

/// Runs one round of verification of a submission at Apple: production first, sandbox when Apple says so,
/// in-process retries within the round's deadline (the App Store client's policy). A round ends in a verdict (the
/// result), no verdict in time (retried in a later round) or a configuration error (never retried: a `failed` /
/// `config_error` result and a DLQ record).
protocol SubmissionVerifying: Sendable {
    /// `completion` is called exactly once, on any thread.
    func verify(_ submission: Submission, completion: @escaping @Sendable (VerificationOutcome) -> Void)
}
