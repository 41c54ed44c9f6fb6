import Dispatch
import ReceiptModel
import ServiceSupport

/// Get Notification History (the backfill, the reconciliation sweep) and Get Refund History (the sweep) through the
/// App Store Server API client, for one app and environment, a page at a time. Rate limits (429) are waited out and
/// transient failures (5xx, timeouts) retried a few times before the caller gives up, each request counted (a call
/// budget counts them).
public struct ServerAPIHistory: NotificationHistoryPaging, RefundHistoryPaging {
    public let client: AppStoreServerAPIClient
    public let bundleId: String
    public let environment: AppStoreEnvironment
    public let logger: Logger
    /// Attempts per Get Notification History page before giving up.
    public var notificationAttempts = 6
    /// Attempts per Get Refund History page before giving up.
    public var refundAttempts = 4
    /// The longest single wait (for a 429's Retry-After or a backoff).
    public var maximumWaitMs = 60_000

    public init(client: AppStoreServerAPIClient, bundleId: String, environment: AppStoreEnvironment, logger: Logger) {
        self.client = client
        self.bundleId = bundleId
        self.environment = environment
        self.logger = logger
    }

    public func page(startMs: Int64, endMs: Int64, onlyFailures: Bool, paginationToken: String?) async
        -> Result<NotificationHistoryPage, NotificationHistoryError>
    {
        let request = NotificationHistoryRequest(
            startDate: startMs, endDate: endMs, onlyFailures: onlyFailures ? true : nil)
        let (result, calls) = await retrying("Get Notification History", attempts: notificationAttempts) {
            await client.notificationHistoryPage(
                request, paginationToken: paginationToken, bundleId: bundleId, environment: environment,
                deadline: .now() + .seconds(120))
        }
        switch result {
        case .success(let response):
            return .success(
                NotificationHistoryPage(
                    signedPayloads: response.notificationHistory.map(\.signedPayload), hasMore: response.hasMore,
                    paginationToken: response.paginationToken, calls: calls))
        case .failure(let error):
            return .failure(
                NotificationHistoryError(
                    "Get Notification History (\(environment.rawValue)) failed: \(error)", calls: calls))
        }
    }

    public func page(transactionId: String, revision: String?) async
        -> Result<RefundHistoryPage, RefundHistoryFailure>
    {
        let (result, calls) = await retrying("Get Refund History", attempts: refundAttempts) {
            await client.refundHistoryPage(
                transactionId: transactionId, bundleId: bundleId, environment: environment, revision: revision,
                deadline: .now() + .seconds(120))
        }
        switch result {
        case .success(let response):
            return .success(
                RefundHistoryPage(
                    signedTransactions: response.signedTransactions, hasMore: response.hasMore,
                    revision: response.revision, calls: calls))
        case .failure(let error) where error.kind == .notFound:
            return .failure(.notFound(calls: calls))
        case .failure(let error):
            return .failure(.failed("Get Refund History (\(environment.rawValue)) failed: \(error)", calls: calls))
        }
    }

    /// `call` until it answers, at most `attempts` times: a 429 or a transient failure is waited out (its
    /// `Retry-After`, else 1 s doubling, never above `maximumWaitMs`) and logged; anything else, and the last
    /// attempt's failure, is the result. `calls` counts every request made.
    private func retrying<Value: Sendable>(
        _ name: String, attempts: Int, _ call: () async -> AppStoreServerAPIClient.Answer<Value>
    ) async -> (result: Result<Value, ServerAPIError>, calls: Int) {
        let backoff = Backoff(initial: .seconds(1), maximum: .milliseconds(maximumWaitMs))
        var calls = 0
        var attempt = 1
        while true {
            let answer = await call()
            calls += answer.calls
            guard case .failure(let error) = answer.result, attempt < attempts,
                error.kind == .rateLimited || error.kind == .retryable
            else { return (answer.result, calls) }
            let delay = min(
                error.retryAfterMs ?? Int(backoff.wait(afterFailures: attempt).clampedMilliseconds), maximumWaitMs)
            logger.warning(
                "\(name) failed, retrying",
                [
                    "attempt": .int(attempt), "wait_ms": .int(delay), "http_status": .int(error.httpStatus ?? 0),
                    "error_code": .int(error.errorCode ?? 0), "error": .string(error.message),
                ])
            try? await Task.sleep(for: .milliseconds(delay))
            attempt += 1
        }
    }
}
