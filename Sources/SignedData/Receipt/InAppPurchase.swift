/// One in-app purchase receipt (attribute 17) of a legacy app receipt.
public struct InAppPurchase: Sendable, Equatable {
    /// Attribute 1703.
    public var transactionId: String?
    /// Attribute 1705.
    public var originalTransactionId: String?
    /// Attribute 1702.
    public var productId: String?
    /// Attribute 1704, seconds since 1970.
    public var purchaseDate: Int64?
    /// Attribute 1701.
    public var quantity: Int64?

    public init(transactionId: String? = nil, originalTransactionId: String? = nil, productId: String? = nil,
                purchaseDate: Int64? = nil, quantity: Int64? = nil) {
        self.transactionId = transactionId
        self.originalTransactionId = originalTransactionId
        self.productId = productId
        self.purchaseDate = purchaseDate
        self.quantity = quantity
    }
}
