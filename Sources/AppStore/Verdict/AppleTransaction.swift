import ReceiptModel
import ServiceSupport

/// One purchase as Apple's data shows it, normalized: ids as strings, dates as epoch milliseconds. Part of
/// `AppleReceipt`, the verdict rules' input.
///
/// Source-independent: verifyReceipt's `in_app` / `latest_receipt_info` entries decode into it
/// (`AppleTransaction+VerifyReceipt.swift`), and an App Store Server API or StoreKit 2 source fills the same fields
/// from a signed transaction (`revocationDate` -> `cancellationDateMs`, `revocationReason` -> `cancellationReason`,
/// `type` -> `productType`, `appAccountToken`, `revocationType`, `revocationPercentage`), so the rules never see a
/// wire format.
///
/// A source must never drop evidence of a refund: a cancellation or revocation field that is present but cannot be
/// read is named in `unreadableCancellationFields`, which makes the transaction not creditable (fail closed). The
/// same holds for the other fields money depends on (`quantity`, `is_upgraded`): `unreadableCreditingFields`.
public struct AppleTransaction: Sendable, Equatable {
    public var transactionId: String
    public var originalTransactionId: String?
    public var productId: String
    public var quantity: Int
    public var purchaseDateMs: Int64
    public var expiresDateMs: Int64?
    /// When Apple refunded or revoked the purchase (verifyReceipt's `cancellation_date_ms` or `cancellation_date`, a
    /// signed transaction's `revocationDate`); nil when Apple's data shows none or could not be read.
    public var cancellationDateMs: Int64?
    /// verifyReceipt's `cancellation_reason` (`0`, `1`), a signed transaction's `revocationReason`; present only on
    /// refunded or revoked purchases.
    public var cancellationReason: String?
    public var webOrderLineItemId: String?
    public var inAppOwnershipType: String?
    public var isTrialPeriod: Bool
    /// The UUID the app set at purchase (`appAccountToken`), as Apple wrote it (verifyReceipt reports it as
    /// `app_account_token` in `latest_receipt_info`).
    public var appAccountToken: String?
    /// What Apple says the product is (a signed transaction's `type`); verifyReceipt never says.
    public var productType: ProductType?
    /// A signed transaction's `revocationType` (`REFUND_FULL`, `REFUND_PRORATED`, `FAMILY_REVOKE`).
    public var revocationType: String?
    /// A signed transaction's `revocationPercentage` (thousandths of a percent).
    public var revocationPercentage: Int?
    /// Cancellation or revocation fields Apple's data carries but the source could not read (for verifyReceipt:
    /// `cancellation_date_ms`, `cancellation_date`, `cancellation_date_pst`, `cancellation_reason`). Not empty means
    /// "Apple may have refunded this": the transaction is never creditable.
    public var unreadableCancellationFields: [String]
    /// Apple says this subscription period was replaced by an upgrade (`is_upgraded`, `isUpgraded`).
    public var isUpgraded: Bool
    /// Apple's price in milli-units and its currency, and why the transaction exists (`PURCHASE`, `RENEWAL`): signed
    /// data only.
    public var price: Int64?
    public var currency: String?
    public var transactionReason: String?
    /// `quantity` or `is_upgraded` present but unreadable: how much to credit, or whether to credit at all, is
    /// unknown, so the transaction is never creditable.
    public var unreadableCreditingFields: [String]
    /// Signed data's 2025-26 fields, carried to results and events (no money rule reads them): `offerDiscountType`
    /// (`FREE_TRIAL`, `PAY_AS_YOU_GO`, `PAY_UP_FRONT`, `ONE_TIME`), `offerPeriod` (ISO 8601, `P1M`),
    /// `billingPlanType` (`BILLED_UPFRONT`, `MONTHLY`), `commitmentInfo` (Apple's object, unchanged).
    public var offerDiscountType: String?
    public var offerPeriod: String?
    public var billingPlanType: String?
    public var commitmentInfo: JSONValue?
    /// Signed data's `appTransactionId` (2025): the app download the purchase was made under; carried, never judged.
    public var appTransactionId: String?
    /// Signed data's offer and storefront (carried to results and events for support and crediting services; no money
    /// rule reads them): `offerType` as Apple wrote it (1 introductory, 2 promotional, 3 offer code, 4 win-back, 5
    /// retention (WWDC26); a value Apple adds later is kept), `offerIdentifier`, `storefront` (ISO 3166-1 alpha-3)
    /// and `storefrontId` (Apple's storefront number).
    public var offerType: Int64?
    public var offerIdentifier: String?
    public var storefront: String?
    public var storefrontId: String?

    public init(
        transactionId: String, originalTransactionId: String? = nil, productId: String, quantity: Int = 1,
        purchaseDateMs: Int64, expiresDateMs: Int64? = nil, cancellationDateMs: Int64? = nil,
        cancellationReason: String? = nil, webOrderLineItemId: String? = nil, inAppOwnershipType: String? = nil,
        isTrialPeriod: Bool = false, appAccountToken: String? = nil, productType: ProductType? = nil,
        revocationType: String? = nil, revocationPercentage: Int? = nil, unreadableCancellationFields: [String] = [],
        isUpgraded: Bool = false, price: Int64? = nil, currency: String? = nil, transactionReason: String? = nil,
        unreadableCreditingFields: [String] = [], offerDiscountType: String? = nil, offerPeriod: String? = nil,
        billingPlanType: String? = nil, commitmentInfo: JSONValue? = nil, appTransactionId: String? = nil,
        offerType: Int64? = nil, offerIdentifier: String? = nil, storefront: String? = nil, storefrontId: String? = nil
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
        self.unreadableCancellationFields = unreadableCancellationFields
        self.isUpgraded = isUpgraded
        self.price = price
        self.currency = currency
        self.transactionReason = transactionReason
        self.unreadableCreditingFields = unreadableCreditingFields
    }

    /// The purchase this transaction belongs to (`PurchaseIdentity`): every transaction of one purchase (a restore,
    /// the same period on another device) has the same one, in one environment.
    public func creditKey(_ environment: AppStoreEnvironment) -> String {
        PurchaseIdentity.creditKey(
            environment: environment, transactionId: transactionId, originalTransactionId: originalTransactionId,
            webOrderLineItemId: webOrderLineItemId)
    }

    /// Apple's data shows a refund or revocation, or a cancellation field that could not be read (fail closed).
    public var showsCancellation: Bool {
        cancellationDateMs != nil || cancellationReason != nil || revocationType != nil || revocationPercentage != nil
            || !unreadableCancellationFields.isEmpty
    }
}
