/// Everything Apple's data says about refunds and revocations, per transaction id, across `in_app` and
/// `latest_receipt_info` (a refund made after the receipt was issued shows only in `latest_receipt_info`).
///
/// Built once per verdict; holds only the ids that show something, so a receipt without refunds costs one pass over
/// its entries and no allocation.
struct CancellationEvidence {
    private var byId: [String: AppleTransaction] = [:]
    /// Ids with a cancellation field that could not be read, in the order first seen.
    private(set) var unreadableIds: [String] = []
    /// Ids of entries that could not be read at all: whatever they said about a refund is unknown.
    private let unusableIds: Set<String>
    /// The marker `merged(into:)` adds to `unreadableCancellationFields` for such an entry.
    static let unusableEntry = "entry"

    init(_ receipt: AppleReceipt) {
        unusableIds = receipt.unusableTransactionIds.isEmpty ? [] : Set(receipt.unusableTransactionIds)
        for transaction in receipt.inApp where transaction.showsCancellation { add(transaction) }
        for transaction in receipt.latestReceiptInfo where transaction.showsCancellation { add(transaction) }
    }

    private mutating func add(_ transaction: AppleTransaction) {
        let id = transaction.transactionId
        if !transaction.unreadableCancellationFields.isEmpty, !unreadableIds.contains(id) {
            unreadableIds.append(id)
        }
        guard var known = byId[id] else {
            byId[id] = transaction
            return
        }
        Self.merge(transaction, into: &known)
        byId[id] = known
    }

    /// `transaction` with every refund or revocation Apple's data shows for its id (its own fields win).
    func merged(into transaction: AppleTransaction) -> AppleTransaction {
        var result = transaction
        if let other = byId[transaction.transactionId] { Self.merge(other, into: &result) }
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
        for field in other.unreadableCancellationFields where !result.unreadableCancellationFields.contains(field) {
            result.unreadableCancellationFields.append(field)
        }
    }
}
