import AppStore
import Catalog
import ReceiptModel
import SignedData

/// A verified `signedTransactionInfo` as results and events carry transactions: mapped to the money rules' input by
/// the same `SignedTransactionMapping` the Server API backend uses, and judged by `VerdictRules.normalize`, so the
/// event's transaction is the object a result would carry for that purchase (same `credit_key`, `creditable`,
/// catalog `credit` and `product_type`). A refund field that is present but unreadable makes it not creditable.
public enum SignedTransactionNormalizer {
    /// nil when the payload lacks what a transaction needs (`transactionId`, `productId`, `purchaseDate`).
    public static func normalize(
        _ payload: JWSTransactionPayload, environment: AppStoreEnvironment, catalog: ProductCatalog?
    ) -> VerifiedTransaction? {
        guard let transaction = try? SignedTransactionMapping.transaction(payload) else { return nil }
        return VerdictRules.normalize(transaction, environment, catalog: catalog)
    }
}
