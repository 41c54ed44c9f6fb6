import ServiceSupport

/// One normalized Apple transaction, as results and purchase events carry it. Ids are strings, `*_ms` integers,
/// absent values null. The same purchase has the same `credit_key` whichever source verified it.
///
/// A crediting service credits exactly the transactions with `creditable: true`, `credit` x `quantity` each, once per
/// `credit_key` (the purchase, see `PurchaseIdentity`).
public struct VerifiedTransaction: CarriesTransactionFields, Decodable, Sendable, Equatable {
    /// What Apple's data says (`transaction.productId` reads `fields.productId`), `appAccountToken` lower-cased.
    public var fields: TransactionFields
    /// The purchase (`PurchaseIdentity`): `apple:<environment>:period:<web_order_line_item_id>` for a subscription
    /// period, else `apple:<environment>:<original_transaction_id>`. The key a crediting service dedupes money on.
    public var creditKey: String
    /// False when refunded, revoked, upgraded away, unreadable where money depends on it, or not in a configured
    /// product catalog: credit exactly the creditable ones.
    public var creditable: Bool
    /// Why `creditable` is false (`not_creditable_reason`); nil exactly when creditable.
    public var notCreditableReason: NotCreditableReason?
    /// The product catalog entry's `credit` object, or null (no catalog, or the product is not in it). Granted
    /// `quantity` times.
    public var credit: JSONValue?

    public init(
        _ fields: TransactionFields, creditable: Bool = true, credit: JSONValue? = nil,
        notCreditableReason: NotCreditableReason? = nil, environment: AppStoreEnvironment
    ) {
        self.fields = fields
        self.creditKey = fields.creditKey(environment)
        self.creditable = creditable
        self.notCreditableReason = notCreditableReason
        self.credit = credit
    }

    enum CodingKeys: String, CodingKey {
        case transactionId = "transaction_id"
        case originalTransactionId = "original_transaction_id"
        case productId = "product_id"
        case quantity
        case purchaseDateMs = "purchase_date_ms"
        case expiresDateMs = "expires_date_ms"
        case cancellationDateMs = "cancellation_date_ms"
        case cancellationReason = "cancellation_reason"
        case webOrderLineItemId = "web_order_line_item_id"
        case inAppOwnershipType = "in_app_ownership_type"
        case isTrialPeriod = "is_trial_period"
        case appAccountToken = "app_account_token"
        case productType = "product_type"
        case revocationType = "revocation_type"
        case revocationPercentage = "revocation_percentage"
        case creditKey = "credit_key"
        case creditable
        case notCreditableReason = "not_creditable_reason"
        case offerDiscountType = "offer_discount_type"
        case offerPeriod = "offer_period"
        case billingPlanType = "billing_plan_type"
        case commitmentInfo = "commitment_info"
        case appTransactionId = "app_transaction_id"
        case credit
        case isUpgraded = "is_upgraded"
        case price
        case currency
        case transactionReason = "transaction_reason"
        case offerType = "offer_type"
        case offerIdentifier = "offer_identifier"
        case storefront
        case storefrontId = "storefront_id"
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        var fields = TransactionFields(
            transactionId: try c.decode(String.self, forKey: .transactionId),
            originalTransactionId: try c.decodeIfPresent(String.self, forKey: .originalTransactionId),
            productId: try c.decode(String.self, forKey: .productId),
            quantity: try c.decode(Int.self, forKey: .quantity),
            purchaseDateMs: try c.decode(Int64.self, forKey: .purchaseDateMs))
        fields.expiresDateMs = try c.decodeIfPresent(Int64.self, forKey: .expiresDateMs)
        fields.cancellationDateMs = try c.decodeIfPresent(Int64.self, forKey: .cancellationDateMs)
        fields.cancellationReason = try c.decodeIfPresent(String.self, forKey: .cancellationReason)
        fields.webOrderLineItemId = try c.decodeIfPresent(String.self, forKey: .webOrderLineItemId)
        fields.inAppOwnershipType = try c.decodeIfPresent(String.self, forKey: .inAppOwnershipType)
        fields.isTrialPeriod = try c.decodeIfPresent(Bool.self, forKey: .isTrialPeriod) ?? false
        fields.appAccountToken = try c.decodeIfPresent(String.self, forKey: .appAccountToken)
        fields.productType = try c.decodeIfPresent(ProductType.self, forKey: .productType)
        fields.revocationType = try c.decodeIfPresent(String.self, forKey: .revocationType)
        fields.revocationPercentage = try c.decodeIfPresent(Int.self, forKey: .revocationPercentage)
        creditKey = try c.decode(String.self, forKey: .creditKey)
        creditable = try c.decode(Bool.self, forKey: .creditable)
        // Absent in messages written before 2026-12.
        notCreditableReason = try c.decodeIfPresent(NotCreditableReason.self, forKey: .notCreditableReason)
        fields.offerDiscountType = try c.decodeIfPresent(String.self, forKey: .offerDiscountType)
        fields.offerPeriod = try c.decodeIfPresent(String.self, forKey: .offerPeriod)
        fields.billingPlanType = try c.decodeIfPresent(String.self, forKey: .billingPlanType)
        let commitment = try c.decodeIfPresent(JSONValue.self, forKey: .commitmentInfo)
        fields.commitmentInfo = commitment == .null ? nil : commitment
        fields.appTransactionId = try c.decodeIfPresent(String.self, forKey: .appTransactionId)
        let credit = try c.decodeIfPresent(JSONValue.self, forKey: .credit)
        self.credit = credit == .null ? nil : credit
        fields.isUpgraded = try c.decodeIfPresent(Bool.self, forKey: .isUpgraded) ?? false
        fields.price = try c.decodeIfPresent(Int64.self, forKey: .price)
        fields.currency = try c.decodeIfPresent(String.self, forKey: .currency)
        fields.transactionReason = try c.decodeIfPresent(String.self, forKey: .transactionReason)
        // Absent in messages written before round 5.
        fields.offerType = try c.decodeIfPresent(Int64.self, forKey: .offerType)
        fields.offerIdentifier = try c.decodeIfPresent(String.self, forKey: .offerIdentifier)
        fields.storefront = try c.decodeIfPresent(String.self, forKey: .storefront)
        fields.storefrontId = try c.decodeIfPresent(String.self, forKey: .storefrontId)
        self.fields = fields
    }
}
