import ReceiptModel

/// What to do with one verifyReceipt exchange (an HTTP answer or a transport failure).
public enum StatusClassification: Sendable, Equatable {
    /// Valid (0, or 21006 for an expired iOS 6 subscription): evaluate the transactions.
    case success
    /// Wrong environment: resend the same body to `environment` (21007 -> sandbox, 21008 -> production).
    case redirect(to: AppStoreEnvironment)
    /// Apple could not answer now; try again later.
    case retry(RetryKind)
    /// A permanent no (`invalid_receipt`).
    case permanent(Reason)
    /// Our configuration is wrong (21000 bad request, 21004 shared secret): retrying cannot help.
    case configurationError

    /// Retries are budgeted per kind: 21002 is usually a truly malformed receipt, so it gets only a few.
    public enum RetryKind: String, Sendable, Equatable {
        case transient
        /// 21002: malformed receipt-data, or one of Apple's bursts of spurious 21002s.
        case malformedReceipt = "malformed_receipt"
        /// The App Store Server API's rate limit: a 429, or our hold-back after one (no request made). Retried in
        /// the round only when the hold ends in time; a round that ends for it is not counted against the
        /// submission (lag, never a failed result).
        case rateLimited = "rate_limited"
    }

    /// The classification of Apple's `status` (reference table in `apple-verification.md`).
    /// - Parameter isRetryable: the body's `is_retryable` / `is-retryable`, consulted for 21100-21199.
    public static func of(status: Int, isRetryable: Bool?) -> StatusClassification {
        switch status {
        case 0, 21006: .success
        case 21000, 21004: .configurationError
        case 21001, 21003, 21010: .permanent(.invalidReceipt)
        case 21002: .retry(.malformedReceipt)
        case 21005, 21009: .retry(.transient)
        case 21007: .redirect(to: .sandbox)
        case 21008: .redirect(to: .production)
        case 21100...21199: isRetryable == true ? .retry(.transient) : .permanent(.invalidReceipt)
        // A status Apple never documented: no permanent "no" on something not understood; the retry budget bounds it.
        default: .retry(.transient)
        }
    }

    /// Every HTTP status but 200 (5xx outages, 429, gateway pages) is an answer from something other than
    /// verifyReceipt's logic, as are timeouts, connection and TLS failures: all are retried.
    public static func of(httpStatus: Int) -> StatusClassification? {
        (200...299).contains(httpStatus) ? nil : .retry(.transient)
    }
}
