/// A Server Notification V2 `subtype`. Unknown values are kept as they are.
public struct NotificationSubtype: OpenStringEnum {
    public let rawValue: String

    public init(rawValue: String) { self.rawValue = rawValue }

    public static let initialBuy = NotificationSubtype(rawValue: "INITIAL_BUY")
    public static let resubscribe = NotificationSubtype(rawValue: "RESUBSCRIBE")
    public static let downgrade = NotificationSubtype(rawValue: "DOWNGRADE")
    public static let upgrade = NotificationSubtype(rawValue: "UPGRADE")
    public static let autoRenewEnabled = NotificationSubtype(rawValue: "AUTO_RENEW_ENABLED")
    public static let autoRenewDisabled = NotificationSubtype(rawValue: "AUTO_RENEW_DISABLED")
    public static let voluntary = NotificationSubtype(rawValue: "VOLUNTARY")
    public static let billingRetry = NotificationSubtype(rawValue: "BILLING_RETRY")
    public static let priceIncrease = NotificationSubtype(rawValue: "PRICE_INCREASE")
    public static let gracePeriod = NotificationSubtype(rawValue: "GRACE_PERIOD")
    public static let pending = NotificationSubtype(rawValue: "PENDING")
    public static let accepted = NotificationSubtype(rawValue: "ACCEPTED")
    public static let billingRecovery = NotificationSubtype(rawValue: "BILLING_RECOVERY")
    public static let productNotForSale = NotificationSubtype(rawValue: "PRODUCT_NOT_FOR_SALE")
    public static let summary = NotificationSubtype(rawValue: "SUMMARY")
    public static let failure = NotificationSubtype(rawValue: "FAILURE")
    public static let unreported = NotificationSubtype(rawValue: "UNREPORTED")
    /// `EXTERNAL_PURCHASE_TOKEN`: a token is still active and must be reported (External Purchase API).
    public static let activeTokenReminder = NotificationSubtype(rawValue: "ACTIVE_TOKEN_REMINDER")
    /// `EXTERNAL_PURCHASE_TOKEN`: a token was created (External Purchase API).
    public static let created = NotificationSubtype(rawValue: "CREATED")
}
