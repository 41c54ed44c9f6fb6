import ReceiptModel
import SignedData

/// Verified App Store signed data mapped to the verdict rules' input, so a signed transaction (local, Get
/// Transaction Info, Get Transaction History) is judged by exactly the rules verifyReceipt answers are, and the same
/// purchase gets the same `credit_key` whichever source verified it (`PurchaseIdentity`, the environment being the
/// payload's own). Public for the notification path, whose events carry the same transaction
/// objects.
public enum SignedTransactionMapping {
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
    public struct Unusable: Error, Equatable {
        /// The payload's transaction id, when it has one.
        public var transactionId: String?
        public var problem: String
    }

    /// The transaction the verdict rules see.
    ///
    /// - Throws: `Unusable` when an id, the product or the purchase date is missing. A `revocationDate` or
    ///   `revocationPercentage` that is present but unreadable is named in `unreadableCancellationFields`, a
    ///   `quantity` (a whole number from 1) or `isUpgraded` in `unreadableCreditingFields`; either makes the
    ///   transaction not creditable (fail closed: a refund that cannot be read never passes as none, an unreadable
    ///   quantity never as one).
    public static func transaction(_ payload: JWSTransactionPayload) throws(Unusable) -> AppleTransaction {
        guard let transactionId = payload.transactionId, !transactionId.isEmpty else {
            throw Unusable(transactionId: nil, problem: "a signed transaction without transactionId")
        }
        guard let productId = payload.productId, !productId.isEmpty else {
            throw Unusable(transactionId: transactionId, problem: "transaction \(transactionId) has no productId")
        }
        guard let purchaseDate = payload.purchaseDate else {
            throw Unusable(transactionId: transactionId, problem: "transaction \(transactionId) has no purchaseDate")
        }
        var unreadable: [String] = []
        if case .unreadable = payload.revocationDate { unreadable.append("revocationDate") }
        if case .unreadable = payload.revocationPercentage { unreadable.append("revocationPercentage") }
        var unreadableCrediting: [String] = []
        var quantity = 1
        switch payload.quantity {
        case .absent: break
        case .value(let value) where value >= 1 && value <= Int64(Int32.max): quantity = Int(value)
        case .value, .unreadable: unreadableCrediting.append("quantity")
        }
        if case .unreadable = payload.isUpgraded { unreadableCrediting.append("isUpgraded") }
        let fields = TransactionFields(
            transactionId: transactionId, originalTransactionId: payload.originalTransactionId, productId: productId,
            quantity: quantity, purchaseDateMs: purchaseDate,
            expiresDateMs: payload.expiresDate, cancellationDateMs: payload.revocationDate.value,
            cancellationReason: payload.revocationReason.map { String($0) },
            webOrderLineItemId: payload.webOrderLineItemId, inAppOwnershipType: payload.inAppOwnershipType?.rawValue,
            isTrialPeriod: payload.offerType == 1 && payload.offerDiscountType == "FREE_TRIAL",
            appAccountToken: payload.appAccountToken,
            productType: payload.type.flatMap { ReceiptModel.ProductType(appleType: $0.rawValue) },
            revocationType: payload.revocationType?.rawValue,
            revocationPercentage: payload.revocationPercentage.value.map { Int(clamping: $0) },
            isUpgraded: payload.isUpgraded.value ?? false, price: payload.price, currency: payload.currency,
            transactionReason: payload.transactionReason?.rawValue, offerDiscountType: payload.offerDiscountType,
            offerPeriod: payload.offerPeriod, billingPlanType: payload.billingPlanType,
            commitmentInfo: payload.commitmentInfo, appTransactionId: payload.appTransactionId,
            offerType: payload.offerType, offerIdentifier: payload.offerIdentifier, storefront: payload.storefront,
            storefrontId: payload.storefrontId)
        return AppleTransaction(
            fields, unreadableCancellationFields: unreadable, unreadableCreditingFields: unreadableCrediting)
    }

    /// The verdict rules' input for verified payloads of one app and environment: `named` are the transactions the
    /// proof itself holds (the `in_app` of verifyReceipt), `current` Apple's current view of them (its
    /// `latest_receipt_info`: a refund made after the proof was signed shows there and counts).
    static func receipt(
        environment: AppStoreEnvironment, bundleId: String?, named: [JWSTransactionPayload],
        current: [JWSTransactionPayload] = []
    ) -> AppleReceipt {
        var unusable = 0
        var unusableIds: [String] = []
        func usable(_ payloads: [JWSTransactionPayload]) -> [AppleTransaction] {
            var transactions: [AppleTransaction] = []
            for payload in payloads {
                do throws(Unusable) {
                    transactions.append(try transaction(payload))
                } catch {
                    unusable += 1
                    if let id = error.transactionId { unusableIds.append(id) }
                }
            }
            return transactions
        }
        return AppleReceipt(
            environment: environment, status: 0, bundleId: bundleId, inApp: usable(named),
            latestReceiptInfo: usable(current), unusableTransactionCount: unusable,
            unusableTransactionIds: unusableIds)
    }
}
