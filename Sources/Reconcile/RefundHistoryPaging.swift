import AppStoreServerAPI
import Dispatch
import ReceiptModel
import ServiceSupport

/// One page of Get Refund History v2, as the sweep needs it.
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

/// Where the sweep reads refunds from: the App Store Server API's Get Refund History in production, a fake in tests.
public protocol RefundHistoryPaging: Sendable {
    /// The page after `revision` (nil: the first) of the refunds of the customer who made `transactionId`.
    func page(transactionId: String, revision: String?) async -> Result<RefundHistoryPage, RefundHistoryFailure>
}

/// Get Refund History through the App Store Server API client, for one app and environment. Rate limits (429) are
/// waited out and transient failures retried a few times, each request counted.
public struct ServerAPIRefundHistory: RefundHistoryPaging {
    public let client: AppStoreServerAPIClient
    public let bundleId: String
    public let environment: AppStoreEnvironment
    public let logger: Logger
    public var maximumAttempts = 4
    public var maximumWaitMs = 60_000

    public init(client: AppStoreServerAPIClient, bundleId: String, environment: AppStoreEnvironment, logger: Logger) {
        self.client = client
        self.bundleId = bundleId
        self.environment = environment
        self.logger = logger
    }

    public func page(transactionId: String, revision: String?) async
        -> Result<RefundHistoryPage, RefundHistoryFailure>
    {
        var waitMs = 1_000
        var calls = 0
        for attempt in 1...maximumAttempts {
            let answer = await client.refundHistoryPage(
                transactionId: transactionId, bundleId: bundleId, environment: environment, revision: revision,
                deadline: .now() + .seconds(120))
            calls += answer.calls
            switch answer.result {
            case .success(let response):
                return .success(
                    RefundHistoryPage(
                        signedTransactions: response.signedTransactions, hasMore: response.hasMore,
                        revision: response.revision, calls: calls))
            case .failure(let error) where error.kind == .notFound:
                return .failure(.notFound(calls: calls))
            case .failure(let error) where attempt < maximumAttempts
                && (error.kind == .rateLimited || error.kind == .retryable):
                let delay = min(error.retryAfterMs ?? waitMs, maximumWaitMs)
                logger.warning(
                    "Get Refund History failed, retrying",
                    [
                        "attempt": .int(attempt), "wait_ms": .int(delay), "http_status": .int(error.httpStatus ?? 0),
                        "error_code": .int(error.errorCode ?? 0), "error": .string(error.message),
                    ])
                try? await Task.sleep(for: .milliseconds(delay))
                waitMs = min(waitMs * 2, maximumWaitMs)
            case .failure(let error):
                return .failure(.failed("Get Refund History (\(environment.rawValue)) failed: \(error)", calls: calls))
            }
        }
        return .failure(.failed("Get Refund History did not answer after \(maximumAttempts) attempts", calls: calls))
    }
}
