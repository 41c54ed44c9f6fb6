import ReceiptModel

/// How a verification ended: a verdict, no verdict in time, or a configuration error.
public enum VerificationOutcome: Sendable, Equatable {
    /// Apple answered and the verdict rules decided: `verified`, or `rejected` with a reason.
    case verdict(ReceiptVerdict)
    /// No verdict within the deadline or retry budget (`apple_unavailable`); the submission may be retried later.
    case unavailable(VerificationFailure)
    /// Apple says our request or shared secret is wrong (21000, 21004: `config_error`); retrying will not help.
    case configurationError(VerificationFailure)

    /// Apple calls made.
    public var attempts: Int {
        switch self {
        case .verdict(let verdict): verdict.attempts
        case .unavailable(let failure), .configurationError(let failure): failure.attempts
        }
    }

    /// The result message for `submission` (echoing its ids).
    public func result(for submission: Submission, verifiedAtMs: Int64) -> VerificationResult {
        switch self {
        case .verdict(let verdict):
            VerificationResult(
                submissionId: submission.submissionId, orderId: submission.orderId, userId: submission.userId,
                clientId: submission.clientId, outcome: verdict.outcome, reason: verdict.reason,
                source: verdict.source, message: verdict.message, appleStatus: verdict.appleStatus,
                environment: verdict.environment, bundleId: verdict.bundleId, transactions: verdict.transactions,
                appTransaction: verdict.appTransaction, attempts: verdict.attempts, verifiedAtMs: verifiedAtMs)
        case .unavailable(let failure), .configurationError(let failure):
            VerificationResult(
                submissionId: submission.submissionId, orderId: submission.orderId, userId: submission.userId,
                clientId: submission.clientId, outcome: .failed, reason: failure.reason, source: failure.source,
                message: failure.message, appleStatus: failure.appleStatus, environment: failure.environment,
                bundleId: nil, transactions: [], attempts: failure.attempts, verifiedAtMs: verifiedAtMs)
        }
    }
}

/// A final verdict on a receipt.
public struct ReceiptVerdict: Sendable, Equatable {
    /// `.verified` or `.rejected`.
    public var outcome: Outcome
    /// Nil when verified.
    public var reason: Reason?
    public var message: String?
    /// The last `status` Apple returned.
    public var appleStatus: Int?
    /// The environment that answered (nil for a rejection Apple gave without naming one).
    public var environment: AppStoreEnvironment?
    public var bundleId: String?
    /// The expected transaction when one was named, else every `in_app` transaction (see `VerdictRules`).
    public var transactions: [VerifiedTransaction]
    public var attempts: Int
    /// What the verdict rests on.
    public var source: VerificationSource
    /// A verified `signed_app_transaction`'s app transaction (`AppTransactionRules`); nil for every other proof.
    public var appTransaction: VerifiedAppTransaction?

    public init(
        outcome: Outcome, reason: Reason?, message: String?, appleStatus: Int?, environment: AppStoreEnvironment?,
        bundleId: String?, transactions: [VerifiedTransaction], attempts: Int,
        source: VerificationSource = .verifyReceipt, appTransaction: VerifiedAppTransaction? = nil
    ) {
        self.appTransaction = appTransaction
        self.source = source
        self.outcome = outcome
        self.reason = reason
        self.message = message
        self.appleStatus = appleStatus
        self.environment = environment
        self.bundleId = bundleId
        self.transactions = transactions
        self.attempts = attempts
    }
}

/// Why no verdict was reached.
public struct VerificationFailure: Sendable, Equatable {
    /// `apple_unavailable` or `config_error`.
    public var reason: Reason
    /// The last problem seen (HTTP status, transport error, Apple status), for the result's `message`.
    public var message: String
    /// The last `status` Apple returned, when any body carried one.
    public var appleStatus: Int?
    public var environment: AppStoreEnvironment?
    public var attempts: Int
    /// The backend that was asked.
    public var source: VerificationSource
    /// True when the round ended only because the App Store Server API's rate limit held it back (a 429, or our
    /// hold after one): the verifier does not count such a round against the submission, so a 429 becomes lag,
    /// never a failed result.
    public var rateLimited: Bool

    public init(
        reason: Reason, message: String, appleStatus: Int?, environment: AppStoreEnvironment?, attempts: Int,
        source: VerificationSource = .verifyReceipt, rateLimited: Bool = false
    ) {
        self.source = source
        self.rateLimited = rateLimited
        self.reason = reason
        self.message = message
        self.appleStatus = appleStatus
        self.environment = environment
        self.attempts = attempts
    }
}
