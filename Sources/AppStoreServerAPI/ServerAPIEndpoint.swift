/// The App Store Server API endpoints this project calls. Apple's rate limits are per app and per endpoint, so
/// pacing and 429 hold-backs are kept per endpoint (and environment).
public enum ServerAPIEndpoint: String, Sendable, Hashable, CaseIterable {
    /// Get Transaction Info: `GET /inApps/v1/transactions/{transactionId}` (50 requests/s in production).
    case transactionInfo = "transaction_info"
    /// Get Transaction History v2: `GET /inApps/v2/history/{transactionId}` (50 requests/s in production).
    case transactionHistory = "transaction_history"
    /// Get Notification History: `POST /inApps/v1/notifications/history` (50 requests/s in production).
    case notificationHistory = "notification_history"
    /// Send Consumption Information v2: `PUT /inApps/v2/transactions/consumption/{transactionId}` (50/s).
    case consumptionInformation = "consumption_information"
    /// Get Refund History v2: `GET /inApps/v2/refund/lookup/{transactionId}` (10/s).
    case refundHistory = "refund_history"
    /// Look Up Order ID: `GET /inApps/v1/lookup/{orderId}` (10/s).
    case orderLookup = "order_lookup"
    /// Get All Subscription Statuses: `GET /inApps/v1/subscriptions/{transactionId}` (50/s).
    case subscriptionStatuses = "subscription_statuses"
    /// Set App Account Token: `PUT /inApps/v1/transactions/{originalTransactionId}/appAccountToken` (20/s).
    case setAppAccountToken = "set_app_account_token"
    /// Extend a Subscription Renewal Date: `PUT /inApps/v1/subscriptions/extend/{originalTransactionId}`, and the
    /// mass extension and its status (`/inApps/v1/subscriptions/extend/mass`) (20/s).
    case extendRenewal = "extend_renewal"
    /// Request a Test Notification and Get Test Notification Status (`/inApps/v1/notifications/test`) (1/s).
    case testNotification = "test_notification"
    /// Get App Transaction Info: `GET /inApps/v1/transactions/appTransactions/{transactionId}` (50/s).
    case appTransactionInfo = "app_transaction_info"
    /// Finish Transaction (API 1.20): `POST /inApps/v1/transactions/{transactionId}/finish` (50/s).
    case finishTransaction = "finish_transaction"

    /// Apple's published production limit for this endpoint, requests per second per app ("Identifying rate
    /// limits"; the sandbox allows a tenth). A process never paces an endpoint faster than this, whatever
    /// `APPLE_SERVER_API_MAX_RPS` says.
    public var publishedProductionLimitPerSecond: Double {
        switch self {
        case .transactionInfo, .transactionHistory, .notificationHistory, .consumptionInformation,
            .subscriptionStatuses, .appTransactionInfo, .finishTransaction:
            50
        case .setAppAccountToken, .extendRenewal: 20
        case .refundHistory, .orderLookup: 10
        case .testNotification: 1
        }
    }
}
