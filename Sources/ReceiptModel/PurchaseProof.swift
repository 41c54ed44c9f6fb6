/// What a submission offers as proof: exactly one of the contract's `receipt_data`, `signed_transaction`,
/// `transaction_id` or `signed_app_transaction` (the app's own purchase: ownership of the app, not of an in-app
/// product).
public enum PurchaseProof: Sendable, Equatable, Hashable {
    /// A StoreKit 1 app receipt: standard base64, one line (see `ReceiptData.normalize`).
    case receipt(String)
    /// A StoreKit 2 signed transaction (`Transaction.jwsRepresentation`): a compact JWS with an ES256 header
    /// (see `SignedTransactionText.normalize`). Its signature is checked by the verifier, not here.
    case signedTransaction(String)
    /// An Apple transaction id alone; the verifier asks the App Store Server API about it.
    case transactionId(String)
    /// A StoreKit 2 app transaction (`AppTransaction.shared`'s `jwsRepresentation`): a compact JWS with an ES256
    /// header, like a signed transaction (see `SignedTransactionText.normalize`). It proves that the customer owns
    /// the app (`originalApplicationVersion`, `appTransactionId`), never an in-app purchase: a result credits nothing.
    case signedAppTransaction(String)

    /// The contract's field name for this kind of proof.
    public var fieldName: String {
        switch self {
        case .receipt: "receipt_data"
        case .signedTransaction: "signed_transaction"
        case .transactionId: "transaction_id"
        case .signedAppTransaction: "signed_app_transaction"
        }
    }

    /// The proof's text (never log it: a receipt or signed transaction identifies a customer's purchases).
    public var text: String {
        switch self {
        case .receipt(let text), .signedTransaction(let text), .transactionId(let text),
            .signedAppTransaction(let text):
            text
        }
    }

    /// The contract's proof fields, in the order error messages name them.
    public static let fieldNames = ["receipt_data", "signed_transaction", "transaction_id", "signed_app_transaction"]
}
