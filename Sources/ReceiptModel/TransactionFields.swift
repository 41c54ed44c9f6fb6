import ServiceSupport

/// One purchase as Apple's data shows it, normalized: ids as strings, dates as epoch milliseconds, absent values nil.
/// Every source fills the same fields, so nothing downstream sees a wire format: verifyReceipt's `in_app` /
/// `latest_receipt_info` entries, and a signed transaction (App Store Server API, StoreKit 2) with `revocationDate`
/// -> `cancellationDateMs`, `revocationReason` -> `cancellationReason`, `type` -> `productType`.
///
/// The one list of these fields: the verdict rules' input (`AppleTransaction`, which adds what could not be read)
/// and the result's and event's transaction (`VerifiedTransaction`, which adds the verdict) both carry it.
public struct TransactionFields: Sendable, Equatable {
    public var transactionId: String
    public var originalTransactionId: String?
    public var productId: String
    public var quantity: Int
    public var purchaseDateMs: Int64
    public var expiresDateMs: Int64?
    /// When Apple refunded or revoked the purchase (verifyReceipt's `cancellation_date_ms` or `cancellation_date`, a
    /// signed transaction's `revocationDate`); nil when Apple's data shows none.
    public var cancellationDateMs: Int64?
    /// verifyReceipt's `cancellation_reason` (`0`, `1`), a signed transaction's `revocationReason`; present only on
    /// refunded or revoked purchases.
    public var cancellationReason: String?
    public var webOrderLineItemId: String?
    public var inAppOwnershipType: String?
    public var isTrialPeriod: Bool
    /// The UUID the app set at purchase (`appAccountToken`; verifyReceipt's `app_account_token` in
    /// `latest_receipt_info`): as Apple wrote it in the rules' input, lower-cased in a result.
    public var appAccountToken: String?
    /// What Apple says the product is (a signed transaction's `type`; verifyReceipt never says, a result fills it
    /// from the catalog or the subscription fields).
    public var productType: ProductType?
    /// A signed transaction's `revocationType` (`REFUND_FULL`, `REFUND_PRORATED`, `FAMILY_REVOKE`).
    public var revocationType: String?
    /// A signed transaction's `revocationPercentage`: thousandths of a percent refunded (50000 = 50%).
    public var revocationPercentage: Int?
    /// Apple says this subscription period was replaced by an upgrade (verifyReceipt's `is_upgraded`, a signed
    /// transaction's `isUpgraded`); such a period is never creditable.
    public var isUpgraded: Bool
    /// Apple's price in milli-units of `currency` (10990 = 10.99), where Apple's data carries it (signed data).
    public var price: Int64?
    /// ISO 4217, with `price`.
    public var currency: String?
    /// A signed transaction's `transactionReason`: `PURCHASE` or `RENEWAL`.
    public var transactionReason: String?
    /// Signed data's offer fields (2025): `offerDiscountType` (`FREE_TRIAL`, `PAY_AS_YOU_GO`, `PAY_UP_FRONT`,
    /// `ONE_TIME`) and `offerPeriod` (ISO 8601 duration, `P1M`); nil from verifyReceipt.
    public var offerDiscountType: String?
    public var offerPeriod: String?
    /// The commitment plan's billing (2026: `BILLED_UPFRONT`, `MONTHLY`) and Apple's `commitmentInfo` object,
    /// unchanged; nil when Apple's data has none. Carried, never judged.
    public var billingPlanType: String?
    public var commitmentInfo: JSONValue?
    /// Apple's `appTransactionId` (2025): one id per Apple Account (and family member) that downloaded the app, the
    /// same after a redownload, a refund or on another device; ties purchases to one app installation history. Nil
    /// when Apple's data has none (verifyReceipt, signed data from before 2025).
    public var appTransactionId: String?
    /// Signed data's `offerType` (round 5), as Apple wrote it: 1 introductory offer, 2 promotional offer, 3 offer code,
    /// 4 win-back offer, 5 retention offer (WWDC26); a value Apple adds later is carried as it is. Nil without an
    /// offer and from verifyReceipt. Informational: no money rule reads it.
    public var offerType: Int64?
    /// Signed data's `offerIdentifier`: the promotional offer, offer code or win-back offer's identifier (for offer
    /// codes, the reference name); nil without one and from verifyReceipt.
    public var offerIdentifier: String?
    /// Signed data's `storefront` (ISO 3166-1 alpha-3, `USA`) and `storefrontId` (Apple's number, `143441`): where the
    /// purchase was made; nil from verifyReceipt.
    public var storefront: String?
    public var storefrontId: String?

    public init(
        transactionId: String, originalTransactionId: String? = nil, productId: String, quantity: Int = 1,
        purchaseDateMs: Int64, expiresDateMs: Int64? = nil, cancellationDateMs: Int64? = nil,
        cancellationReason: String? = nil, webOrderLineItemId: String? = nil, inAppOwnershipType: String? = nil,
        isTrialPeriod: Bool = false, appAccountToken: String? = nil, productType: ProductType? = nil,
        revocationType: String? = nil, revocationPercentage: Int? = nil, isUpgraded: Bool = false,
        price: Int64? = nil, currency: String? = nil, transactionReason: String? = nil,
        offerDiscountType: String? = nil, offerPeriod: String? = nil, billingPlanType: String? = nil,
        commitmentInfo: JSONValue? = nil, appTransactionId: String? = nil, offerType: Int64? = nil,
        offerIdentifier: String? = nil, storefront: String? = nil, storefrontId: String? = nil
    ) {
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
        self.isUpgraded = isUpgraded
        self.price = price
        self.currency = currency
        self.transactionReason = transactionReason
        self.offerDiscountType = offerDiscountType
        self.offerPeriod = offerPeriod
        self.billingPlanType = billingPlanType
        self.commitmentInfo = commitmentInfo
        self.appTransactionId = appTransactionId
        self.offerType = offerType
        self.offerIdentifier = offerIdentifier
        self.storefront = storefront
        self.storefrontId = storefrontId
    }

    /// The purchase this transaction belongs to (`PurchaseIdentity`): every transaction of one purchase (a restore,
    /// the same period on another device) has the same one, in one environment.
    public func creditKey(_ environment: AppStoreEnvironment) -> String {
        PurchaseIdentity.creditKey(
            environment: environment, transactionId: transactionId, originalTransactionId: originalTransactionId,
            webOrderLineItemId: webOrderLineItemId)
    }
}

/// A transaction that carries Apple's fields (`AppleTransaction`, `VerifiedTransaction`) reads through to them:
/// `transaction.productId` is `transaction.fields.productId`.
@dynamicMemberLookup
public protocol CarriesTransactionFields {
    var fields: TransactionFields { get set }
}

extension CarriesTransactionFields {
    @inlinable
    public subscript<Value>(dynamicMember field: WritableKeyPath<TransactionFields, Value>) -> Value {
        get { fields[keyPath: field] }
        set { fields[keyPath: field] = newValue }
    }
}
