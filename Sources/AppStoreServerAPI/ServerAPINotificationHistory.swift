import Dispatch
import ReceiptModel
import ServiceSupport

/// Get Notification History through the App Store Server API client, for one app and environment. Rate limits
/// (429) are waited out and transient failures (5xx, timeouts) retried a few times before the backfill gives up.
public struct ServerAPINotificationHistory: NotificationHistoryPaging {
    public let client: AppStoreServerAPIClient
    public let bundleId: String
    public let environment: AppStoreEnvironment
    public let logger: Logger
    /// Attempts per page before giving up.
    public var maximumAttempts = 6
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
        let backoff = Backoff(initial: .seconds(1), maximum: .milliseconds(maximumWaitMs))
        var calls = 0
        for attempt in 1...maximumAttempts {
            let answer = await client.notificationHistoryPage(
                request, paginationToken: paginationToken, bundleId: bundleId, environment: environment,
                deadline: .now() + .seconds(120))
            calls += answer.calls
            switch answer.result {
            case .success(let response):
                return .success(
                    NotificationHistoryPage(
                        signedPayloads: response.notificationHistory.map(\.signedPayload), hasMore: response.hasMore,
                        paginationToken: response.paginationToken, calls: calls))
            case .failure(let error) where attempt < maximumAttempts
                && (error.kind == .rateLimited || error.kind == .retryable):
                let delay = min(
                    error.retryAfterMs ?? Int(backoff.wait(afterFailures: attempt).clampedMilliseconds), maximumWaitMs)
                logger.warning(
                    "Get Notification History failed, retrying",
                    [
                        "attempt": .int(attempt), "wait_ms": .int(delay), "http_status": .int(error.httpStatus ?? 0),
                        "error_code": .int(error.errorCode ?? 0), "error": .string(error.message),
                    ])
                try? await Task.sleep(for: .milliseconds(delay))
            case .failure(let error):
                return .failure(NotificationHistoryError("Get Notification History (\(environment.rawValue)) failed: \(error)", calls: calls))
            }
        }
        return .failure(NotificationHistoryError("Get Notification History did not answer after \(maximumAttempts) attempts", calls: calls))
    }
}
