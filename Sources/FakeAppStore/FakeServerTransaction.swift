import ServiceSupport

/// A transaction the fake App Store Server API knows, as registered with `POST /admin/transactions` (JSON, snake
/// case) or `FakeAppStoreServer.register(_:)`. Every field but `id` is optional; see `Sources/FakeAppStore/README.md`.
///
/// Unregistered numeric ids are known too: a production `Consumable` of the fake's default product and bundle
/// (`FakeServerTransaction.defaultTransaction(id:bundleId:productId:)`), so benchmarks need no setup.
public struct FakeServerTransaction: Codable, Sendable, Equatable {
    /// One scripted failure: the next `times` calls about this transaction (in `environment`, or in any when nil)
    /// answer it instead of the transaction.
    public struct Failure: Codable, Sendable, Equatable {
        /// HTTP status: 401, 404, 429, 500, 503...
        public var httpStatus: Int
        /// Apple's `errorCode` in the JSON body (none for 401, which Apple answers without a JSON body).
        public var errorCode: Int?
        /// The `Retry-After` header of a 429: epoch ms, epoch s or delta seconds, sent as given.
        public var retryAfter: String?
        public var environment: String?
        /// How many calls it answers (default 1).
        public var times: Int?

        public init(
            httpStatus: Int, errorCode: Int? = nil, retryAfter: String? = nil, environment: String? = nil,
            times: Int? = nil
        ) {
            self.httpStatus = httpStatus
            self.errorCode = errorCode
            self.retryAfter = retryAfter
            self.environment = environment
            self.times = times
        }

        enum CodingKeys: String, CodingKey {
            case httpStatus = "http_status"
            case errorCode = "error_code"
            case retryAfter = "retry_after"
            case environment, times
        }
    }

    public var id: String
    /// `Production` (default) or `Sandbox`: the environment whose API knows it (the other answers 4040010).
    public var environment: String?
    public var bundleId: String?
    public var productId: String?
    /// `Consumable` (default), `Non-Consumable`, `Auto-Renewable Subscription`, `Non-Renewing Subscription`.
    public var type: String?
    public var originalId: String?
    public var purchaseDateMs: Int64?
    public var expiresDateMs: Int64?
    public var quantity: Int?
    /// Present: refunded or revoked at that time.
    public var revocationDateMs: Int64?
    /// Write `revocationDate` as an unreadable value (a string) to test fail-closed refund rules.
    public var revocationDateUnreadable: Bool?
    public var revocationReason: Int?
    /// `REFUND_FULL`, `REFUND_PRORATED`, `FAMILY_REVOKE`.
    public var revocationType: String?
    /// Milliunits (50000 = 50 %).
    public var revocationPercentage: Int?
    /// The app's customer UUID bound at purchase.
    public var appAccountToken: String?
    /// Shorthand for `ownership: FAMILY_SHARED`.
    public var familyShared: Bool?
    /// `PURCHASED` (default) or `FAMILY_SHARED`.
    public var ownership: String?
    public var webOrderLineItemId: String?
    /// Transactions with the same customer (default: the original id) form one Get Transaction History.
    public var customer: String?
    /// 1 introductory offer ... (with `offerDiscountType` `FREE_TRIAL`: a trial).
    public var offerType: Int?
    /// `offerIdentifier` of the offer (written when set).
    public var offerIdentifier: String?
    public var offerDiscountType: String?
    public var priceMilliunits: Int64?
    public var currency: String?
    /// `appTransactionId` (2025): the app download this purchase was made under, written when set; Get App
    /// Transaction Info with this transaction's id answers that app transaction (registered, or the default one).
    public var appTransactionId: String?
    /// Scripted failures, consumed in order.
    public var failures: [Failure]?
    /// Production answers 401 to any call about it (an app without a release in production).
    public var productionUnauthorized: Bool?
    /// Extra latency for calls about it.
    public var delayMs: Int?
    /// The order id of the customer's e-mailed receipt (Look Up Order ID finds the transactions that carry it).
    public var orderId: String?
    /// A subscription's group (`subscriptionGroupIdentifier`; Get All Subscription Statuses groups by it, default
    /// `FakeServerTransaction.defaultSubscriptionGroup`).
    public var subscriptionGroup: String?

    public init(
        id: String, environment: String? = nil, bundleId: String? = nil, productId: String? = nil, type: String? = nil,
        originalId: String? = nil, purchaseDateMs: Int64? = nil, expiresDateMs: Int64? = nil, quantity: Int? = nil,
        revocationDateMs: Int64? = nil, revocationDateUnreadable: Bool? = nil, revocationReason: Int? = nil,
        revocationType: String? = nil, revocationPercentage: Int? = nil, appAccountToken: String? = nil,
        familyShared: Bool? = nil, ownership: String? = nil, webOrderLineItemId: String? = nil,
        customer: String? = nil, offerType: Int? = nil, offerIdentifier: String? = nil,
        offerDiscountType: String? = nil,
        priceMilliunits: Int64? = nil, currency: String? = nil, failures: [Failure]? = nil,
        productionUnauthorized: Bool? = nil, delayMs: Int? = nil, orderId: String? = nil,
        subscriptionGroup: String? = nil, appTransactionId: String? = nil
    ) {
        self.appTransactionId = appTransactionId
        self.id = id
        self.environment = environment
        self.bundleId = bundleId
        self.productId = productId
        self.type = type
        self.originalId = originalId
        self.purchaseDateMs = purchaseDateMs
        self.expiresDateMs = expiresDateMs
        self.quantity = quantity
        self.revocationDateMs = revocationDateMs
        self.revocationDateUnreadable = revocationDateUnreadable
        self.revocationReason = revocationReason
        self.revocationType = revocationType
        self.revocationPercentage = revocationPercentage
        self.appAccountToken = appAccountToken
        self.familyShared = familyShared
        self.ownership = ownership
        self.webOrderLineItemId = webOrderLineItemId
        self.customer = customer
        self.offerType = offerType
        self.offerIdentifier = offerIdentifier
        self.offerDiscountType = offerDiscountType
        self.priceMilliunits = priceMilliunits
        self.currency = currency
        self.failures = failures
        self.productionUnauthorized = productionUnauthorized
        self.delayMs = delayMs
        self.orderId = orderId
        self.subscriptionGroup = subscriptionGroup
    }

    enum CodingKeys: String, CodingKey {
        case id, environment, type, quantity, customer, currency, failures, ownership
        case bundleId = "bundle_id"
        case productId = "product_id"
        case originalId = "original_id"
        case purchaseDateMs = "purchase_date_ms"
        case expiresDateMs = "expires_date_ms"
        case revocationDateMs = "revocation_date_ms"
        case revocationDateUnreadable = "revocation_date_unreadable"
        case revocationReason = "revocation_reason"
        case revocationType = "revocation_type"
        case revocationPercentage = "revocation_percentage"
        case appAccountToken = "app_account_token"
        case familyShared = "family_shared"
        case webOrderLineItemId = "web_order_line_item_id"
        case offerType = "offer_type"
        case offerIdentifier = "offer_identifier"
        case offerDiscountType = "offer_discount_type"
        case priceMilliunits = "price_milliunits"
        case appTransactionId = "app_transaction_id"
        case productionUnauthorized = "production_unauthorized"
        case delayMs = "delay_ms"
        case orderId = "order_id"
        case subscriptionGroup = "subscription_group"
    }

    /// The group of subscriptions registered without one.
    public static let defaultSubscriptionGroup = "21000001"


    /// The purchase date of unregistered transactions: fixed, so the same id always describes the same purchase.
    public static let defaultPurchaseDateMs: Int64 = 1_700_000_000_000

    /// What an unregistered numeric id is: a production consumable of `productId` in `bundleId`.
    public static func defaultTransaction(id: String, bundleId: String, productId: String) -> FakeServerTransaction {
        FakeServerTransaction(
            id: id, environment: "Production", bundleId: bundleId, productId: productId, type: "Consumable",
            originalId: id, purchaseDateMs: defaultPurchaseDateMs, quantity: 1)
    }

    var resolvedEnvironment: String { environment ?? "Production" }
    var resolvedOriginalId: String { originalId ?? id }
    var resolvedCustomer: String { customer ?? resolvedOriginalId }
    var isAutoRenewable: Bool { type == "Auto-Renewable Subscription" }
    var isFamilyShared: Bool { ownership == "FAMILY_SHARED" || (ownership == nil && familyShared == true) }

    /// The `JWSTransactionDecodedPayload` JSON Apple would sign for it, signed at `signedDateMs`.
    func payloadJSON(bundleId defaultBundleId: String, productId defaultProductId: String, signedDateMs: Int64)
        -> String
    {
        let purchase = purchaseDateMs ?? Self.defaultPurchaseDateMs
        var fields: [String] = [
            "\"transactionId\":\(JSONText.quoted(id))",
            "\"originalTransactionId\":\(JSONText.quoted(resolvedOriginalId))",
            "\"bundleId\":\(JSONText.quoted(bundleId ?? defaultBundleId))",
            "\"productId\":\(JSONText.quoted(productId ?? defaultProductId))",
            "\"purchaseDate\":\(purchase)", "\"originalPurchaseDate\":\(purchase)",
            "\"quantity\":\(quantity ?? 1)", "\"type\":\(JSONText.quoted(type ?? "Consumable"))",
            "\"inAppOwnershipType\":\(JSONText.quoted(ownership ?? (familyShared == true ? "FAMILY_SHARED" : "PURCHASED")))",
            "\"signedDate\":\(signedDateMs)", "\"environment\":\(JSONText.quoted(resolvedEnvironment))",
            "\"transactionReason\":\"PURCHASE\"", "\"storefront\":\"USA\"", "\"storefrontId\":\"143441\"",
            "\"price\":\(priceMilliunits ?? 990)", "\"currency\":\(JSONText.quoted(currency ?? "USD"))",
        ]
        if let expiresDateMs { fields.append("\"expiresDate\":\(expiresDateMs)") }
        if let webOrderLineItemId { fields.append("\"webOrderLineItemId\":\(JSONText.quoted(webOrderLineItemId))") }
        if let appAccountToken { fields.append("\"appAccountToken\":\(JSONText.quoted(appAccountToken))") }
        if revocationDateUnreadable == true {
            fields.append("\"revocationDate\":\"not-a-date\"")
        } else if let revocationDateMs {
            fields.append("\"revocationDate\":\(revocationDateMs)")
        }
        if revocationDateMs != nil || revocationDateUnreadable == true {
            fields.append("\"revocationReason\":\(revocationReason ?? 0)")
        }
        if let revocationType { fields.append("\"revocationType\":\(JSONText.quoted(revocationType))") }
        if let revocationPercentage { fields.append("\"revocationPercentage\":\(revocationPercentage)") }
        if let offerType { fields.append("\"offerType\":\(offerType)") }
        if let offerIdentifier { fields.append("\"offerIdentifier\":\(JSONText.quoted(offerIdentifier))") }
        if let offerDiscountType { fields.append("\"offerDiscountType\":\(JSONText.quoted(offerDiscountType))") }
        if let appTransactionId { fields.append("\"appTransactionId\":\(JSONText.quoted(appTransactionId))") }
        if isAutoRenewable {
            let group = subscriptionGroup ?? Self.defaultSubscriptionGroup
            fields.append("\"subscriptionGroupIdentifier\":\(JSONText.quoted(group))")
        }
        return "{" + fields.joined(separator: ",") + "}"
    }
}
