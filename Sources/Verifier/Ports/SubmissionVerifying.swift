import AppStore
import ReceiptModel

/// Apple's final word on a submission, checks applied (bundle ids, sandbox policy, expected transaction): the App
/// Store client's verdict, whatever backend produced it. `attempts` counts the Apple calls of this round.
public typealias AppleVerdict = ReceiptVerdict

/// How one round of Apple attempts for a submission ended.
public enum VerificationRoundOutcome: Sendable, Equatable {
    /// A final verdict: becomes the result.
    case verdict(AppleVerdict)
    /// No verdict within the round's deadline (timeouts, HTTP 5xx, retryable statuses): retried in a later round.
    case unavailable(lastAppleStatus: Int?, lastError: String, attempts: Int)
    /// Our own configuration is wrong (21004 shared secret, 21000 request unreadable): never retried; operators
    /// must act. Becomes a `failed` / `config_error` result and a DLQ record.
    case configurationError(appleStatus: Int?, message: String, attempts: Int)

    /// Whether Apple answered at all (what the circuit breaker counts as a success).
    public var appleAnswered: Bool {
        if case .unavailable = self { return false }
        return true
    }

    public var attempts: Int {
        switch self {
        case .verdict(let verdict): verdict.attempts
        case .unavailable(_, _, let attempts), .configurationError(_, _, let attempts): attempts
        }
    }
}

/// Runs one round of verification of a submission at Apple: production first, sandbox on 21007, in-process retries
/// within the round's deadline (the App Store client's policy).
public protocol SubmissionVerifying: Sendable {
    /// `completion` is called exactly once, on any thread.
    func verify(_ submission: Submission, completion: @escaping @Sendable (VerificationRoundOutcome) -> Void)
}
