import Dispatch
import ReceiptModel

/// One way of asking Apple about a receipt. verifyReceipt (`VerifyReceiptBackend`) is one; the App Store Server API
/// can stand beside it. A backend makes one *attempt* — including any environment redirect — and never retries:
/// retries, deadlines and verdicts belong to `ReceiptVerifier`, identical for every backend.
public protocol ReceiptVerificationBackend: Sendable {
    /// Asks Apple once. `completion` is called exactly once, on any thread.
    func verify(_ request: BackendRequest, completion: @escaping @Sendable (BackendAnswer) -> Void)

    /// Releases network resources; requests still in flight complete as retryable failures. Idempotent.
    func close()

    /// What a verdict on `proof` from this backend rests on (results name it as `source`).
    func source(for proof: PurchaseProof) -> VerificationSource
}

extension ReceiptVerificationBackend {
    public func close() {}

    public func source(for proof: PurchaseProof) -> VerificationSource { .verifyReceipt }
}

/// The input of one backend attempt.
public struct BackendRequest: Sendable {
    /// What to ask Apple about, normalized (see `Submission.decodeValidated`).
    public var proof: PurchaseProof
    /// Where to ask first: production, unless an earlier attempt learned the receipt is from the sandbox.
    public var startEnvironment: AppStoreEnvironment
    /// The longest any single HTTP call of this attempt may take (the submission's remaining time, capped by the
    /// configured request timeout). Nil: the configured timeout.
    public var timeoutMs: Int?
    /// When the whole attempt must be over, on the `DispatchTime.now()` clock: a call after a 21007/21008 redirect
    /// gets only the time left (capped by `timeoutMs`), and is not made with less than the minimum attempt time
    /// left (the attempt is then retryable). Nil: each call gets `timeoutMs`.
    public var deadline: DispatchTime?
    /// What the submission says it bought. Backends may use it to ask Apple less (stop paging a history once the
    /// expected transaction is found); the verdict itself is always `VerdictRules`' (nil: no expectations).
    public var expectations: VerificationExpectations?

    public init(
        proof: PurchaseProof, startEnvironment: AppStoreEnvironment = .production, timeoutMs: Int? = nil,
        deadline: DispatchTime? = nil, expectations: VerificationExpectations? = nil
    ) {
        self.proof = proof
        self.startEnvironment = startEnvironment
        self.timeoutMs = timeoutMs
        self.deadline = deadline
        self.expectations = expectations
    }

    /// A request about a base64 app receipt.
    public init(
        receiptData: String, startEnvironment: AppStoreEnvironment = .production, timeoutMs: Int? = nil,
        deadline: DispatchTime? = nil
    ) {
        self.init(
            proof: .receipt(receiptData), startEnvironment: startEnvironment, timeoutMs: timeoutMs, deadline: deadline)
    }
}

/// What one backend attempt produced.
public struct BackendAnswer: Sendable, Equatable {
    public enum Result: Sendable, Equatable {
        /// Apple accepted the receipt: judge it with `VerdictRules`.
        case receipt(AppleReceipt)
        /// Apple's signature vouches for an app transaction (and Apple confirmed it, when asked): judge it with
        /// `AppTransactionRules`.
        case appTransaction(VerifiedAppTransaction)
        /// No answer usable now (5xx, timeout, retryable status...): may be retried.
        case retryable(StatusClassification.RetryKind)
        /// A permanent no from Apple.
        case rejected(Reason)
        /// Our configuration is wrong (21000, 21004; an App Store Server API 401 or request error).
        case configurationError
    }

    public var result: Result
    /// What the answer rests on (the backend that gave it).
    public var source: VerificationSource
    /// HTTP calls made in this attempt (2 after a redirect).
    public var calls: Int
    /// The last `status` Apple returned, when a body with one was received.
    public var appleStatus: Int?
    /// The environment whose endpoint gave the last answer: where the proof lives, so where retries start.
    public var environment: AppStoreEnvironment?
    /// The environment Apple's answer names (verifyReceipt's `environment`), else the endpoint's; nil without an
    /// answer from Apple. What results say (a `.receipt` carries it as `AppleReceipt.environment`).
    public var appleEnvironment: AppStoreEnvironment?
    /// What happened, for results and logs (never receipt contents or secrets).
    public var message: String?
    /// With `.retryable(.rateLimited)`: milliseconds until Apple may be asked again (nil: unknown).
    public var retryAfterMs: Int?

    public init(
        result: Result, source: VerificationSource = .verifyReceipt, calls: Int, appleStatus: Int? = nil,
        environment: AppStoreEnvironment? = nil, appleEnvironment: AppStoreEnvironment? = nil, message: String? = nil,
        retryAfterMs: Int? = nil
    ) {
        self.result = result
        self.source = source
        self.calls = calls
        self.appleStatus = appleStatus
        self.environment = environment
        self.appleEnvironment = appleEnvironment
        self.message = message
        self.retryAfterMs = retryAfterMs
    }

    /// The environment a result of this answer names: Apple's word when Apple gave one, else the endpoint's.
    public var resultEnvironment: AppStoreEnvironment? { appleEnvironment ?? environment }
}
