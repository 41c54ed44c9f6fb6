import ReceiptModel
import SignedData

/// Verified App Store signed data mapped to the verdict rules' input, so a signed transaction (local, Get
/// Transaction Info, Get Transaction History) is judged by exactly the rules verifyReceipt answers are, and the same
/// purchase gets the same `credit_key` whichever source verified it (`apple:<environment>:<transactionId>`, the
/// environment being the payload's own).
enum SignedTransactionMapping {
    /// The environment a payload names, when it is one the verdict rules may judge.
    enum Environment: Equatable {
        case known(AppStoreEnvironment)
        /// `Xcode` or `LocalTesting`: StoreKit testing data, never accepted.
        case testing(String)
        /// Absent or a value Apple does not document.
        case unknown(String?)
    }

    static func environment(_ environment: SignedEnvironment?) -> Environment {
        switch environment {
        case .production?: .known(.production)
        case .sandbox?: .known(.sandbox)
        case .xcode?, .localTesting?: .testing(environment?.rawValue ?? "")
        default: .unknown(environment?.rawValue)
        }
    }

    /// Why a verified payload cannot be judged as a transaction.
    struct Unusable: Error, Equatable {
        /// The payload's transaction id, when it has one.
        var transactionId: String?
        var problem: String
    }

    /// The transaction the verdict rules see.
    ///
    /// - Throws: `Unusable` when an id, the product or the purchase date is missing, or when `revocationDate` is
    ///   present but unreadable (fail closed: a refund that cannot be read must not pass as "not refunded").
    static func transaction(_ payload: JWSTransactionPayload) throws(Unusable) -> AppleTransaction {
        guard let transactionId = payload.transactionId, !transactionId.isEmpty else {
            throw Unusable(transactionId: nil, problem: "a signed transaction without transactionId")
        }
        guard let productId = payload.productId, !productId.isEmpty else {
            throw Unusable(transactionId: transactionId, problem: "transaction \(transactionId) has no productId")
        }
        guard let purchaseDate = payload.purchaseDate else {
            throw Unusable(transactionId: transactionId, problem: "transaction \(transactionId) has no purchaseDate")
        }
        let revocationDate: Int64?
        switch payload.revocationDate {
        case .absent: revocationDate = nil
        case .value(let value): revocationDate = value
        case .unreadable:
            throw Unusable(
                transactionId: transactionId,
                problem: "transaction \(transactionId) carries a revocationDate that cannot be read")
        }
        return AppleTransaction(
            transactionId: transactionId, originalTransactionId: payload.originalTransactionId, productId: productId,
            quantity: payload.quantity.map { Int(clamping: $0) } ?? 1, purchaseDateMs: purchaseDate,
            expiresDateMs: payload.expiresDate, cancellationDateMs: revocationDate,
            cancellationReason: revocationDate == nil ? nil : payload.revocationReason.map { String($0) },
            webOrderLineItemId: payload.webOrderLineItemId, inAppOwnershipType: payload.inAppOwnershipType?.rawValue,
            isTrialPeriod: payload.offerType == 1 && payload.offerDiscountType == "FREE_TRIAL")
    }

    /// The verdict rules' input for verified payloads of one app and environment.
    static func receipt(
        environment: AppStoreEnvironment, bundleId: String?, payloads: [JWSTransactionPayload]
    ) -> AppleReceipt {
        var transactions: [AppleTransaction] = []
        var unusableIds: [String] = []
        var unusable = 0
        for payload in payloads {
            do {
                transactions.append(try transaction(payload))
            } catch {
                unusable += 1
                if let id = error.transactionId { unusableIds.append(id) }
            }
        }
        return AppleReceipt(
            environment: environment, status: 0, bundleId: bundleId, inApp: transactions,
            unusableTransactionCount: unusable, unusableTransactionIds: unusableIds)
    }
}
