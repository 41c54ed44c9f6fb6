import ReceiptModel

extension TransactionEntry {
    /// One verifyReceipt transaction object by its field names (the flat iOS 6 receipt uses the same ones, plus `bid`
    /// for the bundle id), over either tree (`VerifyReceiptFields`).
    ///
    /// Unusable when `transaction_id`, `product_id` or `purchase_date_ms` is missing or an id is empty. Cancellation
    /// fields never make it unusable: one that is present (not null) but cannot be read is recorded in
    /// `unreadableCancellationFields` instead, so the refund it may show is never lost.
    static func read<Fields: VerifyReceiptFields>(_ fields: Fields) throws(Fields.Failure) -> TransactionEntry {
        guard let transactionId = try fields.string("transaction_id"), !transactionId.isEmpty,
            let productId = try fields.string("product_id"), !productId.isEmpty,
            let purchaseDateMs = try fields.int64("purchase_date_ms")
        else {
            return .unusable(transactionId: try fields.string("transaction_id").flatMap { $0.isEmpty ? nil : $0 })
        }
        var expiresDateMs = try fields.int64("expires_date_ms")
        if expiresDateMs == nil { expiresDateMs = try fields.int64("expires_date") }
        let cancellation = try readCancellation(fields)
        let crediting = try readCrediting(fields)
        return .usable(
            AppleTransaction(
                TransactionFields(
                    transactionId: transactionId,
                    originalTransactionId: try fields.string("original_transaction_id"),
                    productId: productId,
                    quantity: crediting.quantity,
                    purchaseDateMs: purchaseDateMs,
                    expiresDateMs: expiresDateMs,
                    cancellationDateMs: cancellation.dateMs,
                    cancellationReason: cancellation.reason,
                    webOrderLineItemId: try fields.string("web_order_line_item_id"),
                    inAppOwnershipType: try fields.string("in_app_ownership_type"),
                    isTrialPeriod: try fields.bool("is_trial_period") ?? false,
                    appAccountToken: try fields.string("app_account_token").flatMap { $0.isEmpty ? nil : $0 },
                    isUpgraded: crediting.isUpgraded),
                unreadableCancellationFields: cancellation.unreadable,
                unreadableCreditingFields: crediting.unreadable))
    }

    /// The fields that say how much to credit, or whether at all: `quantity` (a whole number from 1; absent means 1)
    /// and `is_upgraded` (`"true"` on a period replaced by an upgrade; absent means not). One present but unreadable
    /// (`"five"`, `0`, `{}`) is named in `unreadable`: the transaction is then never creditable.
    private static func readCrediting<Fields: VerifyReceiptFields>(
        _ fields: Fields
    ) throws(Fields.Failure) -> (quantity: Int, isUpgraded: Bool, unreadable: [String]) {
        var unreadable: [String] = []
        var quantity = 1
        if fields.isPresent("quantity") {
            if let value = try fields.int64("quantity"), value >= 1, value <= Int64(Int32.max) {
                quantity = Int(value)
            } else {
                unreadable.append("quantity")
            }
        }
        var isUpgraded = false
        if fields.isPresent("is_upgraded") {
            if let value = try fields.bool("is_upgraded") {
                isUpgraded = value
            } else {
                unreadable.append("is_upgraded")
            }
        }
        return (quantity, isUpgraded, unreadable)
    }

    /// The cancellation fields Apple writes on a refunded purchase: `cancellation_date_ms` (milliseconds),
    /// `cancellation_date` (`2019-10-19 09:30:48 Etc/GMT`), `cancellation_date_pst` (the same in Pacific time, read
    /// only when neither of the others gives a date) and `cancellation_reason`. Any of them present shows a refund;
    /// JSON null counts as absent.
    private static func readCancellation<Fields: VerifyReceiptFields>(
        _ fields: Fields
    ) throws(Fields.Failure) -> (dateMs: Int64?, reason: String?, unreadable: [String]) {
        let msName = "cancellation_date_ms"
        let textName = "cancellation_date"
        let pstName = "cancellation_date_pst"
        let reasonName = "cancellation_reason"
        // The common case, a purchase never refunded, costs four lookups.
        guard fields.isPresent(msName) || fields.isPresent(textName) || fields.isPresent(pstName)
            || fields.isPresent(reasonName)
        else {
            return (nil, nil, [])
        }
        var unreadable: [String] = []
        var dateMs: Int64?
        if fields.isPresent(msName) {
            dateMs = try fields.int64(msName)
            if dateMs == nil { unreadable.append(msName) }
        }
        if fields.isPresent(textName) {
            let parsed = try fields.string(textName).flatMap(AppleDateText.milliseconds)
            if parsed == nil { unreadable.append(textName) }
            dateMs = dateMs ?? parsed
        }
        if dateMs == nil, fields.isPresent(pstName) {
            dateMs = try fields.string(pstName).flatMap(AppleDateText.milliseconds)
            if dateMs == nil { unreadable.append(pstName) }
        }
        var reason: String?
        if fields.isPresent(reasonName) {
            reason = try fields.string(reasonName)
            if reason == nil { unreadable.append(reasonName) }
        }
        return (dateMs, reason, unreadable)
    }
}
