import Dispatch
import ReceiptModel

/// One way of asking Apple about a receipt. verifyReceipt (`VerifyReceiptBackend`) is one; the App Store Server API
/// can stand beside it. A backend makes one *attempt* — including any environment redirect — and never retries:
/// retries, deadlines and verdicts belong to `ReceiptVerifier`, identical for every backend.
public protocol ReceiptVerificationBackend: Sendable {
    /// Asks Apple once. `completion` is called exactly once, on any thread.
    func verify(_ request: BackendRequest, completion: @escaping @Sendable (BackendAnswer) -> Void)

    /// Releases network resources; requests still in flight complete as retryable failures. Idempotent.
    func shutdown()
}

extension ReceiptVerificationBackend {
    public func shutdown() {}
}

/// The input of one backend attempt.
public struct BackendRequest: Sendable {
    /// Base64 app receipt, one line (see `ReceiptData.normalize`).
    public var receiptData: String
    /// Where to ask first: production, unless an earlier attempt learned the receipt is from the sandbox.
    public var startEnvironment: AppStoreEnvironment
    /// The longest any single HTTP call of this attempt may take (the submission's remaining time, capped by the
    /// configured request timeout). Nil: the configured timeout.
    public var timeoutMs: Int?
    /// When the whole attempt must be over, on the `DispatchTime.now()` clock: a call after a 21007/21008 redirect
    /// gets only the time left (capped by `timeoutMs`), and is not made with less than the minimum attempt time
    /// left (the attempt is then retryable). Nil: each call gets `timeoutMs`.
    public var deadline: DispatchTime?

    public init(
        receiptData: String, startEnvironment: AppStoreEnvironment = .production, timeoutMs: Int? = nil,
        deadline: DispatchTime? = nil
    ) {
        self.receiptData = receiptData
        self.startEnvironment = startEnvironment
        self.timeoutMs = timeoutMs
        self.deadline = deadline
    }
}

/// What one backend attempt produced.
public struct BackendAnswer: Sendable, Equatable {
    public enum Result: Sendable, Equatable {
        /// Apple accepted the receipt: judge it with `VerdictRules`.
        case receipt(AppleReceipt)
        /// No answer usable now (5xx, timeout, retryable status...): may be retried.
        case retryable(StatusClassification.RetryKind)
        /// A permanent no from Apple.
        case rejected(Reason)
        /// Our configuration is wrong (21000, 21004).
        case configurationError
    }

    public var result: Result
    /// HTTP calls made in this attempt (2 after a redirect).
    public var calls: Int
    /// The last `status` Apple returned, when a body with one was received.
    public var appleStatus: Int?
    /// The environment whose endpoint gave the last answer.
    public var environment: AppStoreEnvironment?
    /// What happened, for results and logs (never receipt contents or secrets).
    public var message: String?

    public init(
        result: Result, calls: Int, appleStatus: Int? = nil, environment: AppStoreEnvironment? = nil,
        message: String? = nil
    ) {
        self.result = result
        self.calls = calls
        self.appleStatus = appleStatus
        self.environment = environment
        self.message = message
    }
}
