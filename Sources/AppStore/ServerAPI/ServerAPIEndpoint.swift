/// The App Store Server API endpoints this project calls. Apple's rate limits are per app and per endpoint, so
/// pacing and 429 hold-backs are kept per endpoint (and environment).
public enum ServerAPIEndpoint: String, Sendable, Hashable, CaseIterable {
    /// Get Transaction Info: `GET /inApps/v1/transactions/{transactionId}` (50 requests/s in production).
    case transactionInfo = "transaction_info"
    /// Get Transaction History v2: `GET /inApps/v2/history/{transactionId}` (50 requests/s in production).
    case transactionHistory = "transaction_history"
    /// Get Notification History: `POST /inApps/v1/notifications/history` (50 requests/s in production).
    case notificationHistory = "notification_history"

    /// Apple's published production limit for this endpoint, requests per second per app ("Identifying rate
    /// limits"; the sandbox allows a tenth).
    public var publishedProductionLimitPerSecond: Double {
        switch self {
        case .transactionInfo, .transactionHistory, .notificationHistory: 50
        }
    }
}
