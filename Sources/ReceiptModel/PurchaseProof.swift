/// What a submission offers as proof of a purchase: exactly one of the contract's `receipt_data`,
/// `signed_transaction` or `transaction_id`.
public enum PurchaseProof: Sendable, Equatable, Hashable {
    /// A StoreKit 1 app receipt: standard base64, one line (see `ReceiptData.normalize`).
    case receipt(String)
    /// A StoreKit 2 signed transaction (`Transaction.jwsRepresentation`): a compact JWS with an ES256 header
    /// (see `SignedTransactionText.normalize`). Its signature is checked by the verifier, not here.
    case signedTransaction(String)
    /// An Apple transaction id alone; the verifier asks the App Store Server API about it.
    case transactionId(String)

    /// The contract's field name for this kind of proof.
    public var fieldName: String {
        switch self {
        case .receipt: "receipt_data"
        case .signedTransaction: "signed_transaction"
        case .transactionId: "transaction_id"
        }
    }

    /// The proof's text (never log it: a receipt or signed transaction identifies a customer's purchases).
    public var text: String {
        switch self {
        case .receipt(let text), .signedTransaction(let text), .transactionId(let text): text
        }
    }

    /// The contract's three proof fields, in the order the fingerprint and error messages name them.
    public static let fieldNames = ["receipt_data", "signed_transaction", "transaction_id"]
}
