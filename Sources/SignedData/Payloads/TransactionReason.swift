/// A transaction's `transactionReason`. Unknown values are kept as they are.
public struct TransactionReason: OpenStringEnum {
    public let rawValue: String

    public init(rawValue: String) { self.rawValue = rawValue }

    public static let purchase = TransactionReason(rawValue: "PURCHASE")
    public static let renewal = TransactionReason(rawValue: "RENEWAL")
}
