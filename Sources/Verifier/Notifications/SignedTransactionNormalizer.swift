import ReceiptModel
import SignedData

/// A verified `signedTransactionInfo` as results and events carry transactions (`VerifiedTransaction`): ids as
/// strings, dates as epoch milliseconds, the same `credit_key` whichever source verified the purchase.
///
/// Fails closed on refunds: a transaction whose `revocationDate`, `revocationReason`, `revocationType` or
/// `revocationPercentage` is present (even unreadable) is not creditable.
enum SignedTransactionNormalizer {
    /// nil when the payload lacks what a transaction needs (`transactionId`, `productId`, `purchaseDate`).
    static func normalize(_ payload: JWSTransactionPayload, environment: AppStoreEnvironment) -> VerifiedTransaction? {
        guard let transactionId = payload.transactionId, !transactionId.isEmpty, let productId = payload.productId,
            !productId.isEmpty, let purchaseDateMs = payload.purchaseDate
        else { return nil }
        let revoked =
            payload.revocationDate.isPresent || payload.revocationReason != nil || payload.revocationType != nil
            || payload.revocationPercentage.isPresent
        return VerifiedTransaction(
            transactionId: transactionId, originalTransactionId: payload.originalTransactionId, productId: productId,
            quantity: Int(clamping: payload.quantity ?? 1), purchaseDateMs: purchaseDateMs,
            expiresDateMs: payload.expiresDate, cancellationDateMs: payload.revocationDate.value,
            cancellationReason: payload.revocationReason.map { String($0) },
            webOrderLineItemId: payload.webOrderLineItemId, inAppOwnershipType: payload.inAppOwnershipType?.rawValue,
            isTrialPeriod: payload.offerDiscountType == "FREE_TRIAL",
            appAccountToken: payload.appAccountToken?.lowercased(),
            productType: payload.type.flatMap { ReceiptModel.ProductType(appleType: $0.rawValue) },
            revocationType: payload.revocationType?.rawValue,
            revocationPercentage: payload.revocationPercentage.value.map { Int(clamping: $0) }, creditable: !revoked,
            environment: environment)
    }
}
