/// One page of Get Refund History v2, as the reconciliation sweep needs it.
public struct RefundHistoryPage: Sendable, Equatable {
    /// Apple's `signedTransactions`, unverified (the sweep verifies each).
    public var signedTransactions: [String]
    public var hasMore: Bool
    /// Pass it back for the next page.
    public var revision: String?
    /// Server API requests the page took (retries included).
    public var calls: Int

    public init(signedTransactions: [String], hasMore: Bool, revision: String?, calls: Int = 1) {
        self.signedTransactions = signedTransactions
        self.hasMore = hasMore
        self.revision = revision
        self.calls = calls
    }
}

/// Why a refund history page is missing.
public enum RefundHistoryFailure: Error, Sendable, Equatable {
    /// Apple does not know the transaction in this environment (4040010): nothing to compare.
    case notFound(calls: Int)
    /// Anything else (after the retries): the sweep stops, the purchase waits for the next one.
    case failed(String, calls: Int)

    public var calls: Int {
        switch self {
        case .notFound(let calls), .failed(_, let calls): calls
        }
    }
}

/// Where the sweep reads refunds from: the App Store Server API's Get Refund History in production
/// (`ServerAPIHistory`), a fake in tests.
public protocol RefundHistoryPaging: Sendable {
    /// The page after `revision` (nil: the first) of the refunds of the customer who made `transactionId`.
    func page(transactionId: String, revision: String?) async -> Result<RefundHistoryPage, RefundHistoryFailure>
}
