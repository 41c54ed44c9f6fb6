import ReceiptModel
import ServiceSupport
import SignedData

/// What a support engineer reads of one verified signed transaction, with the `credit_key` the ledger files it
/// under (`PurchaseIdentity`, the rule every source shares).
public struct TransactionFacts: Sendable, Equatable {
    public var transactionId: String?
    public var originalTransactionId: String?
    public var webOrderLineItemId: String?
    public var productId: String?
    /// Apple's `type`: `Consumable`, `Non-Consumable`, `Auto-Renewable Subscription`, `Non-Renewing Subscription`.
    public var productType: String?
    public var quantity: Int64?
    public var purchaseDateMs: Int64?
    public var expiresDateMs: Int64?
    public var revocationDateMs: Int64?
    public var revocationReason: Int64?
    public var revocationType: String?
    public var ownership: String?
    public var appAccountToken: String?
    public var storefront: String?
    public var creditKey: String

    public init(
        transactionId: String?, originalTransactionId: String?, webOrderLineItemId: String? = nil,
        productId: String?, productType: String?, quantity: Int64? = 1, purchaseDateMs: Int64?,
        expiresDateMs: Int64? = nil, revocationDateMs: Int64? = nil, revocationReason: Int64? = nil,
        revocationType: String? = nil, ownership: String? = nil, appAccountToken: String? = nil,
        storefront: String? = nil, environment: AppStoreEnvironment
    ) {
        self.transactionId = transactionId
        self.originalTransactionId = originalTransactionId
        self.webOrderLineItemId = webOrderLineItemId
        self.productId = productId
        self.productType = productType
        self.quantity = quantity
        self.purchaseDateMs = purchaseDateMs
        self.expiresDateMs = expiresDateMs
        self.revocationDateMs = revocationDateMs
        self.revocationReason = revocationReason
        self.revocationType = revocationType
        self.ownership = ownership
        self.appAccountToken = appAccountToken
        self.storefront = storefront
        creditKey = PurchaseIdentity.creditKey(
            environment: environment, transactionId: transactionId ?? "", originalTransactionId: originalTransactionId,
            webOrderLineItemId: webOrderLineItemId)
    }

    init(_ payload: JWSTransactionPayload, environment: AppStoreEnvironment) {
        self.init(
            transactionId: payload.transactionId, originalTransactionId: payload.originalTransactionId,
            webOrderLineItemId: payload.webOrderLineItemId, productId: payload.productId,
            productType: payload.type?.rawValue, quantity: payload.quantity.value,
            purchaseDateMs: payload.purchaseDate, expiresDateMs: payload.expiresDate,
            revocationDateMs: payload.revocationDate.value, revocationReason: payload.revocationReason,
            revocationType: payload.revocationType?.rawValue, ownership: payload.inAppOwnershipType?.rawValue,
            appAccountToken: payload.appAccountToken, storefront: payload.storefront, environment: environment)
    }

    public var isRevoked: Bool { revocationDateMs != nil }

    public var json: JSONValue {
        .object([
            "transaction_id": .text(transactionId), "original_transaction_id": .text(originalTransactionId),
            "web_order_line_item_id": .text(webOrderLineItemId), "product_id": .text(productId),
            "type": .text(productType), "quantity": .int(quantity), "purchase_date_ms": .int(purchaseDateMs),
            "expires_date_ms": .int(expiresDateMs), "revoked": .bool(isRevoked),
            "revocation_date_ms": .int(revocationDateMs), "revocation_reason": .int(revocationReason),
            "revocation_type": .text(revocationType), "in_app_ownership_type": .text(ownership),
            "app_account_token": .text(appAccountToken), "storefront": .text(storefront),
            "credit_key": .string(creditKey),
        ])
    }

    /// Two lines: what was bought and when, then its state at Apple and its key.
    public var summary: [String] {
        var first = "transaction \(transactionId ?? "-") (original \(originalTransactionId ?? "-")): "
            + "\(productId ?? "-") [\(productType ?? "unknown type")"
        if let quantity, quantity != 1 { first += " x\(quantity)" }
        first += "], purchased \(AdminTime.text(purchaseDateMs))"
        if let expiresDateMs { first += ", expires \(AdminTime.text(expiresDateMs))" }
        var second = isRevoked
            ? "revoked \(AdminTime.text(revocationDateMs))" + (revocationType.map { " (\($0))" } ?? "")
                + (revocationReason.map { " reason \($0)" } ?? "")
            : "not revoked"
        if ownership == "FAMILY_SHARED" { second += ", family shared" }
        second += "; credit_key \(creditKey)"
        return [first, "  " + second]
    }
}

/// The renewal info of a subscription (Get All Subscription Statuses).
public struct RenewalFacts: Sendable, Equatable {
    public var autoRenewProductId: String?
    /// 1 on, 0 off.
    public var autoRenewStatus: Int64?
    public var renewalDateMs: Int64?
    public var expirationIntent: Int64?
    public var isInBillingRetryPeriod: Bool?
    public var gracePeriodExpiresDateMs: Int64?

    public init(
        autoRenewProductId: String?, autoRenewStatus: Int64?, renewalDateMs: Int64?, expirationIntent: Int64? = nil,
        isInBillingRetryPeriod: Bool? = nil, gracePeriodExpiresDateMs: Int64? = nil
    ) {
        self.autoRenewProductId = autoRenewProductId
        self.autoRenewStatus = autoRenewStatus
        self.renewalDateMs = renewalDateMs
        self.expirationIntent = expirationIntent
        self.isInBillingRetryPeriod = isInBillingRetryPeriod
        self.gracePeriodExpiresDateMs = gracePeriodExpiresDateMs
    }

    init(_ payload: JWSRenewalInfoPayload) {
        self.init(
            autoRenewProductId: payload.autoRenewProductId, autoRenewStatus: payload.autoRenewStatus,
            renewalDateMs: payload.renewalDate, expirationIntent: payload.expirationIntent,
            isInBillingRetryPeriod: payload.isInBillingRetryPeriod,
            gracePeriodExpiresDateMs: payload.gracePeriodExpiresDate)
    }

    public var json: JSONValue {
        .object([
            "auto_renew_product_id": .text(autoRenewProductId), "auto_renew_status": .int(autoRenewStatus),
            "renewal_date_ms": .int(renewalDateMs), "expiration_intent": .int(expirationIntent),
            "is_in_billing_retry_period": isInBillingRetryPeriod.map(JSONValue.bool) ?? .null,
            "grace_period_expires_date_ms": .int(gracePeriodExpiresDateMs),
        ])
    }

    public var summary: String {
        "  auto-renew \(autoRenewStatus == 1 ? "on" : "off") (\(autoRenewProductId ?? "-")), renews "
            + AdminTime.text(renewalDateMs)
            + (isInBillingRetryPeriod == true ? ", in billing retry" : "")
    }
}
