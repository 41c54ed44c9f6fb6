/// A `JWSTransactionDecodedPayload` as the App Store writes it (dates in epoch milliseconds, `price` in
/// milliunits), for the fake's notifications. Every field Apple may leave out is optional and then omitted.
public struct FakeSignedTransaction: Sendable, Equatable {
    public var transactionId: String
    public var originalTransactionId: String
    public var productId: String
    public var bundleId: String
    /// `Consumable`, `Non-Consumable`, `Auto-Renewable Subscription` or `Non-Renewing Subscription`.
    public var type: String
    public var purchaseDateMs: Int64
    public var expiresDateMs: Int64?
    public var quantity: Int = 1
    /// `PURCHASED` or `FAMILY_SHARED`.
    public var ownershipType: String = "PURCHASED"
    public var environment: String
    public var signedDateMs: Int64
    public var webOrderLineItemId: String?
    public var appAccountToken: String?
    /// Set on refunded or revoked transactions.
    public var revocationDateMs: Int64?
    public var revocationReason: Int?
    /// `REFUND_FULL`, `REFUND_PRORATED` or `FAMILY_REVOKE`.
    public var revocationType: String?
    /// Thousandths of a percent refunded (50000 = 50 %).
    public var revocationPercentage: Int?
    public var transactionReason: String = "PURCHASE"
    /// Set on a period replaced by an upgrade.
    public var isUpgraded: Bool?
    public var price: Int64 = 990
    /// 2025-26 fields, written when set: `offerType` (1 introductory ... 4 win-back), `offerDiscountType`,
    /// `offerPeriod` (ISO 8601 duration), `billingPlanType` (`BILLED_UPFRONT`, `MONTHLY`), `commitmentInfo` (a JSON
    /// object, written as given).
    public var offerType: Int?
    /// `offerIdentifier`, written when set (with an offer).
    public var offerIdentifier: String?
    public var offerDiscountType: String?
    public var offerPeriod: String?
    public var billingPlanType: String?
    public var commitmentInfoJSON: String?
    /// `appTransactionId` (2025), written when set.
    public var appTransactionId: String?
    public var currency: String = "USD"

    /// The payload JSON.
    public var json: [UInt8] {
        var fields = FakeJSONObject()
        fields.string("transactionId", transactionId)
        fields.string("originalTransactionId", originalTransactionId)
        fields.string("webOrderLineItemId", webOrderLineItemId)
        fields.string("bundleId", bundleId)
        fields.string("productId", productId)
        fields.integer("purchaseDate", purchaseDateMs)
        fields.integer("originalPurchaseDate", purchaseDateMs)
        fields.integer("expiresDate", expiresDateMs)
        fields.integer("quantity", Int64(quantity))
        fields.string("type", type)
        fields.string("appAccountToken", appAccountToken)
        fields.string("inAppOwnershipType", ownershipType)
        fields.integer("signedDate", signedDateMs)
        fields.integer("revocationDate", revocationDateMs)
        fields.integer("revocationReason", revocationReason.map(Int64.init))
        fields.string("revocationType", revocationType)
        fields.integer("revocationPercentage", revocationPercentage.map(Int64.init))
        fields.string("environment", environment)
        fields.string("transactionReason", transactionReason)
        if let isUpgraded { fields.bool("isUpgraded", isUpgraded) }
        fields.string("storefront", "USA")
        fields.string("storefrontId", "143441")
        fields.integer("price", price)
        fields.string("currency", currency)
        fields.integer("offerType", offerType.map(Int64.init))
        fields.string("offerIdentifier", offerIdentifier)
        fields.string("offerDiscountType", offerDiscountType)
        fields.string("offerPeriod", offerPeriod)
        fields.string("billingPlanType", billingPlanType)
        fields.raw("commitmentInfo", commitmentInfoJSON)
        fields.string("appTransactionId", appTransactionId)
        return fields.bytes
    }
}
