/// One purchase as Apple reports it, normalized: ids as strings, dates as epoch milliseconds.
///
/// Backend-independent: verifyReceipt's `in_app` / `latest_receipt_info` entries decode into it, and a future App
/// Store Server API backend maps its signed transactions to it, so the verdict rules never see the wire format.
public struct AppleTransaction: Sendable, Equatable {
    public var transactionId: String
    public var originalTransactionId: String?
    public var productId: String
    public var quantity: Int
    public var purchaseDateMs: Int64
    public var expiresDateMs: Int64?
    /// Present only when the purchase was refunded or revoked.
    public var cancellationDateMs: Int64?
    public var cancellationReason: String?
    public var webOrderLineItemId: String?
    public var inAppOwnershipType: String?
    public var isTrialPeriod: Bool

    public init(
        transactionId: String, originalTransactionId: String? = nil, productId: String, quantity: Int = 1,
        purchaseDateMs: Int64, expiresDateMs: Int64? = nil, cancellationDateMs: Int64? = nil,
        cancellationReason: String? = nil, webOrderLineItemId: String? = nil, inAppOwnershipType: String? = nil,
        isTrialPeriod: Bool = false
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
    }

    /// Refunded or revoked by Apple.
    public var isCancelled: Bool { cancellationDateMs != nil }
}

extension AppleTransaction: Decodable {
    /// verifyReceipt's field names (the flat iOS 6 receipt uses the same ones, plus `bid` for the bundle id).
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: AnyCodingKey.self)
        func string(_ name: String) -> String? { c.lenientString(AnyCodingKey(name)) }
        func int64(_ name: String) -> Int64? { c.lenientInt64(AnyCodingKey(name)) }
        guard let transactionId = string("transaction_id"), !transactionId.isEmpty else {
            throw DecodingError.dataCorrupted(
                .init(codingPath: decoder.codingPath, debugDescription: "transaction without transaction_id"))
        }
        guard let productId = string("product_id"), !productId.isEmpty else {
            throw DecodingError.dataCorrupted(
                .init(
                    codingPath: decoder.codingPath, debugDescription: "transaction \(transactionId) without product_id")
            )
        }
        guard let purchaseDateMs = int64("purchase_date_ms") else {
            throw DecodingError.dataCorrupted(
                .init(
                    codingPath: decoder.codingPath,
                    debugDescription: "transaction \(transactionId) without purchase_date_ms"))
        }
        self.init(
            transactionId: transactionId,
            originalTransactionId: string("original_transaction_id"),
            productId: productId,
            quantity: int64("quantity").map { Int(clamping: $0) } ?? 1,
            purchaseDateMs: purchaseDateMs,
            expiresDateMs: int64("expires_date_ms") ?? c.lenientInt64(AnyCodingKey("expires_date")),
            cancellationDateMs: int64("cancellation_date_ms"),
            cancellationReason: string("cancellation_reason"),
            webOrderLineItemId: string("web_order_line_item_id"),
            inAppOwnershipType: string("in_app_ownership_type"),
            isTrialPeriod: c.lenientBool(AnyCodingKey("is_trial_period")) ?? false)
    }
}
