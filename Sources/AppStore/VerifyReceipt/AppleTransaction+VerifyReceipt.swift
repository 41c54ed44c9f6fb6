extension AppleTransaction: Decodable {
    /// verifyReceipt's field names (the flat iOS 6 receipt uses the same ones, plus `bid` for the bundle id).
    ///
    /// Throws when `transaction_id`, `product_id` or `purchase_date_ms` is missing (the entry is then unusable, see
    /// `TransactionEntry`). Cancellation fields never make it throw: one that is present (not null) but cannot be
    /// read is recorded in `unreadableCancellationFields` instead, so the refund it may show is never lost.
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
        let cancellation = Self.decodeCancellation(c)
        let crediting = Self.decodeCrediting(c)
        self.init(
            transactionId: transactionId,
            originalTransactionId: string("original_transaction_id"),
            productId: productId,
            quantity: crediting.quantity,
            purchaseDateMs: purchaseDateMs,
            expiresDateMs: int64("expires_date_ms") ?? c.lenientInt64(AnyCodingKey("expires_date")),
            cancellationDateMs: cancellation.dateMs,
            cancellationReason: cancellation.reason,
            webOrderLineItemId: string("web_order_line_item_id"),
            inAppOwnershipType: string("in_app_ownership_type"),
            isTrialPeriod: c.lenientBool(AnyCodingKey("is_trial_period")) ?? false,
            appAccountToken: string("app_account_token").flatMap { $0.isEmpty ? nil : $0 },
            unreadableCancellationFields: cancellation.unreadable,
            isUpgraded: crediting.isUpgraded,
            unreadableCreditingFields: crediting.unreadable)
    }

    /// The fields that say how much to credit, or whether at all: `quantity` (a whole number from 1; absent means 1)
    /// and `is_upgraded` (`"true"` on a period replaced by an upgrade; absent means not). One present but unreadable
    /// (`"five"`, `0`, `{}`) is named in `unreadable`: the transaction is then never creditable.
    private static func decodeCrediting(
        _ c: KeyedDecodingContainer<AnyCodingKey>
    ) -> (quantity: Int, isUpgraded: Bool, unreadable: [String]) {
        var unreadable: [String] = []
        var quantity = 1
        let quantityKey = AnyCodingKey("quantity")
        if c.isPresent(quantityKey) {
            if let value = c.lenientInt64(quantityKey), value >= 1, value <= Int64(Int32.max) {
                quantity = Int(value)
            } else {
                unreadable.append(quantityKey.stringValue)
            }
        }
        var isUpgraded = false
        let upgradedKey = AnyCodingKey("is_upgraded")
        if c.isPresent(upgradedKey) {
            if let value = c.lenientBool(upgradedKey) {
                isUpgraded = value
            } else {
                unreadable.append(upgradedKey.stringValue)
            }
        }
        return (quantity, isUpgraded, unreadable)
    }

    /// The cancellation fields Apple writes on a refunded purchase: `cancellation_date_ms` (milliseconds),
    /// `cancellation_date` (`2019-10-19 09:30:48 Etc/GMT`), `cancellation_date_pst` (the same in Pacific time, read
    /// only when neither of the others gives a date) and `cancellation_reason`. Any of them present shows a refund;
    /// JSON null counts as absent.
    private static func decodeCancellation(
        _ c: KeyedDecodingContainer<AnyCodingKey>
    ) -> (dateMs: Int64?, reason: String?, unreadable: [String]) {
        func present(_ key: AnyCodingKey) -> Bool { c.isPresent(key) }
        let msKey = AnyCodingKey("cancellation_date_ms")
        let textKey = AnyCodingKey("cancellation_date")
        let pstKey = AnyCodingKey("cancellation_date_pst")
        let reasonKey = AnyCodingKey("cancellation_reason")
        // The common case, a purchase never refunded, costs four dictionary lookups.
        guard present(msKey) || present(textKey) || present(pstKey) || present(reasonKey) else {
            return (nil, nil, [])
        }
        var unreadable: [String] = []
        var dateMs: Int64?
        if present(msKey) {
            dateMs = c.lenientInt64(msKey)
            if dateMs == nil { unreadable.append(msKey.stringValue) }
        }
        if present(textKey) {
            let parsed = c.lenientString(textKey).flatMap(AppleDateText.milliseconds)
            if parsed == nil { unreadable.append(textKey.stringValue) }
            dateMs = dateMs ?? parsed
        }
        if dateMs == nil, present(pstKey) {
            dateMs = c.lenientString(pstKey).flatMap(AppleDateText.milliseconds)
            if dateMs == nil { unreadable.append(pstKey.stringValue) }
        }
        var reason: String?
        if present(reasonKey) {
            reason = c.lenientString(reasonKey)
            if reason == nil { unreadable.append(reasonKey.stringValue) }
        }
        return (dateMs, reason, unreadable)
    }
}
