import ServiceSupport

/// One normalized Apple transaction, as results and purchase events carry it. Ids are strings, `*_ms` integers,
/// absent values null. The same purchase has the same `credit_key` whichever source verified it.
///
/// A crediting service credits exactly the transactions with `creditable: true`, `credit` x `quantity` each, once per
/// `credit_key` (the purchase, see `PurchaseIdentity`).
public struct VerifiedTransaction: Decodable, Sendable, Equatable {
    public var transactionId: String
    public var originalTransactionId: String?
    public var productId: String
    public var quantity: Int
    public var purchaseDateMs: Int64
    public var expiresDateMs: Int64?
    /// When Apple refunded or revoked the purchase (verifyReceipt's `cancellation_date_ms`, a signed transaction's
    /// `revocationDate`).
    public var cancellationDateMs: Int64?
    public var cancellationReason: String?
    public var webOrderLineItemId: String?
    public var inAppOwnershipType: String?
    public var isTrialPeriod: Bool
    /// The UUID the app set at purchase (`appAccountToken`), lower-cased; null when Apple's data has none.
    public var appAccountToken: String?
    public var productType: ProductType?
    /// A signed transaction's `revocationType` (`REFUND_FULL`, `REFUND_PRORATED`, `FAMILY_REVOKE`).
    public var revocationType: String?
    /// A signed transaction's `revocationPercentage`: thousandths of a percent refunded (50000 = 50%).
    public var revocationPercentage: Int?
    /// The purchase (`PurchaseIdentity`): `apple:<environment>:period:<web_order_line_item_id>` for a subscription
    /// period, else `apple:<environment>:<original_transaction_id>`. The key a crediting service dedupes money on.
    public var creditKey: String
    /// False when refunded, revoked, upgraded away, unreadable where money depends on it, or not in a configured
    /// product catalog: credit exactly the creditable ones.
    public var creditable: Bool
    /// Why `creditable` is false (`not_creditable_reason`); nil exactly when creditable.
    public var notCreditableReason: NotCreditableReason?
    /// Signed data's offer fields (2025): `offerDiscountType` (`FREE_TRIAL`, `PAY_AS_YOU_GO`, `PAY_UP_FRONT`,
    /// `ONE_TIME`) and `offerPeriod` (ISO 8601 duration, `P1M`); null from verifyReceipt.
    public var offerDiscountType: String?
    public var offerPeriod: String?
    /// The commitment plan's billing (2026: `BILLED_UPFRONT`, `MONTHLY`) and Apple's `commitmentInfo` object,
    /// unchanged; null when Apple's data has none.
    public var billingPlanType: String?
    public var commitmentInfo: JSONValue?
    /// Apple's `appTransactionId` (2025): one id per Apple Account (and family member) that downloaded the app, the
    /// same after a redownload, a refund or on another device; ties purchases to one app installation history. Null
    /// when Apple's data has none (verifyReceipt, signed data from before 2025).
    public var appTransactionId: String?
    /// The product catalog entry's `credit` object, or null (no catalog, or the product is not in it). Granted
    /// `quantity` times.
    public var credit: JSONValue?
    /// Apple says this subscription period was replaced by an upgrade (verifyReceipt's `is_upgraded`, a signed
    /// transaction's `isUpgraded`); such a period is never creditable.
    public var isUpgraded: Bool
    /// Apple's price in milli-units of `currency` (10990 = 10.99), where Apple's data carries it (signed data).
    public var price: Int64?
    /// ISO 4217, with `price`.
    public var currency: String?
    /// A signed transaction's `transactionReason`: `PURCHASE` or `RENEWAL`.
    public var transactionReason: String?
    /// Signed data's `offerType` (round 5), as Apple wrote it: 1 introductory offer, 2 promotional offer, 3 offer code,
    /// 4 win-back offer, 5 retention offer (WWDC26); a value Apple adds later is carried as it is. Null without an
    /// offer and from verifyReceipt. Informational: no money rule reads it.
    public var offerType: Int64?
    /// Signed data's `offerIdentifier`: the promotional offer, offer code or win-back offer's identifier (for offer
    /// codes, the reference name); null without one and from verifyReceipt.
    public var offerIdentifier: String?
    /// Signed data's `storefront` (ISO 3166-1 alpha-3, `USA`) and `storefrontId` (Apple's number, `143441`): where the
    /// purchase was made; null from verifyReceipt.
    public var storefront: String?
    public var storefrontId: String?

    public init(
        transactionId: String, originalTransactionId: String?, productId: String, quantity: Int, purchaseDateMs: Int64,
        expiresDateMs: Int64? = nil, cancellationDateMs: Int64? = nil, cancellationReason: String? = nil,
        webOrderLineItemId: String? = nil, inAppOwnershipType: String? = nil, isTrialPeriod: Bool = false,
        appAccountToken: String? = nil, productType: ProductType? = nil, revocationType: String? = nil,
        revocationPercentage: Int? = nil, creditable: Bool = true, credit: JSONValue? = nil, isUpgraded: Bool = false,
        price: Int64? = nil, currency: String? = nil, transactionReason: String? = nil,
        notCreditableReason: NotCreditableReason? = nil, offerDiscountType: String? = nil, offerPeriod: String? = nil,
        billingPlanType: String? = nil, commitmentInfo: JSONValue? = nil, appTransactionId: String? = nil,
        offerType: Int64? = nil, offerIdentifier: String? = nil, storefront: String? = nil,
        storefrontId: String? = nil, environment: AppStoreEnvironment
    ) {
        self.appTransactionId = appTransactionId
        self.offerType = offerType
        self.offerIdentifier = offerIdentifier
        self.storefront = storefront
        self.storefrontId = storefrontId
        self.offerDiscountType = offerDiscountType
        self.offerPeriod = offerPeriod
        self.billingPlanType = billingPlanType
        self.commitmentInfo = commitmentInfo
        self.transactionId = transactionId
        self.originalTransactionId = originalTransactionId
        self.productId = productId
        self.quantity = quantity
        self.purchaseDateMs = purchaseDateMs
        self.expiresDateMs = expiresDateMs
        self.cancellationDateMs = cancellationDateMs
        self.cancellationReason = cancellationReason
        self.webOrderLineItemId = webOrderLineItemId
        self.inAppOwnershipType = inAppOwnershipType
        self.isTrialPeriod = isTrialPeriod
        self.appAccountToken = appAccountToken
        self.productType = productType
        self.revocationType = revocationType
        self.revocationPercentage = revocationPercentage
        self.creditKey = PurchaseIdentity.creditKey(
            environment: environment, transactionId: transactionId, originalTransactionId: originalTransactionId,
            webOrderLineItemId: webOrderLineItemId)
        self.creditable = creditable
        self.notCreditableReason = notCreditableReason
        self.credit = credit
        self.isUpgraded = isUpgraded
        self.price = price
        self.currency = currency
        self.transactionReason = transactionReason
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
        transactionId = try c.decode(String.self, forKey: .transactionId)
        originalTransactionId = try c.decodeIfPresent(String.self, forKey: .originalTransactionId)
        productId = try c.decode(String.self, forKey: .productId)
        quantity = try c.decode(Int.self, forKey: .quantity)
        purchaseDateMs = try c.decode(Int64.self, forKey: .purchaseDateMs)
        expiresDateMs = try c.decodeIfPresent(Int64.self, forKey: .expiresDateMs)
        cancellationDateMs = try c.decodeIfPresent(Int64.self, forKey: .cancellationDateMs)
        cancellationReason = try c.decodeIfPresent(String.self, forKey: .cancellationReason)
        webOrderLineItemId = try c.decodeIfPresent(String.self, forKey: .webOrderLineItemId)
        inAppOwnershipType = try c.decodeIfPresent(String.self, forKey: .inAppOwnershipType)
        isTrialPeriod = try c.decodeIfPresent(Bool.self, forKey: .isTrialPeriod) ?? false
        appAccountToken = try c.decodeIfPresent(String.self, forKey: .appAccountToken)
        productType = try c.decodeIfPresent(ProductType.self, forKey: .productType)
        revocationType = try c.decodeIfPresent(String.self, forKey: .revocationType)
        revocationPercentage = try c.decodeIfPresent(Int.self, forKey: .revocationPercentage)
        creditKey = try c.decode(String.self, forKey: .creditKey)
        creditable = try c.decode(Bool.self, forKey: .creditable)
        // Absent in messages written before 2026-12.
        notCreditableReason = try c.decodeIfPresent(NotCreditableReason.self, forKey: .notCreditableReason)
        offerDiscountType = try c.decodeIfPresent(String.self, forKey: .offerDiscountType)
        offerPeriod = try c.decodeIfPresent(String.self, forKey: .offerPeriod)
        billingPlanType = try c.decodeIfPresent(String.self, forKey: .billingPlanType)
        let commitment = try c.decodeIfPresent(JSONValue.self, forKey: .commitmentInfo)
        commitmentInfo = commitment == .null ? nil : commitment
        appTransactionId = try c.decodeIfPresent(String.self, forKey: .appTransactionId)
        let credit = try c.decodeIfPresent(JSONValue.self, forKey: .credit)
        self.credit = credit == .null ? nil : credit
        isUpgraded = try c.decodeIfPresent(Bool.self, forKey: .isUpgraded) ?? false
        price = try c.decodeIfPresent(Int64.self, forKey: .price)
        currency = try c.decodeIfPresent(String.self, forKey: .currency)
        transactionReason = try c.decodeIfPresent(String.self, forKey: .transactionReason)
        // Absent in messages written before round 5.
        offerType = try c.decodeIfPresent(Int64.self, forKey: .offerType)
        offerIdentifier = try c.decodeIfPresent(String.self, forKey: .offerIdentifier)
        storefront = try c.decodeIfPresent(String.self, forKey: .storefront)
        storefrontId = try c.decodeIfPresent(String.self, forKey: .storefrontId)
    }
}
