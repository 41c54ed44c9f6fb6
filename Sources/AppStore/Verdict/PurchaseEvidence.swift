import ReceiptModel

/// Everything Apple's data says about each purchase, across `in_app` and `latest_receipt_info` (a refund or an
/// upgrade made after the receipt was issued shows only in `latest_receipt_info`), matched to the purchase
/// (`credit_key`), not only to one transaction id: a refunded original makes its restores non-creditable too, and a
/// refund or upgrade of a subscription period seen on one device counts on every device.
///
/// What is merged: refund and revocation fields, cancellation and crediting fields that could not be read, and
/// `is_upgraded`, by purchase; `app_account_token`, by transaction id (verifyReceipt reports it in
/// `latest_receipt_info` only). Built once per verdict; holds only purchases that show something, so a receipt
/// without refunds, upgrades or tokens costs one pass over its entries and no allocation.
struct PurchaseEvidence {
    private var byPurchase: [String: AppleTransaction] = [:]
    private var tokenById: [String: String] = [:]
    /// Ids with a cancellation field that could not be read, in the order first seen.
    private(set) var unreadableIds: [String] = []
    /// Ids with a crediting field (`quantity`, `is_upgraded`) that could not be read, in the order first seen.
    private(set) var unreadableCreditingIds: [String] = []
    /// Ids of entries that could not be read at all: whatever they said about a refund is unknown.
    private let unusableIds: Set<String>
    private let environment: AppStoreEnvironment
    /// The marker `merged(into:)` adds to `unreadableCancellationFields` for such an entry.
    static let unusableEntry = "entry"

    init(_ receipt: AppleReceipt) {
        environment = receipt.environment
        unusableIds = receipt.unusableTransactionIds.isEmpty ? [] : Set(receipt.unusableTransactionIds)
        for transaction in receipt.inApp { add(transaction) }
        for transaction in receipt.latestReceiptInfo { add(transaction) }
    }

    private mutating func add(_ transaction: AppleTransaction) {
        let id = transaction.transactionId
        if let token = transaction.appAccountToken, !token.isEmpty, tokenById[id] == nil { tokenById[id] = token }
        guard transaction.showsCancellation || transaction.isUpgraded
            || !transaction.unreadableCreditingFields.isEmpty
        else { return }
        if !transaction.unreadableCancellationFields.isEmpty, !unreadableIds.contains(id) { unreadableIds.append(id) }
        if !transaction.unreadableCreditingFields.isEmpty, !unreadableCreditingIds.contains(id) {
            unreadableCreditingIds.append(id)
        }
        let purchase = transaction.fields.creditKey(environment)
        guard var known = byPurchase[purchase] else {
            byPurchase[purchase] = transaction
            return
        }
        Self.merge(transaction, into: &known)
        byPurchase[purchase] = known
    }

    /// `transaction` with every refund, revocation, upgrade and unreadable field Apple's data shows for its purchase,
    /// and the token Apple's data shows for its id (its own fields win).
    func merged(into transaction: AppleTransaction) -> AppleTransaction {
        var result = transaction
        // The common case, no purchase shows anything, builds no key.
        if !byPurchase.isEmpty, let other = byPurchase[transaction.fields.creditKey(environment)] {
            Self.merge(other, into: &result)
        }
        if result.appAccountToken?.isEmpty ?? true, let token = tokenById[transaction.transactionId] {
            result.appAccountToken = token
        }
        if unusableIds.contains(transaction.transactionId),
            !result.unreadableCancellationFields.contains(Self.unusableEntry)
        {
            result.unreadableCancellationFields.append(Self.unusableEntry)
        }
        return result
    }

    private static func merge(_ other: AppleTransaction, into result: inout AppleTransaction) {
        result.cancellationDateMs = result.cancellationDateMs ?? other.cancellationDateMs
        result.cancellationReason = result.cancellationReason ?? other.cancellationReason
        result.revocationType = result.revocationType ?? other.revocationType
        result.revocationPercentage = result.revocationPercentage ?? other.revocationPercentage
        result.isUpgraded = result.isUpgraded || other.isUpgraded
        for field in other.unreadableCancellationFields where !result.unreadableCancellationFields.contains(field) {
            result.unreadableCancellationFields.append(field)
        }
        for field in other.unreadableCreditingFields where !result.unreadableCreditingFields.contains(field) {
            result.unreadableCreditingFields.append(field)
        }
    }
}
