/// A `JWSRenewalInfoDecodedPayload` as the App Store writes it, for the fake's subscription notifications.
public struct FakeRenewalInfo: Sendable, Equatable {
    public var originalTransactionId: String
    public var productId: String
    public var autoRenewProductId: String
    /// 1 on, 0 off.
    public var autoRenewStatus: Int = 1
    /// 1 cancelled, 2 billing error, 3 price increase declined, 4 product unavailable, 5 other.
    public var expirationIntent: Int?
    public var gracePeriodExpiresDateMs: Int64?
    public var isInBillingRetryPeriod: Bool?
    public var environment: String
    public var signedDateMs: Int64
    public var renewalDateMs: Int64?
    /// The plan the next renewal bills under (2026 commitment plans: `BILLED_UPFRONT`, `MONTHLY`), written when set.
    public var renewalBillingPlanType: String?
    /// `appTransactionId` (2025), written when set.
    public var appTransactionId: String?
    /// What the next renewal costs, as Apple writes it in every auto-renewable subscription's renewal info:
    /// `renewalPrice` in milli-units of `currency`.
    public var renewalPrice: Int64 = 990
    public var currency: String = "USD"
    /// The offer of the next renewal (`offerType` 1...5, `offerIdentifier`), written when set.
    public var offerType: Int?
    public var offerIdentifier: String?

    public init(
        originalTransactionId: String, productId: String, environment: String, signedDateMs: Int64
    ) {
        self.originalTransactionId = originalTransactionId
        self.productId = productId
        self.autoRenewProductId = productId
        self.environment = environment
        self.signedDateMs = signedDateMs
    }

    /// The payload JSON.
    public var json: [UInt8] {
        var fields = FakeJSONObject()
        fields.string("originalTransactionId", originalTransactionId)
        fields.string("productId", productId)
        fields.string("autoRenewProductId", autoRenewProductId)
        fields.integer("autoRenewStatus", Int64(autoRenewStatus))
        fields.integer("expirationIntent", expirationIntent.map(Int64.init))
        fields.integer("gracePeriodExpiresDate", gracePeriodExpiresDateMs)
        fields.bool("isInBillingRetryPeriod", isInBillingRetryPeriod)
        fields.integer("signedDate", signedDateMs)
        fields.string("environment", environment)
        fields.integer("renewalDate", renewalDateMs)
        fields.integer("recentSubscriptionStartDate", renewalDateMs.map { $0 - 30 * 86_400_000 })
        fields.string("renewalBillingPlanType", renewalBillingPlanType)
        fields.string("appTransactionId", appTransactionId)
        fields.string("currency", currency)
        fields.integer("renewalPrice", renewalPrice)
        fields.integer("offerType", offerType.map(Int64.init))
        fields.string("offerIdentifier", offerIdentifier)
        return fields.bytes
    }
}
