import AppStore
import ReceiptModel
import SignedData

/// A verified `signedTransactionInfo` as results and events carry transactions: mapped to the money rules' input
/// (`AppleTransaction`) and judged by `VerdictRules.normalize`, so the event's transaction is the same object a
/// result would carry for that purchase (same `credit_key`, `creditable`, catalog `credit` and `product_type`).
///
/// Fails closed on refunds: `revocationDate`, `revocationReason`, `revocationType` and `revocationPercentage` travel
/// as Apple wrote them, and one that is present but unreadable is named in `unreadableCancellationFields`, which the
/// money rules never let pass as "not refunded".
enum SignedTransactionNormalizer {
    /// nil when the payload lacks what a transaction needs (`transactionId`, `productId`, `purchaseDate`).
    static func normalize(
        _ payload: JWSTransactionPayload, environment: AppStoreEnvironment, catalog: ProductCatalog?
    ) -> VerifiedTransaction? {
        guard let transaction = appleTransaction(payload) else { return nil }
        return VerdictRules.normalize(transaction, environment, catalog: catalog)
    }

    /// The money rules' view of a signed transaction.
    static func appleTransaction(_ payload: JWSTransactionPayload) -> AppleTransaction? {
        guard let transactionId = payload.transactionId, !transactionId.isEmpty, let productId = payload.productId,
            !productId.isEmpty, let purchaseDateMs = payload.purchaseDate
        else { return nil }
        var unreadable: [String] = []
        if payload.revocationDate == .unreadable { unreadable.append("revocationDate") }
        if payload.revocationPercentage == .unreadable { unreadable.append("revocationPercentage") }
        return AppleTransaction(
            transactionId: transactionId, originalTransactionId: payload.originalTransactionId, productId: productId,
            quantity: Int(clamping: payload.quantity ?? 1), purchaseDateMs: purchaseDateMs,
            expiresDateMs: payload.expiresDate, cancellationDateMs: payload.revocationDate.value,
            cancellationReason: payload.revocationReason.map { String($0) },
            webOrderLineItemId: payload.webOrderLineItemId, inAppOwnershipType: payload.inAppOwnershipType?.rawValue,
            isTrialPeriod: payload.offerDiscountType == "FREE_TRIAL", appAccountToken: payload.appAccountToken,
            productType: payload.type.flatMap { ReceiptModel.ProductType(appleType: $0.rawValue) },
            revocationType: payload.revocationType?.rawValue,
            revocationPercentage: payload.revocationPercentage.value.map { Int(clamping: $0) },
            unreadableCancellationFields: unreadable)
    }
}
