/// A decoded `JWSRenewalInfoDecodedPayload` (§2.8): the renewal state of an auto-renewable subscription.
/// Decoded as tolerantly as `JWSTransactionPayload`.
public struct JWSRenewalInfoPayload: Sendable, Equatable, Decodable {
    /// 1 cancelled, 2 billing error, 3 price increase not accepted, 4 product unavailable, 5 other.
    public var expirationIntent: Int64?
    public var originalTransactionId: String?
    public var autoRenewProductId: String?
    public var productId: String?
    /// 0 off, 1 on.
    public var autoRenewStatus: Int64?
    public var isInBillingRetryPeriod: Bool?
    public var priceIncreaseStatus: Int64?
    /// Epoch ms.
    public var gracePeriodExpiresDate: Int64?
    public var offerType: Int64?
    public var offerIdentifier: String?
    public var offerDiscountType: String?
    public var offerPeriod: String?
    /// Epoch ms at which the App Store signed the JWS.
    public var signedDate: Int64?
    public var environment: SignedEnvironment?
    public var recentSubscriptionStartDate: Int64?
    public var renewalDate: Int64?
    public var currency: String?
    /// Milliunits of `currency`.
    public var renewalPrice: Int64?
    public var eligibleWinBackOfferIds: [String]?
    public var appAccountToken: String?
    public var appTransactionId: String?
    /// The billing plan of the next renewal (2026 commitment plans: `BILLED_UPFRONT`, `MONTHLY`).
    public var renewalBillingPlanType: String?

    public init(from decoder: any Decoder) throws {
        let fields = try decoder.container(keyedBy: AnyCodingKey.self)
        expirationIntent = fields.lenientInt("expirationIntent")
        originalTransactionId = fields.lenientString("originalTransactionId")
        autoRenewProductId = fields.lenientString("autoRenewProductId")
        productId = fields.lenientString("productId")
        autoRenewStatus = fields.lenientInt("autoRenewStatus")
        isInBillingRetryPeriod = fields.lenientBool("isInBillingRetryPeriod")
        priceIncreaseStatus = fields.lenientInt("priceIncreaseStatus")
        gracePeriodExpiresDate = fields.lenientMillis("gracePeriodExpiresDate")
        offerType = fields.lenientInt("offerType")
        offerIdentifier = fields.lenientString("offerIdentifier")
        offerDiscountType = fields.lenientString("offerDiscountType")
        offerPeriod = fields.lenientString("offerPeriod")
        signedDate = fields.lenientMillis("signedDate")
        environment = fields.lenient("environment")
        recentSubscriptionStartDate = fields.lenientMillis("recentSubscriptionStartDate")
        renewalDate = fields.lenientMillis("renewalDate")
        currency = fields.lenientString("currency")
        renewalPrice = fields.lenientInt("renewalPrice")
        eligibleWinBackOfferIds = fields.lenientStrings("eligibleWinBackOfferIds")
        appAccountToken = fields.lenientString("appAccountToken")
        appTransactionId = fields.lenientString("appTransactionId")
        renewalBillingPlanType = fields.lenientString("renewalBillingPlanType")
    }
}
