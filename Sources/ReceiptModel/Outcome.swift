/// The verdict class of a result message (`outcome`).
public enum Outcome: String, Codable, Sendable, CaseIterable {
    /// Apple and every check agree: the transactions may be credited.
    case verified
    /// A permanent no: resubmitting the same receipt will not change it.
    case rejected
    /// No verdict could be reached; the submission is also on the DLQ for replay.
    case failed
}

/// Why a result is not `verified` (`reason`). The raw values are part of the contract: never rename them.
public enum Reason: String, Codable, Sendable, CaseIterable {
    case invalidReceipt = "invalid_receipt"
    case bundleMismatch = "bundle_mismatch"
    case transactionNotFound = "transaction_not_found"
    case productMismatch = "product_mismatch"
    case refunded
    case noPurchases = "no_purchases"
    case sandboxNotAllowed = "sandbox_not_allowed"
    case malformedSubmission = "malformed_submission"
    case appleUnavailable = "apple_unavailable"
    case configError = "config_error"

    /// The outcome a result with this reason carries: a permanent no, or no verdict at all.
    public var outcome: Outcome {
        switch self {
        case .invalidReceipt, .bundleMismatch, .transactionNotFound, .productMismatch, .refunded, .noPurchases,
            .sandboxNotAllowed:
            .rejected
        case .malformedSubmission, .appleUnavailable, .configError:
            .failed
        }
    }
}

/// The App Store environment that produced a verdict (`environment`).
public enum AppStoreEnvironment: String, Codable, Sendable, CaseIterable {
    case production = "Production"
    case sandbox = "Sandbox"
}
