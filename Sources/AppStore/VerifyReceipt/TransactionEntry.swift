import ServiceSupport

/// One entry of a verifyReceipt transaction array (`in_app`, `latest_receipt_info`): the transaction, or an entry
/// that cannot be used (no `transaction_id`, `product_id` or `purchase_date_ms`, an empty id, not an object).
///
/// Decoding never throws, so one bad entry does not make the whole answer unusable: the verdict rules skip it,
/// unless it is the very transaction the submission expects (then the receipt is `invalid_receipt`).
enum TransactionEntry: Decodable {
    case usable(AppleTransaction)
    /// The entry's `transaction_id` when it has a non-empty one.
    case unusable(transactionId: String?)

    /// Foundation's reading (the reference, and the fallback of `VerifyReceiptResponse.decode`).
    init(from decoder: any Decoder) {
        guard let container = try? decoder.container(keyedBy: AnyCodingKey.self) else {
            self = .unusable(transactionId: nil)
            return
        }
        self = Self.read(ContainerFields(container: container))
    }

    /// The lean parser's reading of the same entry: an object's fields, anything else unusable.
    static func read(lean value: JSONValue) throws(LeanReadingDeferred) -> TransactionEntry {
        guard case .object(let members) = value else { return .unusable(transactionId: nil) }
        return try read(LeanFields(members: members))
    }
}

/// The entries of one or more transaction arrays, split into usable transactions and what was skipped.
struct TransactionEntries {
    var usable: [AppleTransaction] = []
    var unusableCount = 0
    var unusableIds: [String] = []

    init(_ entries: [TransactionEntry] = []) {
        append(entries)
    }

    mutating func append(_ entries: [TransactionEntry]) {
        for entry in entries {
            switch entry {
            case .usable(let transaction):
                usable.append(transaction)
            case .unusable(let transactionId):
                unusableCount += 1
                if let transactionId { unusableIds.append(transactionId) }
            }
        }
    }
}
