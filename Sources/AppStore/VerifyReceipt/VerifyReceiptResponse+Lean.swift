import ServiceSupport

extension VerifyReceiptResponse {
    /// The reading of `init(from:)` (Foundation's) over the lean parser's object, for answers it can promise to read
    /// the same: throws `LeanReadingDeferred` for every answer Foundation would refuse (no usable `status`, a
    /// valid-status receipt or list of an unusable shape: Foundation's error says where) and for numbers
    /// `LeanFields` does not read. Field by field as `init(from:)`; the transactions by the one
    /// `TransactionEntry.read`.
    init(lean members: [String: JSONValue]) throws(LeanReadingDeferred) {
        let fields = LeanFields(members: members)
        guard let status = try fields.int64("status") else { throw LeanReadingDeferred() }
        let environment = try fields.string("environment")
        var isRetryable = try fields.bool("is_retryable")
        if isRetryable == nil { isRetryable = try fields.bool("is-retryable") }

        let mustDecodeReceipt = status == 0 || status == 21006
        var bundleId: String?
        var inApp = TransactionEntries()
        var isLegacy = false
        switch members["receipt"] {
        case nil, .null?:
            break
        case .object(let receiptMembers)?:
            let receipt = LeanFields(members: receiptMembers)
            if let inAppValue = receiptMembers["in_app"] {
                switch inAppValue {
                case .null:
                    bundleId = try Self.bundleId(receipt)
                case .array(let entries):
                    bundleId = try Self.bundleId(receipt)
                    inApp = TransactionEntries(try Self.read(entries))
                default:
                    // Foundation fails the receipt: the answer is unusable, or read without its receipt.
                    guard !mustDecodeReceipt else { throw LeanReadingDeferred() }
                }
            } else {
                bundleId = try Self.bundleId(receipt)
                if receiptMembers["transaction_id"] != nil {
                    // iOS 6 transaction receipt: the receipt object is itself the one transaction.
                    inApp = TransactionEntries([try TransactionEntry.read(receipt)])
                    isLegacy = true
                }
            }
        case .some:
            guard !mustDecodeReceipt else { throw LeanReadingDeferred() }
        }
        var latest = TransactionEntries(try Self.readOneOrMany(members["latest_receipt_info"]))
        if latest.usable.isEmpty, latest.unusableCount == 0 {
            latest = TransactionEntries(try Self.readOneOrMany(members["latest_expired_receipt_info"]))
        }
        self.init(
            status: status, environment: environment, isRetryable: isRetryable, bundleId: bundleId, inApp: inApp,
            latest: latest, isLegacy: isLegacy)
    }

    private static func bundleId(_ receipt: LeanFields) throws(LeanReadingDeferred) -> String? {
        if let bundleId = try receipt.string("bundle_id") { return bundleId }
        return try receipt.string("bid")
    }

    private static func read(_ entries: [JSONValue]) throws(LeanReadingDeferred) -> [TransactionEntry] {
        var read: [TransactionEntry] = []
        read.reserveCapacity(entries.count)
        for entry in entries { read.append(try TransactionEntry.read(lean: entry)) }
        return read
    }

    /// An array of transactions, or a single one (`decodeOneOrMany`); absent or null is none.
    private static func readOneOrMany(_ value: JSONValue?) throws(LeanReadingDeferred) -> [TransactionEntry] {
        switch value {
        case nil, .null?: []
        case .array(let entries)?: try read(entries)
        case let value?: [try TransactionEntry.read(lean: value)]
        }
    }
}
