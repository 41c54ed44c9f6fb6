/// One normalized Apple transaction in a result message. Ids are strings, `*_ms` integers, absent values null.
public struct VerifiedTransaction: Codable, Sendable, Equatable {
    public var transactionId: String
    public var originalTransactionId: String?
    public var productId: String
    public var quantity: Int
    public var purchaseDateMs: Int64
    public var expiresDateMs: Int64?
    public var cancellationDateMs: Int64?
    public var cancellationReason: String?
    public var webOrderLineItemId: String?
    public var inAppOwnershipType: String?
    public var isTrialPeriod: Bool
    /// `apple:<environment lower-cased>:<transaction_id>`: the key a crediting service dedupes on.
    public var creditKey: String

    public init(
        transactionId: String, originalTransactionId: String?, productId: String, quantity: Int, purchaseDateMs: Int64,
        expiresDateMs: Int64? = nil, cancellationDateMs: Int64? = nil, cancellationReason: String? = nil,
        webOrderLineItemId: String? = nil, inAppOwnershipType: String? = nil, isTrialPeriod: Bool = false,
        environment: AppStoreEnvironment
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
        self.creditKey = Self.creditKey(environment: environment, transactionId: transactionId)
    }

    public static func creditKey(environment: AppStoreEnvironment, transactionId: String) -> String {
        "apple:\(environment.rawValue.lowercased()):\(transactionId)"
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
        case creditKey = "credit_key"
    }

    // Absent values are written as null (the contract), not omitted.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(transactionId, forKey: .transactionId)
        try c.encode(originalTransactionId, forKey: .originalTransactionId)
        try c.encode(productId, forKey: .productId)
        try c.encode(quantity, forKey: .quantity)
        try c.encode(purchaseDateMs, forKey: .purchaseDateMs)
        try c.encode(expiresDateMs, forKey: .expiresDateMs)
        try c.encode(cancellationDateMs, forKey: .cancellationDateMs)
        try c.encode(cancellationReason, forKey: .cancellationReason)
        try c.encode(webOrderLineItemId, forKey: .webOrderLineItemId)
        try c.encode(inAppOwnershipType, forKey: .inAppOwnershipType)
        try c.encode(isTrialPeriod, forKey: .isTrialPeriod)
        try c.encode(creditKey, forKey: .creditKey)
    }
}
